"""Rebuild a local index whose vector files are damaged from what its database still holds: every
committed paper (its abstract and metadata, the papers collection's records) and every chunk vector that
can be found without the damaged files (Chroma's write-ahead log, the exact-search cache beside the index;
a chunk id hashes its text, so a vector found under its id is that text's vector). What is not found is
embedded again. ``ingest`` and ``doctor`` call :func:`rebuild_vectors` when opening an index raises
:class:`vectorstore.store.DamagedVectorsError`; the paper files are not read.

The rebuilt index is written in ``<index>/rebuild.tmp/`` and swapped in by two renames; a run killed at any
moment leaves either the damaged index (the next run starts the rebuild again) or a complete rebuilt one
beside a moved-away damaged one (:func:`vectorstore.store.swap.finish_swap` completes it). Reads the database with ``sqlite3``,
read-only, because Chroma loads a collection's HNSW files on first use, and hnswlib crashes the process
(a segfault) on damaged ones."""

from __future__ import annotations

import json
import shutil
import sqlite3
import time
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from filelock import FileLock, Timeout

from vectorstore.index import open_index
from vectorstore.ingest.batch import embed_batch, store_batch
from vectorstore.papers import Paper
from vectorstore.store import (DONE, OLD, PATH_KEY, TMP, DenseMatrix, IndexInUseError, StoreError, finish_swap,
                               paper_from, release_client, remove_tree)

BATCH = 256
"""Papers chunked, embedded and written at a time (bounds memory as ingest's batches do)."""


@dataclass
class RebuildReport:
    """What a rebuild did: papers written, chunks written, of which vectors found without embedding,
    and the seconds it took."""

    papers: int
    chunks: int
    reused: int
    seconds: float

    def line(self, directory: Path) -> str:
        return (f"rebuilt the vector index at {directory} from the {self.papers:,} papers it stores "
                f"({self.chunks:,} chunks, {self.reused:,} vectors found, {self.chunks - self.reused:,} "
                f"embedded again) in {self.seconds:.1f} s")


def _rows(db: sqlite3.Connection, name: str) -> dict[str, dict]:
    """``{record id: {metadata key: value, "chroma:document": text}}`` of the collection ``name``, read
    from its metadata segment; {} when there is no such collection."""
    found = db.execute("SELECT s.id FROM segments s JOIN collections c ON c.id = s.collection "
                       "WHERE c.name = ? AND s.scope = 'METADATA'", (name,)).fetchone()
    if not found:
        return {}
    rows: dict[str, dict] = {}
    for rid, key, s, i, f, b in db.execute(
            "SELECT e.embedding_id, m.key, m.string_value, m.int_value, m.float_value, m.bool_value "
            "FROM embeddings e JOIN embedding_metadata m ON m.id = e.id WHERE e.segment_id = ?", (found[0],)):
        rows.setdefault(rid, {})[key] = s if s is not None else i if i is not None else f if f is not None \
            else None if b is None else bool(b)
    return rows


def _logged_vectors(db: sqlite3.Connection, name: str, dim: int) -> dict[str, np.ndarray]:
    """The chunk vectors still in Chroma's write-ahead log for collection ``name`` (the latest write of each
    id; a deleted id is dropped): the most recent writes, which the HNSW files may not hold yet."""
    found = db.execute("SELECT id FROM collections WHERE name = ?", (name,)).fetchone()
    if not found:
        return {}
    out: dict[str, np.ndarray] = {}
    for rid, op, vec, enc in db.execute("SELECT id, operation, vector, encoding FROM embeddings_queue "
                                        "WHERE topic LIKE ? ORDER BY seq_id", (f"%/{found[0]}",)):
        if op == 3:  # Chroma's Operation.DELETE
            out.pop(rid, None)
        elif vec is not None and (enc or "FLOAT32").upper() == "FLOAT32" and len(vec) == 4 * dim:
            out[rid] = np.frombuffer(vec, dtype=np.float32).copy()
    return out


def _cached_vectors(directory: Path, collection: str, dim: int) -> dict[str, np.ndarray]:
    """The chunk vectors of the exact-search cache beside the index (``{}`` when it is missing or fails its
    checks)."""
    dense = DenseMatrix.load(directory / f"dense-{collection}")
    if dense is None or dense.matrix.shape[1] != dim:
        return {}
    return {cid: dense.matrix[k] for k, cid in enumerate(dense.ids)}


def stored_papers(directory: Path, collection: str, dim: int
                  ) -> tuple[list[tuple[Paper, str]], dict[str, str], dict[str, tuple[np.ndarray, dict]]]:
    """``([(paper, content hash)], {source file name: path}, {chunk text key: (vector, metadata)})`` read from the
    database of the local index in ``directory`` and the vectors found beside it. Raises StoreError when
    the database cannot be read (then nothing can be rebuilt from it)."""
    try:
        with closing(sqlite3.connect(f"file:{directory / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            papers = _rows(db, f"{collection}_papers")
            chunks = _rows(db, f"{collection}_chunks")
            vectors = _logged_vectors(db, f"{collection}_chunks", dim)
    except sqlite3.Error as exc:
        raise StoreError(f"the index database at {directory} cannot be read ({exc}), so the vector index cannot "
                         f"be rebuilt from it: delete {directory} and run `paper-assistant ingest` again") from exc
    for cid, vec in _cached_vectors(directory, collection, dim).items():
        vectors.setdefault(cid, vec)
    todo, paths = [], {}
    for pid in sorted(papers):
        meta = papers[pid]
        todo.append((paper_from(meta.pop("chroma:document", "") or "", meta), str(meta.get("hash", ""))))
        if meta.get(PATH_KEY):
            paths[todo[-1][0].source] = str(meta[PATH_KEY])
    by_text = {meta["text_sha"]: (vectors[cid], meta) for cid, meta in chunks.items()
               if cid in vectors and meta.get("text_sha")}
    return todo, paths, by_text


def _collection_meta(directory: Path, collection: str) -> dict:
    """The chunks collection's metadata (``embedding_model``, ``generation``, ``writing``…) of the local index
    in ``directory``, read from its database without Chroma; {} when it cannot be read."""
    try:
        with closing(sqlite3.connect(f"file:{directory / 'chroma' / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            rows = db.execute("SELECT m.key, m.str_value, m.int_value, m.float_value, m.bool_value FROM "
                              "collection_metadata m JOIN collections c ON c.id = m.collection_id WHERE c.name = ?",
                              (f"{collection}_chunks",)).fetchall()
    except sqlite3.Error:
        return {}
    return {k: s if s is not None else i if i is not None else f if f is not None else None if b is None else bool(b)
            for k, s, i, f, b in rows}


def stored_model(directory: Path, collection: str = "abstracts") -> str | None:
    """The embedding-model identity the local index in ``directory`` was built with (None when it cannot be
    read): the backend to rebuild it with."""
    return _collection_meta(directory, collection).get("embedding_model")


def rebuild_vectors(directory: Path, encoder, collection: str = "abstracts", chunking=None) -> RebuildReport:
    """Rebuild the local index in ``directory`` from its stored papers (see the module docstring) and swap
    it in; the BM25 and exact-search caches are rebuilt from it on the next open. Takes the writer's lock
    file (IndexInUseError when another process writes). ``encoder``: the index's own (the papers are chunked
    and any missing vector embedded with it); ``chunking``: ingest's."""
    directory = Path(directory)
    start = time.perf_counter()
    lock = FileLock(str(directory / "ingest.lock"))
    try:
        lock.acquire(timeout=0)
    except Timeout as exc:
        raise IndexInUseError(f"index in use: another process is writing to {directory} (wait for it to "
                              "finish, then run the command again)") from exc
    try:
        release_client(directory)  # this process's Chroma view of the damaged folder must not outlive it
        finish_swap(directory, clean=True)
        todo, paths, by_text = stored_papers(directory, collection, encoder.dim)
        # An ingest killed mid-write left its mark ("writing"): kept, so doctor still names the command to finish.
        writing = _collection_meta(directory, collection).get("writing") or False
        tmp = directory / TMP
        remove_tree(tmp)  # a link there is removed, never written through
        fresh = open_index(tmp, encoder, collection, create=True, chunking=chunking)
        chunker, chunks, reused = fresh.chunker(), 0, 0
        for k in range(0, len(todo), BATCH):
            batch = todo[k:k + BATCH]
            chunks_of = {p.id: chunker.split(p) for p, _ in batch}
            done = store_batch(embed_batch(batch, fresh, chunker, chunks_of, by_text), fresh, paths=paths)
            chunks, reused = chunks + done[0], reused + done[1]
        fresh.store.bump_generation(writing=writing)
        release_client(tmp)  # its files closed before they move
        (tmp / DONE).write_text(json.dumps({"papers": len(todo), "chunks": chunks}))
        remove_tree(directory / OLD)
        (directory / "chroma").rename(directory / OLD)
        finish_swap(directory, clean=True)
        for cache in (f"bm25-{collection}", f"dense-{collection}"):
            shutil.rmtree(directory / cache, ignore_errors=True)
    finally:
        lock.release()
    return RebuildReport(len(todo), chunks, reused, time.perf_counter() - start)
