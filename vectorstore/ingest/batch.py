"""One batch of an ingest, in two steps: :func:`embed_batch` chunks and embeds its papers (re-using the
vectors the store already holds for a chunk, by id or by text), :func:`store_batch` writes the chunks, then
removes the edited papers' stale ones, then writes the paper records, the commit marks. Vectors are float32,
L2-normalized, of shape ``(chunks, dim)``."""

from __future__ import annotations

import json
from dataclasses import dataclass

import numpy as np

from vectorstore.store import text_key
from vectorstore.chunks import Chunk, Chunker, SPANS_KEY, VECS_KEY, embed_chunks, pack, spans_by_chunk, unpack
from vectorstore.index import Index
from vectorstore.papers import Paper


@dataclass
class _Embedded:
    """One batch ready to store: its chunks, their vectors and packed sentence vectors."""

    batch: list[tuple[Paper, str]]
    papers: dict[str, Paper]
    chunks: list[Chunk]
    vecs: np.ndarray
    sentence_meta: list[dict]
    stale: list[str]
    reused: int


def stored_by_text(todo: list[tuple[Paper, str]], index: Index, chunker: Chunker
                   ) -> tuple[dict[str, list[Chunk]], dict[str, tuple[np.ndarray, dict]]]:
    """``({paper id: its chunks}, {text key: stored (vector, metadata)})`` for the papers to ingest,
    when the index already holds chunks: a paper list that was renumbered (an abstract deleted
    from the middle) or renamed gives old texts new ids, and their vectors need no new encoding.
    Both empty for an empty index (nothing to find)."""
    if not todo or not index.store.counts()[1]:
        return {}, {}
    chunks_of = {p.id: chunker.split(p) for p, _ in todo}
    keys = [text_key(c.text) for cs in chunks_of.values() for c in cs]
    return chunks_of, index.store.chunk_records_by_text(keys)


def embed_batch(batch: list[tuple[Paper, str]], index: Index, chunker: Chunker,
                chunks_of: dict[str, list[Chunk]] | None = None,
                by_text: dict[str, tuple[np.ndarray, dict]] | None = None) -> _Embedded:
    """Chunk and embed one batch of papers, re-using stored vectors where the store has them: by
    chunk id, else (``by_text``, from :func:`stored_by_text`) by the chunk's text."""
    store = index.store
    papers = {p.id: p for p, _ in batch}
    chunks_of, by_text = chunks_of or {}, by_text or {}
    chunks: list[Chunk] = [c for p, _ in batch for c in (chunks_of.get(p.id) or chunker.split(p))]
    old = store.chunk_ids_by_paper(list(papers))
    have = {cid for ids in old.values() for cid in ids}
    new_ids = {c.id for c in chunks}
    # Chunk ids hash the paper id, the offset and the text: a stored id holds this very chunk's
    # vector. Failing that, a stored chunk with the same text (under another id) holds it too.
    known = store.chunk_records([c.id for c in chunks if c.id in have])
    spans = spans_by_chunk(chunks, papers)
    vecs = np.zeros((len(chunks), index.encoder.dim), dtype=np.float32)
    sentence_meta: list[dict] = [{} for _ in chunks]
    fresh = []
    for k, c in enumerate(chunks):
        record = known.get(c.id) or by_text.get(text_key(c.text))
        reused = _reuse(record, c, spans[c.id], index.encoder.dim) if record else None
        if reused is None:
            fresh.append(k)
        else:
            vecs[k], sentence_meta[k] = reused
    if fresh:
        vecs[fresh], span_vecs = embed_chunks([chunks[k] for k in fresh], spans, index.encoder)
        for k, sv in zip(fresh, span_vecs):
            sentence_meta[k] = pack(spans[chunks[k].id], sv)
    stale = [cid for cid in have if cid not in new_ids]
    return _Embedded(batch, papers, chunks, vecs, sentence_meta, stale, len(chunks) - len(fresh))


def _reuse(record: tuple[np.ndarray, dict], chunk: Chunk, spans: list[tuple[int, int]], dim: int
           ) -> tuple[np.ndarray, dict] | None:
    """``(vector, sentence metadata)`` for ``chunk`` from a stored chunk record with the same text, or
    None when its sentences were cut differently (relative to the chunk) or were never stored."""
    vec, meta = record
    stored = unpack(meta, dim)
    old_start = int(meta.get("start", 0))
    if stored is None or [(a - old_start, b - old_start) for a, b in stored[0]] != \
            [(a - chunk.start, b - chunk.start) for a, b in spans]:
        return None
    return vec, {SPANS_KEY: json.dumps([list(sp) for sp in spans]), VECS_KEY: meta[VECS_KEY]}


def store_batch(e: _Embedded, index: Index, write_batch: int = 4096, paths: dict[str, str] | None = None
                ) -> tuple[int, int, int]:
    """Store one embedded batch: the new chunks, then the edited papers' stale chunks go, then the
    paper records (the commit marks).

    The old chunks go only once the new ones are written: a write that fails (a full disk) leaves
    an edited paper findable by its old text, its record unchanged, so the next ingest redoes it.
    Returns ``(chunks written, of which re-used from the store without embedding, papers)``.
    """
    store = index.store
    step = max(1, min(write_batch, store.max_batch_size()))
    for j in range(0, len(e.chunks), step):
        store.upsert_chunks(e.chunks[j : j + step], e.vecs[j : j + step], e.papers, e.sentence_meta[j : j + step],
                            {p.id: h for p, h in e.batch})
    if e.stale:
        store.delete_chunks(e.stale)
    # Paper records last: they are the commit marks.
    rows: dict[str, list[int]] = {}
    for k, c in enumerate(e.chunks):
        rows.setdefault(c.paper_id, []).append(k)
    paper_vecs = []
    for p, _ in e.batch:
        v = e.vecs[rows[p.id]].mean(axis=0)
        paper_vecs.append(v / (np.linalg.norm(v) or 1.0))
    store.upsert_papers([p for p, _ in e.batch], [h for _, h in e.batch], np.vstack(paper_vecs), paths)
    return len(e.chunks), e.reused, len(e.batch)
