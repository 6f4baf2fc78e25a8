"""`paper-assistant doctor`: checks of the index and the LLM endpoint, each a (passed, message) line.

The endpoint checks are what an answer needs: the server lists the configured model
(``GET /models``), streams a short reply to a request shaped like a real answer (the answer prompt,
one numbered abstract and a question: a base model asked only "Say OK." may end at once while real
questions stream fine), non-empty and ending with a finish reason, and keeps the system message (a
chat template without a system role drops it, and with it every rule of the answer prompt). The
model list uses the timeout with no retries, the probe the first-token and between-pieces timeouts,
so a dead endpoint is reported in at most two waits.
"""

from __future__ import annotations

from collections.abc import Iterator

from assistant.settings import LLMSettings, Settings
from assistant.text import shown_part


def run_doctor(settings: Settings) -> Iterator[tuple[bool, str]]:
    """Yield ``(ok, one-line message)`` for the index (with its health: :func:`_health_problems`),
    then (if configured) the LLM endpoint; the configured secrets masked in every line (a key pasted into a host
    setting was printed, a hostile round)."""
    from assistant.text import mask_secrets

    for ok, line in _doctor_lines(settings):
        yield ok, mask_secrets(line)


def _interrupted_write(interrupted, removing: bool, orphans: bool) -> list[str]:
    """The line for a write that was killed (``interrupted``: the store's mark, the command it named or True;
    ``orphans``: chunks of no paper record), naming the command that finishes it."""
    if removing:
        # An ingest of those files would bring their removed papers back: finish the remove instead.
        return [f"`paper-assistant {interrupted}` was interrupted before it finished: run it again to finish removing "
                "those papers"]
    if interrupted == "ingest --replace":
        return ["`paper-assistant ingest --replace` was interrupted before it finished: run it again on the same "
                "files (it resumes where it stopped)"]
    if orphans or interrupted:
        return ["an ingest was interrupted before it finished: run it again (it resumes where it stopped)"]
    return []


def _doctor_lines(settings: Settings) -> Iterator[tuple[bool, str]]:
    ok, line = _check_index(settings)
    if ok:
        try:
            problems = _health_problems(settings)
        except Exception as exc:  # noqa: BLE001 - a damaged page met while reading every record: a FAIL line, not an
            problems = [_index_failure(exc, settings)]  # error (a tenth hostile round), with the index's own path
        ok, line = not problems, "; ".join([line, *problems])
    yield ok, line
    cfg = settings.llm
    if not cfg.configured:
        yield True, ("LLM: none configured; answers are extractive (set OPENAI_BASE_URL or OPENAI_API_KEY, "
                     "and OPENAI_MODEL, to use one)")
        return
    yield from _check_llm(cfg, settings)


def _check_index(settings: Settings) -> tuple[bool, str]:
    from assistant.answer import get_index
    from vectorstore.integrity import vector_files_problem
    from vectorstore.papers import counted

    repaired: list[str] = []
    if not settings.store.host:
        # Every record and link list of the HNSW files, from the files alone, before Chroma loads them:
        # damage there crashes hnswlib (a segfault, no word said); opening reads a sample of the link lists.
        try:
            damaged = vector_files_problem(settings.index, full=True)
        except OSError:  # unreadable files: opening says how
            damaged = None
        if damaged:  # opening finds a sample's damage; the full look's is rebuilt the same way
            from vectorstore.store import DamagedVectorsError

            try:
                _rebuild_damaged(settings, DamagedVectorsError(damaged, settings.index), repaired)
            except Exception as exc:
                return False, f"index: {_index_failure(exc, settings)}"
    try:
        idx = get_index(settings, repair=repaired.append)
        papers, chunks = idx.store.counts()
        if not settings.store.host and papers and not repaired:
            try:
                idx.store.check_search()
            except Exception as exc:  # noqa: BLE001 - hnswlib's own failure on damage no file check sees (zeroed
                # vectors and links): doctor said "delete the index" while the database held every paper
                from vectorstore.store import DamagedVectorsError

                why = f"its vectors cannot be searched ({type(exc).__name__}: {shown_part(str(exc), 80)})"
                _rebuild_damaged(settings, DamagedVectorsError(why, settings.index), repaired)
                idx = get_index(settings, repair=repaired.append)
                papers, chunks = idx.store.counts()
    except Exception as exc:
        return False, f"index: {_index_failure(exc, settings)}"
    where = f"{settings.store.host}:{settings.store.port}" if settings.store.host else str(settings.index)
    from assistant.answer import writer_of

    writer = writer_of(idx)
    if papers == 0:
        if writer:  # a first ingest loading its model or embedding its first batch: nothing is wrong
            return True, f"index at {where}: an ingest is running ({writer}); no papers are written yet"
        from assistant.answer import EMPTY_INDEX

        return False, f"index at {where}: {EMPTY_INDEX}"
    line = (f"index at {where}: {counted(papers, 'paper')} in {counted(chunks, 'chunk')} (embedding model "
            f"{idx.encoder.model_name}, backend {idx.encoder.backend})")
    if repaired:
        line = f"{repaired[-1]}; {line}"
    if writer:
        line += f"; an ingest is running ({writer}): answers use the papers written so far"
    return True, line


def _rebuild_damaged(settings: Settings, exc: BaseException, told: list[str]) -> None:
    """Rebuild the index of ``settings`` whose vector files ``exc`` found damaged (as opening it with a
    ``repair`` callback would), appending what was done to ``told``."""
    from assistant.answer import forget_indexes, rebuild_index

    forget_indexes()
    rebuild_index(settings, str(exc), told.append)


def _index_failure(exc: BaseException, settings: Settings) -> str:
    """What a failure to open the index means and how to fix it: a full disk (free space: nothing is
    lost), Chroma's own error (its files damaged: rebuild), else the error itself."""
    import shutil

    from vectorstore.store import DISK_FULL_BELOW, StoreError

    first = shown_part((str(exc).splitlines() or [type(exc).__name__])[0], 200)
    if not settings.store.host:
        try:
            free = shutil.disk_usage(settings.index if settings.index.exists() else settings.index.parent).free
        except OSError:
            free = None
        if free is not None and free < DISK_FULL_BELOW:
            return (f"the disk holding {settings.index} is full ({free / 2**20:.0f} MB free): free some space, then "
                    f"run the command again; nothing is lost ({first})")
    if isinstance(exc, StoreError):  # our own line names its remedy at its end: never cut
        return str(exc).splitlines()[0]
    if isinstance(exc, PermissionError):
        from assistant.faces.errors import permission_line

        return permission_line(exc)
    if type(exc).__module__.split(".")[0] in ("chromadb", "pyo3_runtime") or type(exc).__name__ == "PanicException":
        return (f"Chroma cannot read the index ({first}): its files are damaged; delete {settings.index} and run "
                "`paper-assistant ingest` again (the paper files are not touched)")
    return first


def _health_problems(settings: Settings) -> list[str]:
    """What a question would silently miss or fail on, each naming its fix: papers without chunks or with
    chunks of another version, chunks without a paper or an unclosed write (an interrupted ingest), a vector
    index that cannot be searched, a damaged keyword cache (the next question rebuilds it); and a writer's lock
    that is no file (questions work, every ingest stops)."""
    from assistant.answer import get_index, writer_of
    from vectorstore.store import LexicalIndex, cannot_write, not_a_file
    from vectorstore.integrity import foreign_folders, lock_file_problem, own_folders_missing, rebuild
    from vectorstore.papers import counted

    idx = get_index(settings)
    store = idx.store
    problems = [line for line in [lock_file_problem(idx.directory)] if line]
    if writer_of(idx):
        return problems  # an ingest is writing: papers without chunks yet are its work in progress
    stored = store.paper_hashes()
    chunked = store.chunk_paper_hashes()
    bare = sorted(pid for pid in stored if pid not in chunked)
    interrupted = store.write_interrupted()
    removing = isinstance(interrupted, str) and interrupted.startswith("remove ")
    if bare and not removing:  # a killed remove leaves papers without chunks: finishing it is the one remedy
        files = sorted({stored[pid][1] for pid in bare})
        # A killed `ingest --replace` is finished by the same command: a plain ingest refuses a file that shrank.
        command = "ingest --replace" if interrupted == "ingest --replace" else "ingest"
        problems.append(f"{counted(len(bare), 'paper')} ({', '.join(bare[:3])}{'…' if len(bare) > 3 else ''}) "
                        f"{'has' if len(bare) == 1 else 'have'} no chunks, so no question finds "
                        f"{'it' if len(bare) == 1 else 'them'}: run `paper-assistant {command}` on {', '.join(files)} "
                        "again to restore them")
    # Chunks written for another version of a paper than its record (an ingest killed between the two;
    # another run then closed the write): questions find text the paper no longer has, or the old text twice.
    mixed = sorted(pid for pid, (h, _) in stored.items() if pid in chunked and not chunked[pid] <= {h, ""})
    if mixed:
        files = sorted({stored[pid][1] for pid in mixed})
        problems.append(f"{counted(len(mixed), 'paper')} ({', '.join(mixed[:3])}{'…' if len(mixed) > 3 else ''}) "
                        f"{'has' if len(mixed) == 1 else 'have'} chunks of another version of the text than the "
                        "paper record (an ingest was interrupted), so questions may find text no longer in the file: "
                        f"run `paper-assistant ingest` on {', '.join(files)} again to repair them")
    root = idx.directory / "chroma"
    # Every vector and link of the HNSW files was read before Chroma opened them (_check_index).
    foreign = foreign_folders(root) if root.is_dir() else []
    if foreign and not own_folders_missing(root, foreign):  # the index has all its own: these are stray copies
        problems.append(f"{counted(len(foreign), 'vector folder')} in {root} ({', '.join(foreign[:2])}"
                        f"{'…' if len(foreign) > 2 else ''}) belong to no collection of its database and are not used "
                        f"(copies?): remove {'it' if len(foreign) == 1 else 'them'} to free the space (the index "
                        "and its papers are sound)")
    elif foreign:
        problems.append(f"{counted(len(foreign), 'vector folder')} in {idx.directory / 'chroma'} "
                        f"({', '.join(foreign[:2])}{'…' if len(foreign) > 2 else ''}) belong to no collection of its "
                        f"database: if the papers `paper-assistant doctor` counts are all yours, they are "
                        f"stray copies: remove them; if papers are missing, chroma.sqlite3 came from another index: "
                        f"{rebuild(idx.directory)}")
    for cache in sorted(idx.directory.glob("dense-*")):
        odd = not_a_file(cache)
        if odd:  # read as it is, it exhausted memory (a link to /dev/zero) or blocked (a FIFO)
            what = "is a file, not a folder" if odd == "." else f"holds {odd}, which is not a plain file"
            problems.append(f"the exact-search cache {cache} {what}: the next question rebuilds it from the index "
                            "(nothing is lost)")
    keywords, unwritable = LexicalIndex.inspect(idx.lexical_dir)[1], cannot_write(idx.lexical_dir)
    if unwritable:  # nothing can rebuild it on disk: every process rebuilds it in memory
        problems.append(f"the keyword index cache {idx.lexical_dir} cannot be written by this user ({unwritable}): "
                        f"every new process rebuilds it in memory first; give this user write access (e.g. "
                        f"`chmod -R u+rwX {idx.directory}`)")
    elif keywords:  # its stamp may still match: left alone, it hid papers from keyword search
        problems.append(f"the keyword index cache {idx.lexical_dir} is damaged ({keywords}): the next question or "
                        "ingest rebuilds it from the index (nothing is lost)")
    problems += _interrupted_write(interrupted, removing, bool(set(chunked) - set(stored)))
    try:
        store.check_search()
    except Exception as exc:  # noqa: BLE001 - whatever Chroma raises on damaged HNSW files
        problems.append(f"the vector index cannot be searched ({type(exc).__name__}: {shown_part(str(exc), 120)}): its files "
                        f"are damaged; delete {settings.index} and run `paper-assistant ingest` again (the paper "
                        "files are not touched)")
    return problems


PROBE_ABSTRACT = ("We propose SparseRoute, a mixture-of-experts layer that routes each token to two of 64 experts. "
                  "On language modelling it matches a dense model of the same quality at 40% of the compute.")
PROBE_QUESTION = "Which method routes each token to two experts?"
PROBE_TOKENS = 16
"""Reply budget of the probe: enough for a first sentence, little enough to stay quick on a CPU server."""


def _model_list_failure(exc: Exception, cfg: LLMSettings, where: str) -> str:
    """The line for a model list that failed: cut at the byte budget (no answer "past the reply budget"), not
    whole within the timeout (``TIMEOUT``, not the first-token one), else the endpoint's failure."""
    from assistant.answer import LLMReplyOverBudget, explain_llm_error, over_budget

    cut = over_budget(exc)
    if isinstance(cut, LLMReplyOverBudget):
        return (f"LLM endpoint {where} sent a model list over {cut.limit:,} {cut.unit}: it was cut unread (an endless "
                "or broken /models reply)")
    if isinstance(exc, TimeoutError):
        return f"LLM endpoint {where} sent no whole model list within {cfg.timeout:g} s (the timeout, PAPER_ASSISTANT_LLM__TIMEOUT)"
    return explain_llm_error(exc, cfg)


def _check_llm(cfg: LLMSettings, settings: Settings) -> Iterator[tuple[bool, str]]:
    """The model list, one short streamed answer, then whether the system message is kept; stops
    after a failure that the next check would repeat."""
    import time
    import openai

    from assistant.answer import (LLMReplyOverBudget, LLMStreamIncomplete, OpenAIChat, answer_prompt, as_data,
                                  call_within, endpoint_client, explain_llm_error, fold_system, system_role_kept)
    from assistant.text import redact

    where = redact(cfg.base_url or "the OpenAI API", cfg)  # no password or query key of the URL shown

    try:
        client = endpoint_client(cfg, cfg.timeout)  # the model list read within the byte budget (endless: 22 GB)
        names = call_within(cfg.timeout, lambda: [m.id for m in client.models.list()])  # and the timeout, in all
    except openai.NotFoundError:
        yield True, f"LLM endpoint {where} does not list models (404); trying the model directly"
    except ValueError as exc:  # a key no HTTP header can carry, raised before any request
        yield False, f"LLM endpoint {where}: {exc}"
        return
    except Exception as exc:
        yield False, _model_list_failure(exc, cfg, where)
        return
    else:
        if cfg.model in names:
            yield True, f"LLM endpoint {where}: {len(names)} models listed, including {cfg.model!r}"
        else:
            shown = redact(", ".join(repr(n) for n in names[:5]), cfg) + (", …" if len(names) > 5 else "")
            yield False, f"LLM endpoint {where} does not list model {cfg.model!r} (it lists: {shown or 'none'})"
    # Streamed, as answers are, with the answer prompt: a server whose streaming is broken fails here,
    # not mid-answer. The reply is short by design, so a cut at its budget ("length") is fine.
    text, first = "", None
    context = f"[1] SparseRoute (id: probe#1)\n<<<\n{as_data(PROBE_ABSTRACT)}\n>>>"
    messages = answer_prompt(settings.prompts_dir).format_messages(context=context, question=PROBE_QUESTION)
    model = OpenAIChat(cfg.model_copy(update={"max_tokens": PROBE_TOKENS, "max_retries": 0}))
    start = time.monotonic()
    try:
        for piece in model.stream(messages):
            if first is None:
                first = time.monotonic() - start
            text += piece
    except LLMStreamIncomplete as exc:
        if exc.finish_reason is None:
            yield False, (f"LLM model {cfg.model!r} at {where} ended its stream without a finish reason: every "
                          f"answer would be marked incomplete")
            return
        if isinstance(exc, LLMReplyOverBudget) and not text.strip():  # cut at the byte budget before any text
            yield False, explain_llm_error(exc, cfg)
            return
    except Exception as exc:
        yield False, explain_llm_error(exc, cfg)
        return
    if not text.strip():
        yield False, f"LLM model {cfg.model!r} at {where} streamed an empty reply: answers would fall back to extractive"
        return
    shown = " ".join(text.split())
    yield True, (f"LLM model {cfg.model!r} answered: {shown_part(shown, 40)!r} (streamed; first piece after {first:.1f} s, "
                 f"first-token timeout {cfg.first_token_timeout:g} s)")
    if not cfg.base_url:  # OpenAI's API keeps system messages
        return
    try:
        kept = system_role_kept(cfg)
    except Exception as exc:
        yield False, explain_llm_error(exc, cfg)
        return
    if kept is None:
        yield True, (f"LLM model {cfg.model!r}: cannot tell whether its chat template keeps a system message (no "
                     f"token counts); the system prompt goes as {'a user message' if fold_system(cfg) else 'a system message'}")
    elif kept:
        yield True, f"LLM model {cfg.model!r}: its chat template keeps the system message"
    elif cfg.system_role == "system":
        yield False, (f"LLM model {cfg.model!r} at {where} drops the system message (its chat template has no system "
                      f"role), losing the answer rules: set PAPER_ASSISTANT_LLM__SYSTEM_ROLE=user (or auto)")
    else:
        yield True, (f"LLM model {cfg.model!r}: its chat template drops system messages; the system prompt is folded "
                     f"into the user message (system_role={cfg.system_role})")
