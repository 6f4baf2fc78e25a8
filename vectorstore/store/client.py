"""Chroma, embedded (``PersistentClient``) or a server (``HttpClient``): the client (:func:`make_client`,
:func:`fresh_client`), the store's errors, its ``where`` dialect (:func:`where_clause`) and the reading of a
failed write as a full disk (:func:`writing_to`).

The index's two collections, behind a small typed API, are :class:`vectorstore.store.chunk_store.ChunkStore`.
"""

from __future__ import annotations

import contextlib
import errno
import json
import shutil
from collections.abc import Iterator
from pathlib import Path


class StoreError(RuntimeError):
    """The index cannot be opened or used; the message says why and what to do."""


class EmbeddingMismatchError(StoreError):
    """The index was built with a different embedding model than the one configured."""


class DamagedVectorsError(StoreError):
    """The vector (HNSW) files of a local index disagree with its sound database: cut short, missing
    vectors, or newer than it. The database still holds every committed paper, so
    :func:`vectorstore.ingest.rebuild_vectors` rebuilds the index from it (``ingest`` and ``doctor`` do)."""

    def __init__(self, message: str, directory: Path):
        super().__init__(message)
        self.directory = directory


class IndexNotFoundError(StoreError):
    """No index exists where one was expected."""


def make_client(index_dir: Path, host: str | None = None, port: int = 8000, ssl: bool = False,
                headers: dict[str, str] | None = None, full_check: bool = False):
    """A chromadb client: ``HttpClient`` when ``host`` is set, else ``PersistentClient(index_dir)``.

    Telemetry is off. Raises StoreError when the server is unreachable or speaks another version
    (the message names both versions when the server tells its own), or when a local index's
    ``chroma.sqlite3`` is damaged (:func:`vectorstore.integrity.database.database_problem`) or its HNSW files are
    (:func:`vectorstore.integrity.vectors.vector_files_problem`: a sample of their records, every one with
    ``full_check``), both judged from the files before Chroma reads them.
    """
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if host:
        mismatch = server_version_mismatch(host, port, ssl, headers)
        if mismatch:
            raise StoreError(mismatch)
        try:
            client = chromadb.HttpClient(host=host, port=port, ssl=ssl, headers=headers or {},
                                         settings=chroma_settings)
            client.heartbeat()
        except Exception as exc:
            text = str(exc)
            hint = " (client/server version mismatch?)" if "version" in text.lower() or "404" in text else ""
            raise StoreError(f"cannot reach Chroma server at {host}:{port}{hint}: {text.splitlines()[0] if text else exc!r}") from exc
        return client
    from vectorstore.integrity import SQLITE_CORRUPT, database_damaged

    try:
        _check_local(index_dir, full_check)
    except PermissionError as exc:  # hostile round #35 (low 8): "unexpected PermissionError", no remedy
        raise StoreError(not_permitted(index_dir, exc)) from exc
    try:
        index_dir.mkdir(parents=True, exist_ok=True)
    except PermissionError as exc:
        raise StoreError(not_permitted(index_dir, exc)) from exc
    # Opening writes even for a reader: Chroma opens chroma.sqlite3 read-write and commits a transaction
    # (a journal is created and removed), and loading a collection's HNSW segment rewrites its files. So
    # the folder's mtimes change on every `ask`, and a read-only index needs `chroma run` (docs/limitations.md).
    try:
        return chromadb.PersistentClient(path=str(index_dir / "chroma"), settings=chroma_settings)
    except PermissionError as exc:
        raise StoreError(not_permitted(index_dir, exc)) from exc
    except Exception as exc:
        corrupt = next((words for words in SQLITE_CORRUPT if words in str(exc)), None)
        if corrupt:  # damage the header check cannot see (a page in the middle overwritten)
            raise StoreError(database_damaged(index_dir, f"SQLite: {corrupt}")) from exc
        if "permission denied" in str(exc).lower() or "readonly database" in str(exc).lower():  # a 4th round
            raise StoreError(not_permitted(index_dir, PermissionError(13, "Permission denied"))) from exc
        if "disk is full" in str(exc).lower():  # opening writes: on a full disk Chroma's own text had no remedy
            raise StoreError(f"the disk holding the index ({index_dir}) is full: free some space and run the command "
                             "again; nothing in the index was changed") from exc
        raise StoreError(f"cannot open the Chroma index at {index_dir}: {exc}") from exc


def _check_local(index_dir: Path, full_check: bool) -> None:
    """Before Chroma reads a local index: complete a rebuild's interrupted swap, then look at its database and
    HNSW files (StoreError, DamagedVectorsError); PermissionError passes on."""
    from vectorstore.integrity import database_problem, vector_files_problem
    from vectorstore.store.swap import finish_swap

    finish_swap(index_dir)  # a rebuild killed between its two renames: completed before anything looks
    damaged = database_problem(index_dir)  # before Chroma reads it: its own error names no remedy
    if damaged:
        raise StoreError(damaged)
    # The HNSW files too, from the files alone: the first Chroma call that loads a damaged segment (even a
    # count) crashes the process in hnswlib, a segfault with no word said.
    damaged = vector_files_problem(index_dir, full=full_check)
    if damaged:
        raise DamagedVectorsError(damaged, index_dir)


def not_permitted(index_dir: Path, exc: OSError) -> str:
    """The one-line error for an index folder this user may not read or write (``exc``: what refused)."""
    where = exc.filename or index_dir
    return (f"the index at {index_dir} cannot be read or written by this user ({where}: permission denied): give "
            f"this user read and write access to it (e.g. `chmod -R u+rwX {index_dir}`), or choose another --index "
            "(nothing was changed)")


def fresh_client(index_dir: Path):
    """A new ``PersistentClient`` for the local index in ``index_dir`` on a Chroma System of its own.

    chromadb keeps one System per folder and process, and its embedded core loads each collection's
    vector index into memory once: another process's later writes reach its SQLite reads (counts,
    metadata) but never its vectors (a paper added since is "Error finding id" to fetch, and missing
    from nearest-paper searches). A new System loads them as they are now. Clients made before keep the
    old System (a request in flight on another thread finishes on it; it is freed with them). Raises
    StoreError as :func:`make_client`.
    """
    from chromadb.api.shared_system_client import SharedSystemClient

    folder = str(index_dir / "chroma")  # the System's key: the path make_client passes
    with SharedSystemClient._refcount_lock:
        SharedSystemClient._identifier_to_system.pop(folder, None)
        SharedSystemClient._identifier_to_refcount.pop(folder, None)
    return make_client(index_dir)


def release_client(index_dir: Path) -> None:
    """Stop and forget this process's Chroma System for the local index in ``index_dir``, so its folder can
    be moved (a rebuilt index swapped in): clients made before must not be used after."""
    from chromadb.api.shared_system_client import SharedSystemClient

    folder = str(index_dir / "chroma")
    with SharedSystemClient._refcount_lock:
        system = SharedSystemClient._identifier_to_system.pop(folder, None)
        SharedSystemClient._identifier_to_refcount.pop(folder, None)
    if system is not None:
        system.stop()


def built_with(client, collection: str) -> str | None:
    """The embedding-model identity an existing index was built with, or None (no index yet)."""
    try:
        col = client.get_collection(f"{collection}_chunks", embedding_function=None)
    except Exception:
        return None
    return (col.metadata or {}).get("embedding_model")


def server_version_mismatch(host: str, port: int, ssl: bool = False, headers: dict[str, str] | None = None,
                            timeout: float = 5.0) -> str | None:
    """A one-line explanation when the Chroma server at ``host:port`` cannot serve this client, else None.

    chromadb 1.x clients speak the v2 HTTP API. A 0.x server answers only under ``/api/v1`` (its
    version is read there and named); a server whose v2 version has another major number than this
    client is refused too. Connection problems return None (the client reports them itself).
    """
    import urllib.error
    import urllib.request

    import chromadb

    base = f"{'https' if ssl else 'http'}://{host}:{port}"
    client_v = chromadb.__version__

    def get(path: str):
        req = urllib.request.Request(base + path, headers=dict(headers or {}))
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - configured server only
            return json.loads(resp.read().decode() or "null")

    try:
        server_v = get("/api/v2/version")
    except urllib.error.HTTPError as exc:
        if exc.code not in (404, 405):
            return None
        try:
            old = get("/api/v1/version")
        except Exception:
            old = None
        named = f"version {old}" if isinstance(old, str) else "an older version"
        return (f"Chroma client/server version mismatch: the server at {host}:{port} runs {named} "
                f"(no /api/v2), but this client is chromadb {client_v}, which needs a 1.x server: "
                f"start one with the `chroma run` of chromadb {client_v}")
    except Exception:
        return None
    if isinstance(server_v, str) and server_v.split(".")[0] != client_v.split(".")[0]:
        return (f"Chroma client/server version mismatch: the server at {host}:{port} reports API version "
                f"{server_v}, but this client is chromadb {client_v}: run matching versions")
    return None


def where_clause(fields: dict) -> dict | None:
    """Chroma's ``where`` for metadata equalities: ``{"venue": ["a", "b"], "year": 2026}`` →
    ``{"$and": [{"venue": {"$in": ["a", "b"]}}, {"year": 2026}]}``; None values are left out, and no
    field gives None (no filter). The only place outside this module that needs Chroma's dialect asks here."""
    clauses = [{k: {"$in": v} if isinstance(v, list) else v} for k, v in fields.items() if v is not None]
    if not clauses:
        return None
    return clauses[0] if len(clauses) == 1 else {"$and": clauses}


DISK_FULL_BELOW = 32 * 2**20
"""Free bytes under which a failed write is reported as a full disk: Chroma (SQLite, its compactor)
raises its own errors ("Error in compaction", "database or disk is full"), not ENOSPC."""


@contextlib.contextmanager
def writing_to(folder: Path | None) -> Iterator[None]:
    """Turn a failed write into ``StoreError`` naming a full disk, when the disk holding ``folder``
    (a local index; None: a Chroma server, whose disk we cannot see) is full or nearly so."""
    try:
        yield
    except Exception as exc:
        if folder is None or isinstance(exc, StoreError):
            raise
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            raise exc from None
        if getattr(exc, "errno", None) == errno.ENOSPC or free < DISK_FULL_BELOW:
            raise StoreError(f"the disk holding the index ({folder}) is full ({free / 2**20:.0f} MB free): free "
                             "some space and run the command again; an ingest resumes where it stopped, and "
                             f"papers already indexed keep their chunks ({type(exc).__name__}: "
                             f"{str(exc).splitlines()[0] if str(exc) else ''})") from exc
        raise
