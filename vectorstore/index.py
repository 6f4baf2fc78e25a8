"""One opened index: the Chroma store, the BM25 index beside it, the encoder and the writer lock.

Opened once per process (see :func:`open_index`) and shared by the CLI, the UI and the tests. The
writer lock is a file lock in the local index folder and, when the store is a Chroma server, also
a lease kept on the server (:mod:`vectorstore.store.lease`), so writers on other machines are kept out too.
"""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Self

from filelock import FileLock, Timeout

from vectorstore.store import (ChunkStore, DamagedVectorsError, IndexInUseError, LEASE_TTL, LexicalIndex, StoreError,
                               WriterLease, finish_swap, make_client)
from vectorstore.chunks import Chunker, ChunkingConfig
from vectorstore.encoding import Encoder
from vectorstore.integrity import hnsw_problem, lock_file_problem, older_database, repair

__all__ = ["Index", "IndexInUseError", "WriterLock", "open_index"]

log = logging.getLogger(__name__)


class WriterLock:
    """A held writer lock: the local file lock and, in server mode, the lease on the Chroma server.

    :meth:`release` frees both and is idempotent; usable as a context manager.
    """

    def __init__(self, file_lock: FileLock, lease: WriterLease | None = None):
        self.file_lock = file_lock
        self.lease = lease

    def release(self) -> None:
        if self.lease is not None:
            self.lease.release()
        if self.file_lock.is_locked:
            self.file_lock.release()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc) -> None:
        self.release()


@dataclass
class Index:
    """Everything retrieval needs, opened once. ``lexical`` is refreshed when the store changes."""

    directory: Path
    store: ChunkStore
    encoder: Encoder
    _lexical: LexicalIndex | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    remote: bool = False
    """True when ``store`` talks to a Chroma server (``open_index(host=...)``), not a local folder."""
    lease_ttl: float = LEASE_TTL
    """Seconds the server-mode writer lease outlives its holder (see :mod:`vectorstore.store.lease`)."""
    chunking: ChunkingConfig = field(default_factory=ChunkingConfig)
    """How ingest cuts papers into chunks; the answer path cuts papers it must embed itself the same way."""

    def chunker(self) -> Chunker:
        """A :class:`Chunker` for this index's encoder and ``chunking``."""
        return Chunker.for_encoder(self.encoder, self.chunking)

    @property
    def lexical_dir(self) -> Path:
        return self.directory / f"bm25-{self.store.name}"

    def lexical(self) -> LexicalIndex:
        """The BM25 index, loaded from disk, or rebuilt from the store if stale, missing or damaged
        (:meth:`LexicalIndex.inspect`; a damaged one is named in a warning, logger ``vectorstore.index``)."""
        stamp = self.store.state_stamp()
        with self._lock:
            if self._lexical is not None and self._lexical.stamp == stamp:
                return self._lexical
            loaded, damaged = LexicalIndex.inspect(self.lexical_dir)
            if loaded is None or loaded.stamp != stamp:
                try:
                    titles = self.store.titles()
                    loaded = LexicalIndex.build(
                        [(cid, pid, f"{titles[pid]}\n{text}" if pid in titles else text)
                         for cid, pid, text in self.store.iter_chunks()], stamp)
                except Exception:
                    # Another process is writing mid-read: keep answering from the previous BM25
                    # index if there is one; a later question rebuilds it.
                    if self._lexical is not None:
                        return self._lexical
                    raise
                try:
                    loaded.save(self.lexical_dir)
                except OSError as exc:  # a read-only index still answers, from a BM25 index kept in memory
                    log.warning("the keyword index cache %s cannot be written (%s): rebuilt it in memory for this "
                                "process, as every process will until it can be (e.g. `chmod -R u+rwX %s`)",
                                self.lexical_dir, "permission denied" if isinstance(exc, PermissionError)
                                else exc.strerror or type(exc).__name__, self.directory)
                else:
                    if damaged:  # once: the rebuilt cache replaces the damaged one
                        log.warning("the keyword index cache %s was damaged (%s): rebuilt it from the index",
                                    self.lexical_dir, damaged)
            self._lexical = loaded
            return loaded

    def writer_busy(self) -> str | None:
        """Who is writing this index now (``"another process on this machine"``, or the server lease's
        holder), or None. Takes the file lock for an instant to find out (an ingest starting in that
        instant is refused as "index in use"); reads the server lease without taking it. StoreError
        when ``ingest.lock`` is no file (:func:`vectorstore.integrity.database.lock_file_problem`)."""
        _check_lock_file(self.directory)
        lock_file = self.directory / "ingest.lock"
        if lock_file.exists():
            lock = FileLock(str(lock_file))
            try:
                lock.acquire(timeout=0)
            except Timeout:
                return "another process on this machine"
            lock.release()
        if self.remote:
            import time

            holder = WriterLease(self.store.client, self.store.name, ttl=self.lease_ttl).holder()
            if holder is not None and holder.expires > time.time():
                return holder.describe()
        return None

    def writer_lock(self) -> WriterLock:
        """An acquired exclusive writer lock; raises IndexInUseError when another writer holds it.

        Always a file lock on ``<directory>/ingest.lock`` (other processes on this machine using
        this folder). In server mode also the writer lease on the server, which keeps out writers
        on other machines or using other local folders; the error then names the holder's host,
        pid and lease expiry. StoreError when the server cannot be reached, or ``ingest.lock`` is a
        folder or another non-file (the lock library would raise IsADirectoryError). Readers never take
        either, so questions keep working during an ingest.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        _check_lock_file(self.directory)
        lock = FileLock(str(self.directory / "ingest.lock"))
        try:
            lock.acquire(timeout=0)
        except Timeout as exc:
            raise IndexInUseError(
                f"index in use: another process is writing to {self.directory} (wait for it to finish; "
                "the lock ends with the process that holds it)"
            ) from exc
        if not self.remote:
            try:
                self.store.refresh()  # this process's Chroma may predate another process's last write
            except BaseException:
                lock.release()
                raise
            return WriterLock(lock)
        try:
            lease = WriterLease(self.store.client, self.store.name, ttl=self.lease_ttl).acquire()
        except BaseException:
            lock.release()
            raise
        return WriterLock(lock, lease)


def open_index(directory: Path, encoder: Encoder, collection: str = "abstracts", create: bool = True,
               host: str | None = None, port: int = 8000, ssl: bool = False,
               headers: dict[str, str] | None = None, client=None, chunking: ChunkingConfig | None = None) -> Index:
    """Open (or, with ``create``, start) the index in ``directory`` or on a Chroma server.

    ``client``: an already made :func:`make_client` for the same place (saves a second connection).

    Raises IndexNotFoundError (create=False and nothing there), EmbeddingMismatchError (built with
    another model) or StoreError (server unreachable, files unreadable or damaged: see
    :func:`check_vector_files` and :func:`vectorstore.store.client.make_client`).
    """
    from vectorstore.paths import creation_problem

    directory = Path(directory)
    if not host and (problem := creation_problem(directory, "--index")):  # under a file, a name too long
        raise StoreError(f"the index location {problem}")
    if directory.exists() and not directory.is_dir():
        raise StoreError(f"the index location {directory} is a file, not a folder: choose another --index")
    if not host:
        finish_swap(directory)  # a rebuild killed between its renames left no chroma/: not "no index"
    # A chroma/ looped to itself "exists" for no check (an eleventh hostile round): opening names it as damage.
    if not create and not host and not os.path.lexists(directory / "chroma"):
        from vectorstore.store import IndexNotFoundError

        raise IndexNotFoundError(f"no index at {directory}: run `paper-assistant ingest PATH --index {directory}` first")
    client = client or make_client(directory, host=host, port=port, ssl=ssl, headers=headers)
    store = ChunkStore(client, collection, encoder.name, encoder.dim, create=create)
    store.cache_dir = directory
    store.data_dir = None if host else directory
    if not host:
        check_vector_files(directory, store)
        def generation(fresh: bool) -> int:
            if fresh:
                store.write_interrupted()  # re-reads the collection's metadata
            return int((store.chunks.metadata or {}).get("generation", 0))

        older = older_database(directory, str(store.chunks.id), generation)
        if older:
            raise DamagedVectorsError(older, directory)
    return Index(directory=directory, store=store, encoder=encoder, remote=bool(host),
                 chunking=chunking or ChunkingConfig())


def check_vector_files(directory: Path, store: ChunkStore) -> None:
    """Raise StoreError, naming the remedy, when the HNSW files of a local index's collections hold
    fewer vectors than Chroma's SQLite has records (their segment folders deleted, or replaced by older
    ones): what neither those files nor the write-ahead log hold is gone, and dense search and related
    work would silently miss those papers (ingest said "unchanged" and exited 0).

    Every record is in the log until its vector is in the files, so ``vectors in the files + log entries
    >= records`` holds for a sound index; deleted vectors stay counted in the files, so the check never
    fires on a sound one. Read in the order records, log, files (a concurrent writer only adds to the
    files before it trims the log). A header of another layout than Chroma 1.x's (version 1, 100 bytes,
    the element count at byte 20) or an unreadable database is not judged."""
    import sqlite3
    from contextlib import closing

    from vectorstore.papers import counted

    root = directory / "chroma"
    for col, what in ((store.chunks, "chunk"), (store.papers, "paper")):
        records = col.count()
        if not records:
            continue
        try:
            with closing(sqlite3.connect(f"file:{root / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
                logged = db.execute("SELECT COUNT(*) FROM embeddings_queue WHERE topic LIKE ?",
                                    (f"%/{col.id}",)).fetchone()[0]
                segments = [r[0] for r in db.execute("SELECT id FROM segments WHERE collection = ? AND scope = "
                                                     "'VECTOR'", (str(col.id),))]
        except sqlite3.Error:
            return
        held = 0
        for seg in segments:
            header = root / str(seg) / "header.bin"
            data = header.read_bytes() if header.is_file() else b"\x01\x00\x00\x00" + bytes(96)
            # The files' sizes and a sample of their records were judged before Chroma loaded them
            # (make_client: vector_files_problem); a header cut short since is judged again here.
            short = hnsw_problem(header.parent) if len(data) != 100 else None
            if not short and (len(data) != 100 or data[:4] != b"\x01\x00\x00\x00"):
                return
            if short:
                raise DamagedVectorsError(f"the vector index at {directory} is damaged: {short}, so search would "
                                          f"fail or return wrong papers: {repair(directory)}", directory)
            held += int.from_bytes(data[20:28], "little")
        if held + logged < records:
            raise DamagedVectorsError(f"the vector index at {directory} is missing {records - held - logged} of its "
                                      f"{counted(records, what)} (Chroma's HNSW folders under {root} were deleted "
                                      f"or replaced), so search would miss them: {repair(directory)}", directory)


def _check_lock_file(directory: Path) -> None:
    """Raise StoreError with :func:`vectorstore.integrity.database.lock_file_problem`'s line, if it has one."""
    problem = lock_file_problem(directory)
    if problem:
        raise StoreError(problem)
