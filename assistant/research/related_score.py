"""Related work's relevance score: what orders the papers, the figure shown beside each, the bar and the near
misses, one number (issue 33, item 5).

``relevance = w · cosine + (1 − w) · tf-idf cosine``: the dense cosine of the two texts' embeddings (mean of
their chunk embeddings, as ingest stores a paper's) and the cosine of their TF-IDF term vectors (BM25's
stemmed terms, log term frequency, the index's idf), each in [0, 1] for two abstracts and comparable across
queries, so a bar on their sum means the same for every search. The dense cosine alone ordered related work
by the figure it showed and found the best abstract first less often than the fusion of both rankings it
replaced (CSFCube and a set of pasted drafts: docs/quality.md); ``w`` is fitted on CSFCube
(``calibration.related.dense_weight``, ``benchmarks/fit_related.py``)."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np

from vectorstore.store import tokenize


def tfidf_vector(text: str, idf) -> dict[str, float]:
    """``text``'s terms (:func:`vectorstore.store.tokenize`) weighted ``(1 + ln tf) · idf(term)``, L2-normalised;
    ``idf``: a term's weight (:meth:`vectorstore.store.LexicalIndex.idf`)."""
    counts = Counter(tokenize(text))
    vec = {t: (1.0 + math.log(n)) * idf(t) for t, n in counts.items()}
    norm = math.sqrt(sum(v * v for v in vec.values())) or 1.0
    return {t: v / norm for t, v in vec.items()}


def tfidf_cosines(query: str, texts: list[str], idf) -> np.ndarray:
    """The TF-IDF cosine of ``query`` with each of ``texts`` (shape ``(len(texts),)``, in [0, 1])."""
    q = tfidf_vector(query, idf)
    out = np.zeros(len(texts))
    for i, text in enumerate(texts):
        out[i] = sum(q.get(t, 0.0) * v for t, v in tfidf_vector(text, idf).items())
    return out


def relevance(cosine, lexical, dense_weight: float) -> np.ndarray:
    """The relevance score: ``dense_weight · cosine + (1 − dense_weight) · lexical``, clipped to [0, 1]."""
    cos = np.clip(np.asarray(cosine, dtype=float), 0.0, 1.0)
    return dense_weight * cos + (1.0 - dense_weight) * np.clip(np.asarray(lexical, dtype=float), 0.0, 1.0)


def score_pool(retriever, text: str, qvec: np.ndarray, exclude: set[str], k: int, extra: int,
               dense_weight: float) -> tuple[list[tuple[str, float]], dict[str, tuple[float, float]], dict]:
    """``([(id, relevance)] best first, {id: (cosine, tf-idf cosine)}, {id: Paper})`` for the papers nearest
    ``qvec`` (``k + extra`` of them) and those BM25 ranks for ``text`` (its top chunks), less ``exclude``:
    every candidate either ranking finds, scored by :func:`relevance` and ordered by it."""
    store = retriever.index.store
    nearest = store.nearest_papers(qvec, k + len(exclude) + extra)
    cosine = {i: float(c) for i, c in nearest if i not in exclude}
    b_ids, _ = retriever.bm25(text)
    lexical_only = [i for i in b_ids if i not in exclude and i not in cosine]
    for pid, vec in store.paper_embeddings(lexical_only).items():
        cosine[pid] = float(np.asarray(vec) @ qvec)
    papers = store.get_papers(list(cosine))
    ids = [i for i in cosine if i in papers]
    lexical = tfidf_cosines(text, [papers[i].text for i in ids], retriever.index.lexical().idf)
    scores = relevance([cosine[i] for i in ids], lexical, dense_weight)
    order = sorted(range(len(ids)), key=lambda n: (-scores[n], ids[n]))
    ranked = [(ids[n], float(scores[n])) for n in order]
    return ranked, {ids[n]: (cosine[ids[n]], float(lexical[n])) for n in order}, papers
