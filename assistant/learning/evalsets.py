"""Question files, and the separate indexes the eval and training build.

A question file is one JSON object a line: ``{qid, kind, question, gold, evidence?, …}``. ``--corpus``
(and ``--distractors``) name papers held in an index of their own, built once beside the configured
index and reused (see :func:`corpus_settings`).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

from assistant.question import MAX_QUESTION_CHARS
from assistant.settings import Settings
from vectorstore.jsonl import iter_jsonl
from vectorstore.papers import CorpusError, open_regular

MAX_QUESTION_BYTES = 32 * 2**20
"""Largest question file read, in bytes: about 100,000 questions (the training set's 481 take 0.3 MiB)."""


def load_questions(path: Path) -> list[dict]:
    """Questions of a question file (UTF-8 JSONL, at most :data:`MAX_QUESTION_BYTES`). Raises FileNotFoundError
    for a missing file; ValueError for a FIFO, socket, device or folder (refused unread, never waited on), a file
    over the size, invalid UTF-8, and naming the line for bad JSON, a line that is no object or one without
    'question' and 'gold', or for a file with no questions."""
    path = Path(path)
    if not os.path.lexists(path):
        raise FileNotFoundError(f"{path}: no such question file")
    try:
        with open_regular(path) as f:  # a FIFO was "no such question file"; a 200 MiB file was read whole
            size = os.fstat(f.fileno()).st_size
            data = f.read(MAX_QUESTION_BYTES + 1) if size <= MAX_QUESTION_BYTES else b""
        text = data.decode("utf-8-sig")
    except CorpusError:
        raise ValueError(f"{path}: not a regular file (a FIFO, socket or device): give a question file "
                         "(.jsonl)") from None
    except UnicodeDecodeError as exc:
        raise ValueError(f"{path}: invalid UTF-8 at byte {exc.start}; re-save the question file as UTF-8") from None
    except OSError as exc:  # a folder, a dangling link, no permission
        raise ValueError(f"{path}: cannot be read as a question file ({exc.strerror or exc})") from None
    if max(size, len(data)) > MAX_QUESTION_BYTES:
        raise ValueError(f"{path}: {max(size, len(data)) / 2**20:,.1f} MiB, over the "
                         f"{MAX_QUESTION_BYTES // 2**20} MiB a question file may have")
    out = []
    for i, q in iter_jsonl(path, text):  # JsonlError (a ValueError) names the line of bad JSON
        if "question" not in q or "gold" not in q:
            raise ValueError(f"{path}:{i}: expected an object with 'question' and 'gold'")
        if not isinstance(q["question"], str) or not isinstance(q["gold"], list) or not all(
                isinstance(g, str) for g in q["gold"]):  # a string gold was read as a list of its characters
            raise ValueError(f"{path}:{i}: 'question' must be a string and 'gold' a list of paper ids "
                             '(e.g. ["000_12a0d7b1c5c902c5#13"], or [] for an unanswerable question)')
        if not q["question"].strip():
            raise ValueError(f"{path}:{i}: the question is empty")
        size = len(" ".join(q["question"].split()))  # as the question's analysis counts it
        if size > MAX_QUESTION_CHARS:  # refused only when asked, with no file:line (a hostile round)
            raise ValueError(f"{path}:{i}: the question is {size:,} characters long; the limit is {MAX_QUESTION_CHARS:,}")
        if not isinstance(q.get("qid", ""), (str, int)) or isinstance(q.get("qid"), bool):  # a dict was unhashable
            raise ValueError(f"{path}:{i}: 'qid' must be a string (or a number)")
        if not isinstance(q.get("kind", ""), str):  # so was a dict kind (a sixth hostile round)
            raise ValueError(f"{path}:{i}: 'kind' must be a string (e.g. \"lookup\", \"none\")")
        if not isinstance(q.get("evidence", ""), (str, type(None))):  # a dict: "unexpected AttributeError" (13th round)
            raise ValueError(f"{path}:{i}: 'evidence' must be a string (the sentence that answers the question)")
        if "qid" in q:
            q["qid"] = str(q["qid"])
        q.setdefault("qid", f"q{i}")
        q.setdefault("kind", "none" if not q["gold"] else "lookup")
        out.append(q)
    if not out:
        raise ValueError(f"{path}: no questions in the file")
    return out


def load_question_files(paths) -> list[dict]:
    """Questions of one or several question files (a path or a list of paths), in order, each
    tagged ``source`` (its file's name, for figures per file). A qid already taken by an earlier file
    is prefixed with its file's stem (folds and simulated copies key on qids). Raises as :func:`load_questions`."""
    paths = [paths] if isinstance(paths, (str, Path)) else list(paths)
    out, seen = [], set()
    for path in paths:
        for q in load_questions(Path(path)):
            q["source"] = Path(path).name
            if q["qid"] in seen:
                q["qid"] = f"{Path(path).stem}:{q['qid']}"
            seen.add(q["qid"])
            out.append(q)
    return out


def corpus_settings(settings: Settings, corpus: list[Path], distractors: Path | None = None) -> Settings:
    """Settings for a separate evaluation index (corpus, plus distractors if given), keyed by their
    names: a folder beside the index and, on a Chroma server (shared by every folder), its own collection."""
    # abspath, not resolve(): a link loop raised "unexpected RuntimeError" here (a thirteenth hostile round); the
    # ingest names it as the path it is.
    paths = [os.path.abspath(p) for p in corpus] + ([os.path.abspath(distractors)] if distractors else [])
    key = hashlib.sha1(json.dumps(paths).encode()).hexdigest()[:10]
    update: dict = {"index": settings.index.parent / f"eval-index-{key}"}
    if settings.store.host:
        update["store"] = settings.store.model_copy(update={"collection": f"{settings.store.collection}-eval-{key}"})
    return settings.model_copy(update=update)


def distractor_settings(settings: Settings, corpus: list[Path], distractors: Path) -> Settings:
    """:func:`corpus_settings` for the corpus plus a distractor collection."""
    return corpus_settings(settings, corpus, distractors)


def open_corpus_index(settings, corpus: list, explicit_index: bool = False, ingest_callbacks: dict | None = None,
                      distractors: Path | None = None):
    """``(settings, index)`` of an index holding ``corpus`` (paper files) and ``distractors`` (a paper file): the
    configured index when ``explicit_index``, else a folder beside it keyed by their paths (built once, then
    reused, as the eval's distractor index). Papers missing from it are ingested first. Raises ValueError when
    ``distractors`` is no plain file, or when the index then holds no paper (every file skipped: their reasons)."""
    from assistant.answer import get_index
    from vectorstore.ingest import ingest

    if distractors is not None and not Path(distractors).is_file():  # a FIFO was skipped, and eval said nothing
        raise ValueError(f"--distractors {distractors}: no such paper file (it must be a plain file, e.g. a .jsonl)")
    if not explicit_index:
        settings = corpus_settings(settings, [Path(p) for p in corpus], Path(distractors) if distractors else None)
    made = not explicit_index and not settings.store.host and not Path(settings.index).exists()
    idx = None
    try:
        idx = get_index(settings, create=True)
        report = ingest([*corpus, *([distractors] if distractors else [])], idx, write_batch=settings.store.write_batch,
                        **(ingest_callbacks or {}))
        if not idx.store.counts()[0]:  # nothing to evaluate over: BM25 failed on the empty index (a fifth hostile round)
            why = "; ".join(report.skipped[:3]) or "no file gave a paper"
            raise ValueError(f"the --corpus files gave no paper to evaluate over ({why})")
        for reason in report.skipped[:50]:  # as ingest names them: a FIFO in a --corpus folder went unsaid
            print(f"skipped: {reason}", file=sys.stderr)
    except BaseException:
        # An eval index made here that holds no paper is removed: each failed run left an empty eval-index-… folder
        # (a hostile round). One holding papers stays, for the next run to go on from.
        if made and _holds_no_paper(idx):
            import shutil

            shutil.rmtree(settings.index, ignore_errors=True)
        raise
    return settings, idx


def _holds_no_paper(idx) -> bool:
    """True when ``idx`` (an opened index, or None when it could not be opened) holds no paper."""
    try:
        return idx is None or not idx.store.counts()[0]
    except Exception:  # noqa: BLE001 - a store that cannot be read now holds nothing worth keeping
        return True


def file_lines(by_file: list[dict], indent: str = "") -> list[str]:
    """Lines of the cross-validated abstention on the whole index per question file (``CVReport.by_file``)."""
    return [f"{indent}per question file (whole index):"] * bool(by_file) + [
        f"{indent}  {b['index']}: answerable ({b['answerable']}) {b['answerable_abstained']:.1%} refused; "
        f"'none' ({b['none']}) {b['none_abstained']:.0%} refused, {b['none_flagged']:.0%} at least flagged" for b in by_file]
