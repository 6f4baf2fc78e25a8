"""Chroma, embedded (``PersistentClient``) or a server (``HttpClient``), behind a small typed API.

Two collections per index: ``<name>_chunks`` (one record per chunk, the dense index) and
``<name>_papers`` (one record per paper: the abstract, its metadata, a content hash that marks the
paper as fully ingested, and the normalized mean of its chunk embeddings). Both use cosine space.
The chunks collection's metadata records the embedding model and dimension; opening an index with
another model raises :class:`EmbeddingMismatchError` naming both, and a write generation: a local store
that sees it move by another process's write reads on through a fresh client (:meth:`ChunkStore.state_stamp`).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import shutil
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vectorstore.cachedir import not_a_file, replace_folder
from vectorstore.chunking import Chunk
from vectorstore.integrity import record_generation
from vectorstore.papers import Paper


class StoreError(RuntimeError):
    """The index cannot be opened or used; the message says why and what to do."""


class EmbeddingMismatchError(StoreError):
    """The index was built with a different embedding model than the one configured."""


class IndexNotFoundError(StoreError):
    """No index exists where one was expected."""


@dataclass(frozen=True)
class ChunkHit:
    """One dense-search hit: a chunk and its cosine similarity to the query (in [-1, 1])."""

    chunk_id: str
    paper_id: str
    text: str
    start: int
    end: int
    similarity: float


GET_PAGE = 5000
PAPER_HASH_KEY = "paper_hash"
"""Chunk metadata field holding the content hash of the paper version the chunk was written for. The paper
record's hash says which version was committed; a chunk of another version is left by an ingest killed
between writing a paper's chunks and its record (chunks written before this field was: absent)."""
TEXT_KEY = "text_sha"
"""Chunk metadata field holding :func:`text_key` of the chunk's text, so a chunk that moved to another
paper id (a renumbered or renamed paper list) finds its stored vectors by content."""


def text_key(text: str) -> str:
    """A short content hash of a chunk's text."""
    return hashlib.sha1(text.encode()).hexdigest()[:16]


def make_client(index_dir: Path, host: str | None = None, port: int = 8000, ssl: bool = False,
                headers: dict[str, str] | None = None, full_check: bool = False):
    """A chromadb client: ``HttpClient`` when ``host`` is set, else ``PersistentClient(index_dir)``.

    Telemetry is off. Raises StoreError when the server is unreachable or speaks another version
    (the message names both versions when the server tells its own), or when a local index's
    ``chroma.sqlite3`` is damaged (:func:`vectorstore.integrity.database_problem`) or its HNSW files are
    (:func:`vectorstore.integrity.vector_files_problem`: a sample of their records, every one with
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
    from vectorstore.integrity import SQLITE_CORRUPT, database_damaged, database_problem, vector_files_problem

    damaged = database_problem(index_dir)  # before Chroma reads it: its own error names no remedy
    # The HNSW files too, from the files alone: the first Chroma call that loads a damaged segment (even a
    # count) crashes the process in hnswlib, a segfault with no word said.
    damaged = damaged or vector_files_problem(index_dir, full=full_check)
    if damaged:
        raise StoreError(damaged)
    index_dir.mkdir(parents=True, exist_ok=True)
    # Opening writes even for a reader: Chroma opens chroma.sqlite3 read-write and commits a transaction
    # (a journal is created and removed), and loading a collection's HNSW segment rewrites its files. So
    # the folder's mtimes change on every `ask`, and a read-only index needs `chroma run` (docs/limitations.md).
    try:
        return chromadb.PersistentClient(path=str(index_dir / "chroma"), settings=chroma_settings)
    except Exception as exc:
        corrupt = next((words for words in SQLITE_CORRUPT if words in str(exc)), None)
        if corrupt:  # damage the header check cannot see (a page in the middle overwritten)
            raise StoreError(database_damaged(index_dir, f"SQLite: {corrupt}")) from exc
        raise StoreError(f"cannot open the Chroma index at {index_dir}: {exc}") from exc


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


PATH_KEY = "path"
"""Paper metadata: the resolved path of the file a paper was read from (not part of its content hash)."""


def _paper_metadata(paper: Paper, content_hash: str) -> dict:
    meta = {
        "paper_id": paper.id,
        "title": paper.title,
        "label": paper.label,
        "authors": json.dumps(paper.authors, ensure_ascii=False),
        "venue": paper.venue,
        "url": paper.url,
        "source": paper.source,
        "hash": content_hash,
        "has_code": bool(paper.links),  # a filter ("papers with code"); the links are read from the text
        # None deletes the key: Chroma's upsert merges metadata, so a year taken out of a file would stay.
        "year": paper.year,
    }
    return meta


def _paper_from(doc: str, meta: dict) -> Paper:
    return Paper(
        id=meta["paper_id"], text=doc, title=meta.get("title", ""), label=meta.get("label", ""),
        authors=json.loads(meta.get("authors") or "[]"), venue=meta.get("venue", ""),
        year=meta.get("year"), url=meta.get("url", ""), source=meta.get("source", ""),
    )


HNSW_CONFIG = {"hnsw": {"space": "cosine", "ef_search": 400}}
"""New collections search their HNSW graph with ef_search 400 (Chroma's default, 100, gave recall@10
0.96 against exact search on the 23k-paper benchmark; 400 gives 0.99 at about the same latency)."""

EXACT_MAX_CHUNKS = 300_000
"""Up to this many chunks, dense search is exact brute force over an in-memory matrix (a float32
row per chunk: 300k chunks = 460 MB); above it, Chroma's HNSW index answers."""


@dataclass
class DenseMatrix:
    """Every chunk's embedding and the fields dense search returns or filters on, in one snapshot."""

    stamp: str
    ids: list[str]
    paper_ids: list[str]
    texts: list[str]
    starts: np.ndarray
    ends: np.ndarray
    fields: dict[str, list]
    matrix: np.ndarray

    FIELDS = ("venue", "year", "source", "paper_id", "has_code")

    def save(self, folder: Path) -> None:
        with replace_folder(folder) as tmp:
            np.save(tmp / "matrix.npy", self.matrix)
            (tmp / "chunks.json").write_text(json.dumps(
                {"stamp": self.stamp, "ids": self.ids, "paper_ids": self.paper_ids, "texts": self.texts,
                 "starts": self.starts.tolist(), "ends": self.ends.tolist(), "fields": self.fields},
                ensure_ascii=False))

    @classmethod
    def load(cls, folder: Path) -> "DenseMatrix | None":
        """The saved matrix, or None when missing, unreadable, of the wrong shape or holding anything but
        plain files (:func:`vectorstore.cachedir.not_a_file`; rebuilt by the caller)."""
        if not_a_file(folder):
            return None
        try:
            meta = json.loads((folder / "chunks.json").read_text())
            matrix = np.load(folder / "matrix.npy")
            dense = cls(meta["stamp"], meta["ids"], meta["paper_ids"], meta["texts"],
                        np.asarray(meta["starts"], dtype=np.int64), np.asarray(meta["ends"], dtype=np.int64),
                        meta["fields"], matrix)
            n = len(dense.ids)
            if not (isinstance(dense.stamp, str) and matrix.ndim == 2 and matrix.shape[0] == n
                    and len(dense.paper_ids) == len(dense.texts) == dense.starts.shape[0] == dense.ends.shape[0] == n
                    and isinstance(dense.fields, dict) and set(dense.fields) == set(cls.FIELDS)
                    and all(len(v) == n for v in dense.fields.values())):
                return None
            return dense
        except Exception:  # noqa: BLE001 - whatever a damaged file raises: rebuild
            return None

    def sound(self, dim: int, count: int) -> bool:
        """True when the matrix can be this store's: ``count`` rows (the chunk count its stamp names) of
        ``dim`` unit vectors. A cache edited or damaged in place keeps its stamp: a row zeroed hid its
        chunk from dense search, a cut width broke every question, and random bytes (NaN, 1e38) made the
        norms overflow with numpy's RuntimeWarnings printed."""
        if self.matrix.shape != (count, dim) or not count:
            return self.matrix.shape == (count, dim)
        # A unit vector's every component lies in [-1, 1]; checked first, so its norm cannot overflow.
        if self.matrix.dtype.kind != "f" or not np.isfinite(self.matrix).all() or np.abs(self.matrix).max() > 1.0 + 1e-3:
            return False
        norms = np.linalg.norm(self.matrix, axis=1)
        return bool(np.all(np.abs(norms - 1.0) < 1e-3))

    def mask(self, where: dict | None) -> np.ndarray | None:
        """Rows that pass a Chroma-style ``where`` (field equality, $eq, $in, $and, $or); None = unsupported."""
        n = len(self.ids)
        if not where:
            return np.ones(n, dtype=bool)
        if len(where) != 1:
            parts = [self.mask({k: v}) for k, v in where.items()]
            return None if any(p is None for p in parts) else np.logical_and.reduce(parts)
        (key, cond), = where.items()
        if key in ("$and", "$or"):
            parts = [self.mask(c) for c in cond]
            if any(p is None for p in parts):
                return None
            return (np.logical_and if key == "$and" else np.logical_or).reduce(parts) if parts else np.ones(n, dtype=bool)
        if key not in self.fields:
            return None
        values = self.fields[key]
        if isinstance(cond, dict):
            if set(cond) == {"$eq"}:
                cond = cond["$eq"]
            elif set(cond) == {"$in"}:
                allowed = set(cond["$in"])
                return np.fromiter((v in allowed for v in values), bool, n)
            else:
                return None
        return np.fromiter((v == cond and v is not None for v in values), bool, n)


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
def _writing(folder: Path | None) -> Iterator[None]:
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


class ChunkStore:
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
        vectorstore.sentences.pack). ``hashes``: ``{paper id: content hash}`` of the version being written,
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
                 "year": p.year}  # None deletes a stored year (upsert merges metadata)
            if sentences is not None:
                m.update(sentences[k])
            if hashes is not None:
                m[PAPER_HASH_KEY] = hashes[c.paper_id]
            metas.append(m)
        with _writing(self.data_dir):
            self.chunks.upsert(ids=[c.id for c in chunks], documents=[c.text for c in chunks],
                               embeddings=embeddings, metadatas=metas)
        self._changed()

    def upsert_papers(self, papers: list[Paper], hashes: list[str], embeddings: np.ndarray,
                      paths: dict[str, str] | None = None) -> None:
        """Insert or replace paper records; writing one marks that paper as fully ingested.
        ``paths``: ``{source file name: the resolved path it was read from}`` (see :meth:`source_paths`)."""
        if not papers:
            return
        metas = [_paper_metadata(p, h) | {PATH_KEY: (paths or {}).get(p.source)} for p, h in zip(papers, hashes)]
        with _writing(self.data_dir):
            self.papers.upsert(ids=[p.id for p in papers], documents=[p.text for p in papers],
                               embeddings=embeddings, metadatas=metas)

    def set_source_path(self, paper_ids: list[str], path: str) -> None:
        """Record ``path`` as where the papers ``paper_ids`` were read from (a file that moved)."""
        step = self.max_batch_size()
        with _writing(self.data_dir):
            for i in range(0, len(paper_ids), step):
                part = paper_ids[i : i + step]
                self.papers.update(ids=part, metadatas=[{PATH_KEY: path}] * len(part))

    def source_heading(self, source: str) -> tuple[str, int | None]:
        """``(venue, year)`` the papers of the file ``source`` give: the first venue and the first year
        among all of them (metadata only), ``""`` / None where none gives one."""
        venue, year = "", None
        for page in self._iter_get(self.papers, ["metadatas"], where={"source": source}):
            for m in page["metadatas"]:
                venue = venue or (m.get("venue") or "")
                year = year if year is not None else m.get("year")
            if venue and year is not None:
                break
        return venue, year

    def source_paths(self) -> dict[str, str]:
        """``{source file name: resolved path it was ingested from}``; files ingested before paths
        were recorded are absent."""
        out: dict[str, str] = {}
        for page in self._iter_get(self.papers, ["metadatas"]):
            for m in page["metadatas"]:
                if m.get(PATH_KEY):
                    out[m.get("source", "")] = m[PATH_KEY]
        return out

    def delete_chunks(self, ids: list[str]) -> None:
        self._changed()
        with _writing(self.data_dir):
            for i in range(0, len(ids), GET_PAGE):
                self.chunks.delete(ids=ids[i : i + GET_PAGE])
        self._changed()

    def delete_papers(self, paper_ids: list[str]) -> None:
        """Remove papers and all their chunks."""
        self._changed()
        with _writing(self.data_dir):
            for i in range(0, len(paper_ids), 500):
                batch = paper_ids[i : i + 500]
                self.chunks.delete(where={"paper_id": {"$in": batch}})
                self.papers.delete(ids=batch)
        self._changed()

    # --- reads ----------------------------------------------------------------------------------
    def counts(self) -> tuple[int, int]:
        """(papers, chunks) currently stored."""
        return self.papers.count(), self.chunks.count()

    def _iter_get(self, collection, include: list[str], where: dict | None = None) -> Iterator[dict]:
        offset = 0
        while True:
            page = collection.get(include=include, limit=GET_PAGE, offset=offset, where=where)
            if not page["ids"]:
                return
            yield page
            offset += len(page["ids"])
            if len(page["ids"]) < GET_PAGE:
                return

    def paper_hashes(self) -> dict[str, tuple[str, str]]:
        """``{paper_id: (content_hash, source)}`` of every fully ingested paper."""
        out = {}
        for page in self._iter_get(self.papers, ["metadatas"]):
            for pid, m in zip(page["ids"], page["metadatas"]):
                out[pid] = (m.get("hash", ""), m.get("source", ""))
        return out

    def chunk_ids_by_paper(self, paper_ids: list[str] | None = None) -> dict[str, set[str]]:
        """``{paper_id: {chunk ids}}`` for the given papers (all papers when None)."""
        out: dict[str, set[str]] = {}
        wheres = [None] if paper_ids is None else [
            {"paper_id": {"$in": paper_ids[i : i + 500]}} for i in range(0, len(paper_ids), 500)
        ]
        for where in wheres:
            for page in self._iter_get(self.chunks, ["metadatas"], where=where):
                for cid, m in zip(page["ids"], page["metadatas"]):
                    out.setdefault(m["paper_id"], set()).add(cid)
        return out

    def chunk_paper_hashes(self) -> dict[str, set[str]]:
        """``{paper id: the content hashes its stored chunks were written for}`` for every paper with at least
        one chunk (:data:`PAPER_HASH_KEY`; ``""`` for a chunk written before that field was). A committed
        paper whose set holds a hash other than its record's (and ``""``) has chunks of another version."""
        out: dict[str, set[str]] = {}
        for page in self._iter_get(self.chunks, ["metadatas"]):
            for m in page["metadatas"]:
                out.setdefault(m["paper_id"], set()).add(m.get(PAPER_HASH_KEY) or "")
        return out

    def chunk_records(self, ids: list[str]) -> dict[str, tuple[np.ndarray, dict]]:
        """``{chunk id: (stored embedding, metadata)}`` for the ids that exist."""
        self._vectors_current()
        out: dict[str, tuple[np.ndarray, dict]] = {}
        for i in range(0, len(ids), GET_PAGE):
            page = self.chunks.get(ids=list(ids[i : i + GET_PAGE]), include=["embeddings", "metadatas"])
            for cid, e, m in zip(page["ids"], page["embeddings"], page["metadatas"]):
                out[cid] = (np.asarray(e, dtype=np.float32), m or {})
        return out

    def chunk_records_by_text(self, keys: list[str]) -> dict[str, tuple[np.ndarray, dict]]:
        """``{text key: (stored embedding, metadata)}`` of one stored chunk per :func:`text_key` found."""
        self._vectors_current()
        out: dict[str, tuple[np.ndarray, dict]] = {}
        keys = list(dict.fromkeys(keys))
        for i in range(0, len(keys), 500):
            part = keys[i : i + 500]
            for page in self._iter_get(self.chunks, ["embeddings", "metadatas"], where={TEXT_KEY: {"$in": part}}):
                for e, m in zip(page["embeddings"], page["metadatas"]):
                    out.setdefault(m[TEXT_KEY], (np.asarray(e, dtype=np.float32), m))
        return out

    def chunk_metadata_by_paper(self, paper_ids: list[str]) -> dict[str, list[dict]]:
        """``{paper id: [metadata of each of its chunks]}`` (papers without chunks are left out)."""
        out: dict[str, list[dict]] = {}
        ids = list(dict.fromkeys(paper_ids))
        for i in range(0, len(ids), 100):
            part = ids[i : i + 100]
            page = self.chunks.get(where={"paper_id": {"$in": part}}, include=["metadatas"])
            for m in page["metadatas"]:
                out.setdefault(m["paper_id"], []).append(m)
        return out

    def field_values(self, field: str) -> set:
        """Distinct values of a paper field (``venue``, ``year``, ``source``) across the index."""
        dense = self.dense_matrix()
        if dense is not None and field in dense.fields:
            return {v for v in dense.fields[field] if v not in (None, "")}
        return {m[field] for page in self._iter_get(self.papers, ["metadatas"]) for m in page["metadatas"]
                if m.get(field) not in (None, "")}

    def max_batch_size(self) -> int:
        """The largest number of records one Chroma write may carry (client-dependent)."""
        try:
            return int(self.client.get_max_batch_size())
        except Exception:
            return 1000

    def iter_chunks(self) -> Iterator[tuple[str, str, str]]:
        """Every stored chunk as ``(chunk_id, paper_id, text)``, in storage order."""
        for page in self._iter_get(self.chunks, ["documents", "metadatas"]):
            for cid, doc, m in zip(page["ids"], page["documents"], page["metadatas"]):
                yield cid, m["paper_id"], doc

    def titles(self) -> dict[str, str]:
        """``{paper id: title}`` for every paper that has one (BM25 reads each chunk with its paper's title)."""
        return {pid: m["title"] for page in self._iter_get(self.papers, ["metadatas"])
                for pid, m in zip(page["ids"], page["metadatas"]) if (m or {}).get("title")}

    def get_papers(self, ids: list[str]) -> dict[str, Paper]:
        """``{id: Paper}`` for the ids that exist (unknown ids are left out)."""
        if not ids:
            return {}
        out = {}
        for i in range(0, len(ids), GET_PAGE):
            page = self.papers.get(ids=list(ids[i : i + GET_PAGE]), include=["documents", "metadatas"])
            for pid, doc, m in zip(page["ids"], page["documents"], page["metadatas"]):
                out[pid] = _paper_from(doc, m)
        return out

    def all_papers(self, with_embeddings: bool = False) -> tuple[list[Paper], np.ndarray | None]:
        """Every paper (and, if asked, their paper-level embeddings, shape ``(n, dim)``)."""
        if with_embeddings:
            self._vectors_current()
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        papers, vecs = [], []
        for page in self._iter_get(self.papers, include):
            papers += [_paper_from(d, m) for d, m in zip(page["documents"], page["metadatas"])]
            if with_embeddings:
                vecs.append(np.asarray(page["embeddings"], dtype=np.float32))
        emb = (np.vstack(vecs) if vecs else np.zeros((0, self.dim), np.float32)) if with_embeddings else None
        return papers, emb

    def paper_embeddings(self, ids: list[str]) -> dict[str, np.ndarray]:
        """``{id: paper embedding}`` for the ids that exist."""
        if not ids:
            return {}
        self._vectors_current()
        page = self.papers.get(ids=list(ids), include=["embeddings"])
        return {pid: np.asarray(e, dtype=np.float32) for pid, e in zip(page["ids"], page["embeddings"])}

    def paper_ids_where(self, where: dict | None) -> set[str] | None:
        """Ids of the papers whose metadata pass ``where`` (:func:`where_clause`); None when ``where`` is None."""
        if where is None:
            return None
        return {pid for page in self._iter_get(self.papers, [], where=where) for pid in page["ids"]}

    def nearest_papers(self, embedding: np.ndarray, n: int) -> list[tuple[str, float]]:
        """The ``n`` papers whose whole-abstract embedding is nearest ``embedding``: ``[(id, cosine)]`` best first."""
        self._vectors_current()
        n = min(self.papers.count(), n)
        if n <= 0:
            return []
        res = self.papers.query(query_embeddings=[embedding], n_results=n, include=["distances"])
        return [(i, 1.0 - d) for i, d in zip(res["ids"][0], res["distances"][0])]

    def query(self, embedding: np.ndarray, n: int, where: dict | None = None) -> list[ChunkHit]:
        """The ``n`` chunks nearest ``embedding`` (shape ``(dim,)``), best first, as cosine similarities.

        Exact: up to ``exact_max_chunks`` chunks this is a brute-force search over an in-memory
        matrix (faster than HNSW plus Chroma's record fetch at this scale, and never misses a
        neighbour); larger indexes, or filters it cannot evaluate, use Chroma's HNSW index.
        """
        dense = self.dense_matrix()
        if dense is not None:
            mask = dense.mask(where) if where else None
            if mask is not None or not where:
                return self._exact_query(dense, np.asarray(embedding, dtype=np.float32), n, mask)
        return self.hnsw_query(embedding, n, where)

    def hnsw_query(self, embedding: np.ndarray, n: int, where: dict | None = None) -> list[ChunkHit]:
        """Approximate search through Chroma's HNSW index (what :meth:`query` falls back to)."""
        self._vectors_current()
        total = self.chunks.count()
        if total == 0:
            return []
        res = self.chunks.query(query_embeddings=[embedding], n_results=min(n, total), where=where,
                                include=["documents", "metadatas", "distances"])
        return [
            ChunkHit(cid, m["paper_id"], doc, int(m["start"]), int(m["end"]), 1.0 - float(d))
            for cid, doc, m, d in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0])
        ]

    @staticmethod
    def _exact_query(dense: DenseMatrix, q: np.ndarray, n: int, mask: np.ndarray | None) -> list[ChunkHit]:
        if not len(dense.ids):
            return []
        sims = dense.matrix @ q
        if mask is not None and not mask.all():
            sims = np.where(mask, sims, -np.inf)
            n = min(n, int(mask.sum()))
        n = min(n, sims.size)
        if n <= 0:
            return []
        top = np.argpartition(-sims, n - 1)[:n]
        top = top[np.argsort(-sims[top], kind="stable")]
        return [ChunkHit(dense.ids[i], dense.paper_ids[i], dense.texts[i], int(dense.starts[i]), int(dense.ends[i]),
                         float(sims[i])) for i in top]

    def dense_matrix(self) -> DenseMatrix | None:
        """The in-memory snapshot for exact search (loaded from the cache folder or the store when the
        store's :meth:`state_stamp` changed), or None when the index is larger than ``exact_max_chunks``."""
        stamp = self.state_stamp()
        if self._dense is not None and self._dense.stamp == stamp:
            return self._dense
        if int(stamp.split(":")[0]) > self.exact_max_chunks:
            return None
        with self._dense_lock:
            if self._dense is not None and self._dense.stamp == stamp:
                return self._dense
            folder = self.cache_dir / f"dense-{self.name}" if self.cache_dir else None
            loaded = DenseMatrix.load(folder) if folder else None
            if loaded is None or loaded.stamp != stamp or not loaded.sound(self.dim, int(stamp.split(":")[0])):
                try:
                    loaded = self._build_dense(stamp)
                except Exception:  # noqa: BLE001
                    # Another process is writing mid-read (Chroma: "Error finding id"). Answer from
                    # the previous snapshot, or from HNSW when there is none; a later question rebuilds.
                    return self._dense
                if folder:
                    try:
                        loaded.save(folder)
                    except OSError:
                        pass  # read-only index folder: kept in memory only
            self._dense = loaded
            return loaded

    def _build_dense(self, stamp: str) -> DenseMatrix:
        ids, pids, texts, starts, ends, vecs = [], [], [], [], [], []
        fields: dict[str, list] = {f: [] for f in DenseMatrix.FIELDS}
        for page in self._iter_get(self.chunks, ["documents", "metadatas", "embeddings"]):
            ids += page["ids"]
            texts += page["documents"]
            for m in page["metadatas"]:
                pids.append(m["paper_id"])
                starts.append(int(m["start"]))
                ends.append(int(m["end"]))
                for f in DenseMatrix.FIELDS:
                    fields[f].append(m.get(f))
            vecs.append(np.asarray(page["embeddings"], dtype=np.float32))
        matrix = np.vstack(vecs) if vecs else np.zeros((0, self.dim), np.float32)
        return DenseMatrix(stamp, ids, pids, texts, np.asarray(starts, np.int64), np.asarray(ends, np.int64),
                           fields, np.ascontiguousarray(matrix))

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
        with _writing(self.data_dir):
            self.chunks.modify(metadata=meta)
        self._generation = meta["generation"]  # our own write: this client's vectors hold it
        self._changed()
        if not writing and self.data_dir is not None:  # a completed write: what an older database is told by
            record_generation(self.data_dir / "chroma", str(self.chunks.id), meta["generation"])

    def check_search(self) -> None:
        """Search both collections' HNSW indexes with a stored chunk vector; raises what Chroma raises
        when their files are damaged (exact search, used on small indexes, would not notice)."""
        got = self.chunks.get(limit=1, include=["embeddings"])
        if len(got["ids"]):
            vec = np.asarray(got["embeddings"][0], dtype=np.float32)
            self.hnsw_query(vec, 1)
            self.nearest_papers(vec, 1)

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
