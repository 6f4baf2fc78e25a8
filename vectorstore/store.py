"""Chroma, embedded (``PersistentClient``) or a server (``HttpClient``), behind a small typed API.

Two collections per index: ``<name>_chunks`` (one record per chunk, the dense index) and
``<name>_papers`` (one record per paper: the abstract, its metadata, a content hash that marks the
paper as fully ingested, and the normalized mean of its chunk embeddings). Both use cosine space.
The chunks collection's metadata records the embedding model and dimension; opening an index with
another model raises :class:`EmbeddingMismatchError` naming both.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vectorstore.chunking import Chunk
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


def make_client(index_dir: Path, host: str | None = None, port: int = 8000, ssl: bool = False,
                headers: dict[str, str] | None = None):
    """A chromadb client: ``HttpClient`` when ``host`` is set, else ``PersistentClient(index_dir)``.

    Telemetry is off. Raises StoreError when the server is unreachable or speaks another version.
    """
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    chroma_settings = ChromaSettings(anonymized_telemetry=False, allow_reset=False)
    if host:
        try:
            client = chromadb.HttpClient(host=host, port=port, ssl=ssl, headers=headers or {},
                                         settings=chroma_settings)
            client.heartbeat()
        except Exception as exc:
            text = str(exc)
            hint = " (client/server version mismatch?)" if "version" in text.lower() or "404" in text else ""
            raise StoreError(f"cannot reach Chroma server at {host}:{port}{hint}: {text.splitlines()[0] if text else exc!r}") from exc
        return client
    index_dir.mkdir(parents=True, exist_ok=True)
    try:
        return chromadb.PersistentClient(path=str(index_dir / "chroma"), settings=chroma_settings)
    except Exception as exc:
        raise StoreError(f"cannot open the Chroma index at {index_dir}: {exc}") from exc


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
    }
    if paper.year is not None:
        meta["year"] = paper.year
    return meta


def _paper_from(doc: str, meta: dict) -> Paper:
    return Paper(
        id=meta["paper_id"], text=doc, title=meta.get("title", ""), label=meta.get("label", ""),
        authors=json.loads(meta.get("authors") or "[]"), venue=meta.get("venue", ""),
        year=meta.get("year"), url=meta.get("url", ""), source=meta.get("source", ""),
    )


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
                raise EmbeddingMismatchError(
                    f"index {collection!r} was built with embedding model {built_with!r} ({built_dim} dims), "
                    f"but {model!r} ({dim} dims) is configured: set the model back, or re-ingest into a new --index"
                )
        else:
            self.chunks = client.create_collection(
                chunks_name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
                metadata={"embedding_model": model, "embedding_dim": dim, "kind": "chunks"},
            )
        self.papers = client.get_or_create_collection(
            papers_name, embedding_function=None, configuration={"hnsw": {"space": "cosine"}},
            metadata={"embedding_model": model, "embedding_dim": dim, "kind": "papers"},
        )

    # --- writes ---------------------------------------------------------------------------------
    def upsert_chunks(self, chunks: list[Chunk], embeddings: np.ndarray, papers: dict[str, Paper]) -> None:
        """Insert or replace chunks (``embeddings``: shape ``(len(chunks), dim)``)."""
        if not chunks:
            return
        metas = []
        for c in chunks:
            p = papers[c.paper_id]
            m = {"paper_id": c.paper_id, "index": c.index, "start": c.start, "end": c.end,
                 "venue": p.venue, "source": p.source}
            if p.year is not None:
                m["year"] = p.year
            metas.append(m)
        self.chunks.upsert(ids=[c.id for c in chunks], documents=[c.text for c in chunks],
                           embeddings=embeddings, metadatas=metas)

    def upsert_papers(self, papers: list[Paper], hashes: list[str], embeddings: np.ndarray) -> None:
        """Insert or replace paper records; writing one marks that paper as fully ingested."""
        if not papers:
            return
        self.papers.upsert(ids=[p.id for p in papers], documents=[p.text for p in papers], embeddings=embeddings,
                           metadatas=[_paper_metadata(p, h) for p, h in zip(papers, hashes)])

    def delete_chunks(self, ids: list[str]) -> None:
        for i in range(0, len(ids), GET_PAGE):
            self.chunks.delete(ids=ids[i : i + GET_PAGE])

    def delete_papers(self, paper_ids: list[str]) -> None:
        """Remove papers and all their chunks."""
        for i in range(0, len(paper_ids), 500):
            batch = paper_ids[i : i + 500]
            self.chunks.delete(where={"paper_id": {"$in": batch}})
            self.papers.delete(ids=batch)

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

    def iter_chunks(self) -> Iterator[tuple[str, str, str]]:
        """Every stored chunk as ``(chunk_id, paper_id, text)``, in storage order."""
        for page in self._iter_get(self.chunks, ["documents", "metadatas"]):
            for cid, doc, m in zip(page["ids"], page["documents"], page["metadatas"]):
                yield cid, m["paper_id"], doc

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
        page = self.papers.get(ids=list(ids), include=["embeddings"])
        return {pid: np.asarray(e, dtype=np.float32) for pid, e in zip(page["ids"], page["embeddings"])}

    def query(self, embedding: np.ndarray, n: int, where: dict | None = None) -> list[ChunkHit]:
        """The ``n`` chunks nearest ``embedding`` (shape ``(dim,)``), best first, as cosine similarities."""
        total = self.chunks.count()
        if total == 0:
            return []
        res = self.chunks.query(query_embeddings=[embedding], n_results=min(n, total), where=where,
                                include=["documents", "metadatas", "distances"])
        return [
            ChunkHit(cid, m["paper_id"], doc, int(m["start"]), int(m["end"]), 1.0 - float(d))
            for cid, doc, m, d in zip(res["ids"][0], res["documents"][0], res["metadatas"][0], res["distances"][0])
        ]

    def state_stamp(self) -> str:
        """A cheap fingerprint of the chunk set (count + collection metadata), for cache invalidation."""
        meta = self.chunks.metadata or {}
        return f"{self.chunks.count()}:{meta.get('generation', 0)}"

    def bump_generation(self) -> None:
        """Mark the chunk set as changed (caches keyed on :meth:`state_stamp` become stale)."""
        meta = dict(self.chunks.metadata or {})
        meta["generation"] = int(meta.get("generation", 0)) + 1
        meta.pop("hnsw:space", None)
        self.chunks.modify(metadata=meta)
