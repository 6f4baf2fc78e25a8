"""Process-wide factories: the encoder, the index and the Assistant are built once and shared."""

from __future__ import annotations

import threading
from collections.abc import Callable

from assistant.settings import Settings
from vectorstore.encoding import get_encoder, resolve_backend
from vectorstore.index import Index, open_index
from vectorstore.store import built_with, finish_swap, make_client

EMPTY_INDEX = ("the index holds no papers (none ingested yet, or all removed): add some with "
               "`paper-assistant ingest <files>`, e.g. `paper-assistant ingest data/*.txt`")


class EmptyIndexError(ValueError):
    """A question asked of an index that holds no papers; its message says how to add some."""


def require_papers(index: Index) -> None:
    """Raise :class:`EmptyIndexError` when ``index`` holds no papers (asked at the start of a question, so
    the user learns to ingest instead of reading "no relevant abstract found"); while an ingest holds the index's
    lease, the message says it is running instead of asking for one."""
    if index.store.counts()[0] == 0:
        writer = writer_of(index)
        if writer:  # a first ingest still loading its model or embedding its first batch (a third hostile round)
            raise EmptyIndexError(f"the index holds no papers yet: an ingest is running ({writer}); ask again once "
                                  "it has written some (`paper-assistant doctor` shows its progress)")
        raise EmptyIndexError(EMPTY_INDEX)


def writer_of(index: Index) -> str | None:
    """Who holds ``index``'s ingest lease ("another process on this machine", …), or None: none holds it, or the
    lease cannot be read (then only what is sure of the store is said)."""
    try:
        return index.writer_busy()
    except Exception:  # noqa: BLE001 - an unreadable lease (or its lock)
        return None


_lock = threading.Lock()
_indexes: dict[tuple, Index] = {}


def _key(settings: Settings) -> tuple:
    s = settings.store
    return (str(settings.index.resolve()), s.collection, s.host, s.port, settings.embedding.model,
            settings.embedding.backend, settings.calibration.chunking.model_dump_json())


def index_backend(settings: Settings):
    """``(backend, client)``: the concrete embedding backend for the configured index (see
    resolve_backend's ``auto``), and the Chroma client opened to read it (None if none was needed)."""
    e, s = settings.embedding, settings.store
    if e.backend != "auto":
        return e.backend, None
    existing = client = None
    if not s.host:
        finish_swap(settings.index)  # a rebuild killed between its renames: its index is the one to read
    if s.host or (settings.index / "chroma").exists():
        client = make_client(settings.index, host=s.host, port=s.port, ssl=s.ssl, headers=s.headers)
        existing = built_with(client, s.collection)
    return resolve_backend(e.model, e.backend, existing), client


def get_index(settings: Settings, create: bool = False, repair: Callable[[str], None] | None = None) -> Index:
    """The opened index for ``settings`` (cached per index location and model).

    ``repair``: when given, a local index whose vector files disagree with its sound database
    (DamagedVectorsError) is rebuilt from the papers the database stores
    (:func:`vectorstore.ingest.rebuild_vectors`), each step told through ``repair(line)``; without it that
    error is raised (its line names ``doctor``, which rebuilds). Raises IndexNotFoundError (create=False,
    nothing ingested), EmbeddingMismatchError, StoreError.
    """
    from vectorstore.paths import creation_problem
    from vectorstore.store import DamagedVectorsError, StoreError

    # Before any look inside it: a folder under a file, or a name over the system's limit, was a raw OSError.
    if not settings.store.host and (problem := creation_problem(settings.index, "--index")):
        raise StoreError(f"the index location {problem}")
    key = _key(settings)
    with _lock:
        if key in _indexes:
            return _indexes[key]
        try:
            index = _open(settings, create)
        except DamagedVectorsError as exc:
            if repair is None or settings.store.host:
                raise
            rebuild_index(settings, str(exc), repair)
            index = _open(settings, create)
        _indexes[key] = index
        return index


def _open(settings: Settings, create: bool) -> Index:
    backend, client = index_backend(settings)
    encoder = get_encoder(settings.embedding.model, settings.embedding.batch_size, backend)
    s = settings.store
    return open_index(settings.index, encoder, collection=s.collection, create=create, host=s.host, port=s.port,
                      ssl=s.ssl, headers=s.headers, client=client, chunking=settings.calibration.chunking)


def rebuild_index(settings: Settings, damage: str, tell: Callable[[str], None]) -> None:
    """Rebuild the damaged local index of ``settings`` from its stored papers, with the backend it was built
    with, telling what was found and what was done."""
    from vectorstore.ingest import rebuild_vectors, stored_model

    e, s = settings.embedding, settings.store
    tell(f"{damage.split(', so ')[0]}: rebuilding it from the papers the index stores…")
    backend = resolve_backend(e.model, e.backend, stored_model(settings.index, s.collection))
    encoder = get_encoder(e.model, e.batch_size, backend)
    report = rebuild_vectors(settings.index, encoder, s.collection, settings.calibration.chunking)
    tell(report.line(settings.index))


def get_assistant(settings: Settings):
    """An :class:`assistant.answer.pipeline.Assistant` over the configured index (opened once)."""
    from assistant.answer.pipeline import Assistant

    return Assistant(settings, get_index(settings))


def forget_indexes() -> None:
    """Drop cached indexes (tests that delete index folders call this)."""
    with _lock:
        _indexes.clear()


def corpus_to_refresh(settings: Settings, index: Index, was_new: bool) -> list:
    """The corpus files a start (``serve``, ``mcp``) ingests: all of ``settings.corpus`` into the
    default index or into an index that did not exist before this start (``was_new``); into any other
    index only the corpus files it already holds (refreshed when edited). So a start never adds the
    bundled papers to a user's own index, nor undoes a ``remove`` there. Returns paths."""
    from assistant.settings import DEFAULT_INDEX
    from vectorstore.papers import iter_paper_files

    files = list(iter_paper_files(settings.corpus))
    if was_new or settings.index.resolve() == DEFAULT_INDEX.resolve():
        return files
    held = {str(s) for s in index.store.field_values("source")}
    return [f for f in files if f.name in held]
