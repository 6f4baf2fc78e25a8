"""The record reads of :class:`vectorstore.store.chunk_store.ChunkStore` (a mixin): papers and chunks, their
hashes, metadata and stored embeddings, paged through Chroma :data:`GET_PAGE` records at a time."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from vectorstore.store.records import PAPER_HASH_KEY, PATH_KEY, TEXT_KEY, paper_from
from vectorstore.papers import Paper


GET_PAGE = 5000


class StoreReads:
    """Reads of the two collections. The store it is mixed into holds ``client``, ``chunks``, ``papers``
    and ``dim``, and defines ``_vectors_current`` (called before reading stored vectors)."""

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
                out[pid] = paper_from(doc, m)
        return out

    def all_papers(self, with_embeddings: bool = False) -> tuple[list[Paper], np.ndarray | None]:
        """Every paper (and, if asked, their paper-level embeddings, shape ``(n, dim)``)."""
        if with_embeddings:
            self._vectors_current()
        include = ["documents", "metadatas"] + (["embeddings"] if with_embeddings else [])
        papers, vecs = [], []
        for page in self._iter_get(self.papers, include):
            papers += [paper_from(d, m) for d, m in zip(page["documents"], page["metadatas"])]
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
        """Ids of the papers whose metadata pass ``where`` (:func:`vectorstore.store.client.where_clause`); None when
        ``where`` is None."""
        if where is None:
            return None
        return {pid for page in self._iter_get(self.papers, [], where=where) for pid in page["ids"]}

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
