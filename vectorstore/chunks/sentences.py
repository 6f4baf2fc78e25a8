"""Sentence embeddings of every abstract, computed with its chunks and stored with them.

Grounding needs a vector per sentence (which sentence answers the question). Encoding each
sentence separately would double the cost of an ingest, and computing them at question time costs
~30 ms per unseen abstract. Instead each sentence's vector is the mean of the *contextual* token
embeddings of the chunk that holds it (:meth:`Encoder.encode_spans`): the same forward pass that
embeds the chunk. Each sentence is assigned to one chunk (the one holding most of it; overlap
repeats sentences in two chunks) and stored in that chunk's metadata as int8 with a per-row scale.
"""

from __future__ import annotations

import base64
import json

import numpy as np

from vectorstore.chunks.splitting import Chunk, sentence_spans
from vectorstore.encoding import Encoder
from vectorstore.papers import Paper

SPANS_KEY, VECS_KEY = "sentence_spans", "sentence_vecs"


def assign_sentences(paper: Paper, chunks: list[Chunk]) -> list[list[tuple[int, int]]]:
    """Per chunk, the sentences (absolute ``(start, end)`` in the abstract) whose vector it gives.

    Every sentence of :func:`sentence_spans` goes to exactly one chunk: the first one that holds most
    of its characters. A sentence longer than a chunk (split mid-sentence) keeps the part inside
    that chunk as its span for pooling; use :func:`pooling_spans` for the chunk-local offsets.
    """
    out: list[list[tuple[int, int]]] = [[] for _ in chunks]
    if not chunks:
        return out
    for s, e in sentence_spans(paper.text):
        overlaps = [max(0, min(e, c.end) - max(s, c.start)) for c in chunks]
        best = int(np.argmax(overlaps))
        if overlaps[best] > 0:
            out[best].append((s, e))
    return out


def pooling_spans(chunk: Chunk, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``spans`` (absolute) clipped to ``chunk`` and made relative to its text."""
    return [(max(s, chunk.start) - chunk.start, min(e, chunk.end) - chunk.start) for s, e in spans]


def spans_by_chunk(chunks: list[Chunk], papers: dict[str, Paper]) -> dict[str, list[tuple[int, int]]]:
    """``{chunk id: absolute spans of the sentences it carries}`` (:func:`assign_sentences` over all
    of each paper's chunks, which ``chunks`` must hold). ``papers`` maps paper ids to papers."""
    by_paper: dict[str, list[Chunk]] = {}
    for c in chunks:
        by_paper.setdefault(c.paper_id, []).append(c)
    out: dict[str, list[tuple[int, int]]] = {}
    for pid, own in by_paper.items():
        for c, sp in zip(own, assign_sentences(papers[pid], own)):
            out[c.id] = sp
    return out


def embed_chunks(chunks: list[Chunk], spans: dict[str, list[tuple[int, int]]], encoder: Encoder
                 ) -> tuple[np.ndarray, list[np.ndarray]]:
    """Embed ``chunks`` and their sentences (``spans``, from :func:`spans_by_chunk`) in one pass.

    Returns ``(chunk vectors (n, dim), per chunk its sentence vectors (len(spans[id]), dim))``.
    """
    return encoder.encode_spans([c.text for c in chunks], [pooling_spans(c, spans[c.id]) for c in chunks])


def pack(spans: list[tuple[int, int]], vecs: np.ndarray) -> dict[str, str]:
    """Chunk-metadata fields holding sentence spans and vectors (int8 per row, float32 scale).

    Rows are unit vectors, so int8 with a per-row max-abs scale keeps cosines within ~2e-3.
    """
    vecs = np.asarray(vecs, dtype=np.float32)
    vecs = vecs.reshape(len(spans), -1) if len(spans) else np.zeros((0, 0), np.float32)
    scale = np.abs(vecs).max(axis=1, keepdims=True) if len(spans) else np.zeros((0, 1), np.float32)
    scale = np.where(scale > 0, scale, 1.0).astype(np.float32)
    q = np.round(vecs / scale * 127).astype(np.int8)
    blob = scale.astype("<f4").tobytes() + q.tobytes()
    return {SPANS_KEY: json.dumps([list(s) for s in spans]), VECS_KEY: base64.b64encode(blob).decode("ascii")}


def unpack(meta: dict, dim: int) -> tuple[list[tuple[int, int]], np.ndarray] | None:
    """``(spans, unit vectors (n, dim))`` from chunk metadata written by :func:`pack`; None if absent
    or malformed (an index written before sentence vectors were stored)."""
    raw_spans, raw_vecs = meta.get(SPANS_KEY), meta.get(VECS_KEY)
    if raw_spans is None or raw_vecs is None:
        return None
    try:
        spans = [(int(s), int(e)) for s, e in json.loads(raw_spans)]
        blob = base64.b64decode(raw_vecs)
        n = len(spans)
        if len(blob) != n * 4 + n * dim:
            return None
        scale = np.frombuffer(blob[: n * 4], dtype="<f4").reshape(n, 1)
        q = np.frombuffer(blob[n * 4 :], dtype=np.int8).reshape(n, dim).astype(np.float32)
    except (ValueError, TypeError):
        return None
    if not np.all(np.isfinite(scale)) or np.any(scale <= 0):
        return None
    v = q * scale / 127
    v /= np.clip(np.linalg.norm(v, axis=1, keepdims=True), 1e-12, None)
    return spans, v.astype(np.float32)


def merge_paper(paper: Paper, parts: list[tuple[list[tuple[int, int]], np.ndarray]], dim: int
                ) -> np.ndarray | None:
    """A paper's sentence vectors in :func:`sentence_spans` order, from its chunks' stored parts.

    Returns ``(n_sentences, dim)``, or None when the stored sentences do not cover exactly the
    paper's sentences (an old index, or a different sentence splitter): the caller recomputes.
    """
    want = sentence_spans(paper.text)
    got: dict[tuple[int, int], np.ndarray] = {}
    for spans, vecs in parts:
        for sp, v in zip(spans, vecs):
            got.setdefault(sp, v)
    if set(got) != set(want):
        return None
    return np.vstack([got[sp] for sp in want]) if want else np.zeros((0, dim), np.float32)
