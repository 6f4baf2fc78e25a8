"""Dense search of :class:`vectorstore.store.chunk_store.ChunkStore` (a mixin): nearest chunks and papers to a
query embedding, exact over the in-memory :class:`~vectorstore.store.dense_matrix.DenseMatrix` while the index
is small enough, through Chroma's HNSW index otherwise. Similarities are cosines in [-1, 1]."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vectorstore.store.dense_matrix import DenseMatrix


@dataclass(frozen=True)
class ChunkHit:
    """One dense-search hit: a chunk and its cosine similarity to the query (in [-1, 1])."""

    chunk_id: str
    paper_id: str
    text: str
    start: int
    end: int
    similarity: float


class StoreQueries:
    """Queries of the two collections. The store it is mixed into holds ``chunks``, ``papers``, ``dim``,
    ``name``, ``cache_dir``, ``exact_max_chunks`` and the snapshot (``_dense``, ``_dense_lock``), and
    defines ``state_stamp``, ``_vectors_current`` and ``_iter_get``."""

    def field_values(self, field: str) -> set:
        """Distinct values of a paper field (``venue``, ``year``, ``source``; ``categories``: each category) across
        the index."""
        dense = self.dense_matrix()
        if dense is not None and field in dense.fields:
            values = dense.fields[field]
        else:
            values = [m.get(field) for page in self._iter_get(self.papers, ["metadatas"]) for m in page["metadatas"]]
        return {x for v in values for x in (v if isinstance(v, list) else [v]) if x not in (None, "")}

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

    def check_search(self) -> None:
        """Search both collections' HNSW indexes with a stored chunk vector; raises what Chroma raises
        when their files are damaged (exact search, used on small indexes, would not notice)."""
        got = self.chunks.get(limit=1, include=["embeddings"])
        if len(got["ids"]):
            vec = np.asarray(got["embeddings"][0], dtype=np.float32)
            self.hnsw_query(vec, 1)
            self.nearest_papers(vec, 1)
