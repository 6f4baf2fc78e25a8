"""Chroma, embedded (``PersistentClient``) or a server (``HttpClient``), behind a small typed API
(:class:`ChunkStore`; its reads and queries are in :mod:`vectorstore.store.reads` and
:mod:`vectorstore.store.queries`).

Two collections per index: ``<name>_chunks`` (one record per chunk, the dense index) and
``<name>_papers`` (one record per paper: the abstract, its metadata, a content hash that marks the
paper as fully ingested, and the normalized mean of its chunk embeddings). Both use cosine space.
The chunks collection's metadata records the embedding model and dimension; opening an index with
another model raises :class:`EmbeddingMismatchError` naming both, and a write generation: a local store
that sees it move by another process's write reads on through a fresh client (:meth:`ChunkStore.state_stamp`).
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np

from vectorstore.store.dense_matrix import EXACT_MAX_CHUNKS, DenseMatrix
from vectorstore.store.queries import StoreQueries
from vectorstore.store.reads import GET_PAGE, StoreReads
from vectorstore.store.records import PAPER_HASH_KEY, PATH_KEY, TEXT_KEY, paper_metadata, text_key
from vectorstore.chunks import Chunk
from vectorstore.integrity import record_generation
from vectorstore.papers import Paper
from vectorstore.store.client import EmbeddingMismatchError, IndexNotFoundError, fresh_client, writing_to


HNSW_CONFIG = {"hnsw": {"space": "cosine", "ef_search": 400}}
"""New collections search their HNSW graph with ef_search 400 (Chroma's default, 100, gave recall@10
0.96 against exact search on the 23k-paper benchmark; 400 gives 0.99 at about the same latency)."""


class ChunkStore(StoreReads, StoreQueries):
    """The Chroma side of one index. Cheap methods; open once per process and share.

    ``model`` and ``dim`` are the configured embedding model's name and size. With ``create=False``
    a missing index raises IndexNotFoundError; an index built with another model raises
    EmbeddingMismatchError whatever ``create`` says.
    """

    def __init__(self, client, collection: str, model: str, dim: int, create: bool = True):
        self.client = client
        self.model = model
        self.dim = dim
        self.name = collection
        chunks_name, papers_name = f"{collection}_chunks", f"{collection}_papers"
        existing = {c if isinstance(c, str) else c.name for c in client.list_collections()}
        if chunks_name not in existing and not create:
            raise IndexNotFoundError(f"no index named {collection!r} yet: run `paper-assistant ingest PATH` first")
        if chunks_name in existing:
            self.chunks = client.get_collection(chunks_name, embedding_function=None)
            meta = self.chunks.metadata or {}
            built_with, built_dim = meta.get("embedding_model"), meta.get("embedding_dim")
            if built_with is not None and (built_with != model or int(built_dim) != dim):
                same_weights = built_with.split("+")[0] == model.split("+")[0]
                fix = ("set PAPER_ASSISTANT_EMBEDDING__BACKEND=auto (it opens an index with the backend it was "
                       "built with), or re-ingest into a new --index" if same_weights else
                       "set the model back, or re-ingest into a new --index")
                raise EmbeddingMismatchError(
                    f"index {collection!r} was built with embedding model {built_with!r} ({built_dim} dims), "
                    f"but {model!r} ({dim} dims) is configured: {fix}"
                )
        else:
            self.chunks = client.create_collection(
                chunks_name, embedding_function=None, configuration={"hnsw": dict(HNSW_CONFIG["hnsw"])},
                metadata={"embedding_model": model, "embedding_dim": dim, "kind": "chunks"},
            )
        self.papers = client.get_or_create_collection(
            papers_name, embedding_function=None, configuration={"hnsw": dict(HNSW_CONFIG["hnsw"])},
            metadata={"embedding_model": model, "embedding_dim": dim, "kind": "papers"},
        )
        self.cache_dir: Path | None = None  # where the exact-search matrix is kept (set by open_index)
        self.data_dir: Path | None = None  # the local index folder (None: a Chroma server), for disk-full errors
        self.exact_max_chunks = EXACT_MAX_CHUNKS
        self._dense: DenseMatrix | None = None
        self._dense_lock = threading.Lock()
        self._meta_read = 0.0
        self._stamp: str | None = None
        self._generation = (self.chunks.metadata or {}).get("generation", 0)
        """The write generation this object's vectors are known to include (see :meth:`_follow`)."""
        self._reopen_lock = threading.Lock()

    # --- writes ---------------------------------------------------------------------------------

    def upsert_chunks(self, chunks: list[Chunk], embeddings: np.ndarray, papers: dict[str, Paper],
                      sentences: list[dict] | None = None, hashes: dict[str, str] | None = None) -> None:
        """Insert or replace chunks (``embeddings``: shape ``(len(chunks), dim)``).

        ``sentences[k]``: extra metadata for chunk ``k`` (its packed sentence vectors, see
        vectorstore.chunks.sentences.pack). ``hashes``: ``{paper id: content hash}`` of the version being written,
        stored with each of its chunks (:data:`PAPER_HASH_KEY`, read back by :meth:`chunk_paper_hashes`).
        """
        self._changed()
        if not chunks:
            return
        metas = []
        has_code = {pid: bool(p.links) for pid, p in papers.items()}  # each abstract read once, not per chunk
        for k, c in enumerate(chunks):
            p = papers[c.paper_id]
            m = {"paper_id": c.paper_id, "index": c.index, "start": c.start, "end": c.end,
                 "venue": p.venue, "source": p.source, "has_code": has_code[c.paper_id], TEXT_KEY: text_key(c.text),
                 "year": p.year,  # None deletes a stored year (upsert merges metadata)
                 "categories": list(p.categories) or None}  # a list for "$contains"; Chroma refuses an empty one
            if sentences is not None:
                m.update(sentences[k])
            if hashes is not None:
                m[PAPER_HASH_KEY] = hashes[c.paper_id]
            metas.append(m)
        with writing_to(self.data_dir):
            self.chunks.upsert(ids=[c.id for c in chunks], documents=[c.text for c in chunks],
                               embeddings=embeddings, metadatas=metas)
        self._changed()

    def upsert_papers(self, papers: list[Paper], hashes: list[str], embeddings: np.ndarray,
                      paths: dict[str, str] | None = None) -> None:
        """Insert or replace paper records; writing one marks that paper as fully ingested.
        ``paths``: ``{source file name: the resolved path it was read from}`` (see :meth:`source_paths`)."""
        if not papers:
            return
        metas = [paper_metadata(p, h) | {PATH_KEY: (paths or {}).get(p.source)} for p, h in zip(papers, hashes)]
        with writing_to(self.data_dir):
            self.papers.upsert(ids=[p.id for p in papers], documents=[p.text for p in papers],
                               embeddings=embeddings, metadatas=metas)

    def set_source_path(self, paper_ids: list[str], path: str) -> None:
        """Record ``path`` as where the papers ``paper_ids`` were read from (a file that moved)."""
        step = self.max_batch_size()
        with writing_to(self.data_dir):
            for i in range(0, len(paper_ids), step):
                part = paper_ids[i : i + step]
                self.papers.update(ids=part, metadatas=[{PATH_KEY: path}] * len(part))

    def delete_chunks(self, ids: list[str]) -> None:
        self._changed()
        with writing_to(self.data_dir):
            for i in range(0, len(ids), GET_PAGE):
                self.chunks.delete(ids=ids[i : i + GET_PAGE])
        self._changed()

    def delete_papers(self, paper_ids: list[str]) -> None:
        """Remove papers and all their chunks."""
        self._changed()
        with writing_to(self.data_dir):
            for i in range(0, len(paper_ids), 500):
                batch = paper_ids[i : i + 500]
                self.chunks.delete(where={"paper_id": {"$in": batch}})
                self.papers.delete(ids=batch)
        self._changed()

    def state_stamp(self) -> str:
        """A cheap fingerprint of the chunk set ("count:generation:collection id"), for cache invalidation.

        Re-read at most once a second (writes through this object re-read at once), and the
        collection's metadata is fetched afresh, so a reader notices another process's ingest even
        when the chunk count did not change.
        """
        now = time.monotonic()
        if self._stamp is not None and now - self._meta_read <= 1.0:
            return self._stamp
        self._reload_chunks()
        meta = self.chunks.metadata or {}
        if meta.get("generation", 0) != self._generation:
            self._follow(meta.get("generation", 0))
        # The collection's id too: a collection made anew (a wiped server, another server under the
        # same name) restarts at the same count and generation, and must not pass for the old one.
        self._stamp = f"{self.chunks.count()}:{meta.get('generation', 0)}:{self.chunks.id}"
        self._meta_read = now
        return self._stamp

    def _follow(self, generation: int) -> None:
        """Another process wrote to the index (its generation moved to ``generation``): a local store
        reads on through a :func:`fresh_client`, whose vectors include that write (a server's client
        sees every write already). On failure the old client stays: the next look tries again."""
        if self.data_dir is None:
            self._generation = generation
            return
        with self._reopen_lock:
            if self._generation == generation:
                return  # another thread reopened meanwhile
            try:
                client = fresh_client(self.data_dir)
                chunks = client.get_collection(self.chunks.name, embedding_function=None)
                papers = client.get_collection(self.papers.name, embedding_function=None)
            except Exception:  # noqa: BLE001 - a writer mid-way, a collection being made anew
                return
            self.client, self.chunks, self.papers = client, chunks, papers
            self._generation = generation

    def _vectors_current(self) -> None:
        """Before reading vectors: follow another process's write if one happened (:meth:`state_stamp`
        looks at most once a second, so this is cheap)."""
        self.state_stamp()

    def refresh(self) -> None:
        """Follow another process's write now (no once-a-second wait): a writer calls this once it holds
        the writer lock, so the vectors it writes beside go with every earlier write, not a stale copy."""
        self._stamp = None
        self.state_stamp()

    def _changed(self) -> None:
        self._stamp = None

    def bump_generation(self, writing: bool | str = False) -> None:
        """Mark the chunk set as changed (caches keyed on :meth:`state_stamp` become stale).

        ``writing=True`` (or the command, e.g. ``"remove a.jsonl"``) before a writer changes anything,
        False once it is done: a cache built in between is stale at the closing bump, and a writer killed
        in between leaves the mark, so the next writer bumps again (:meth:`write_interrupted`) even when it
        has nothing to write, and doctor can name the command to finish.
        """
        self._reload_chunks()
        meta = dict(self.chunks.metadata or {})
        meta["generation"] = int(meta.get("generation", 0)) + 1
        meta["writing"] = writing
        meta.pop("hnsw:space", None)
        with writing_to(self.data_dir):
            self.chunks.modify(metadata=meta)
        self._generation = meta["generation"]  # our own write: this client's vectors hold it
        self._changed()
        if not writing and self.data_dir is not None:  # a completed write: what an older database is told by
            record_generation(self.data_dir / "chroma", str(self.chunks.id), meta["generation"])

    def write_interrupted(self) -> bool | str:
        """Truthy when a writer opened a write (``bump_generation(writing=…)``) and never closed it: the
        command it named (``"remove a.jsonl"``), else True."""
        self._reload_chunks()
        return (self.chunks.metadata or {}).get("writing") or False

    def _reload_chunks(self) -> None:
        """Fetch the chunks collection afresh, so its metadata (generation, the writing mark) is another
        process's latest; on failure keep the handle we have (the count still tracks changes)."""
        try:
            self.chunks = self.client.get_collection(self.chunks.name, embedding_function=None)
        except Exception:  # noqa: BLE001 - a server gone for a moment: the next call tries again
            pass
