"""Related work's facets: what two texts share and where they differ by CSFCube's facets (task, method, results),
the facet of each sentence by the model ``benchmarks/fit_related.py`` fits (``facets.json``), and the facet
re-ranking ``eval --csfcube`` scores (:func:`facet_scores`)."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from assistant.settings import RelatedCalibration
from vectorstore.chunks import split_sentences

_CAL = RelatedCalibration()

SHARED_ABOVE = _CAL.shared_above  # Settings.calibration.related
"""A facet counts as shared when the two texts' statements of it are at least this similar (the cosine of
their facet centroids, :func:`facet_notes`); below it the two texts differ there."""

STATES_FACET = 0.3
"""A sentence states a facet when the facet model gives it at least this probability (or the facet is its
likeliest): "We generalise RoPE to irregularly sampled time series, so that attention can use continuous
timestamps" is task (0.63) and method (0.34) at once, and compared as either."""


@dataclass
class FacetNote:
    """One facet of the comparison: ``shared`` when the two texts state it alike (``similarity``: the cosine of
    their facet centroids ≥ SHARED_ABOVE), else a difference; the sentences quoted are the closest pair of the
    facet when shared (cosine × √(both facet probabilities)), else each side's most typical sentence of it
    (:func:`_typical`); either may be "" (that side states no
    such sentence)."""

    facet: str
    shared: bool
    query_sentence: str
    paper_sentence: str
    similarity: float


FACETS = ["background", "method", "result"]
"""CSFCube's facets (Mysore et al. 2021); shown to readers as FACET_NAMES."""
FACET_NAMES = {"background": "task", "method": "method", "result": "results"}
_FACET_MODEL = Path(__file__).with_name("facets.json")
_NOT_CONTENT = re.compile(r"https?://|\\url|\\href|github\.com|\b(?:code|data(?:set)?s?|models?|implementation)\b[^.]{0,40}"
                          r"\b(?:is|are|will be)\s+(?:publicly\s+)?(?:available|released)|\bavailable at\b", re.I)


def is_content(sentence: str) -> bool:
    """False for a sentence that points elsewhere instead of stating content (code links, "… is
    available at …"): it is never quoted as what a paper shares or how it differs."""
    return not _NOT_CONTENT.search(sentence)


def facet_features(vecs: np.ndarray) -> np.ndarray:
    """Features of an abstract's sentences for the facet model: each sentence's embedding, then its
    relative position ``r`` in [0, 1] and ``r²`` (shape ``(n, dim + 2)``)."""
    n = len(vecs)
    r = np.arange(n, dtype=float) / max(n - 1, 1)
    return np.hstack([np.asarray(vecs, dtype=float), r[:, None], (r ** 2)[:, None]])


@lru_cache(maxsize=1)
def _facet_model() -> tuple[np.ndarray, np.ndarray]:
    data = json.loads(_FACET_MODEL.read_text(encoding="utf-8"))
    return np.array(data["coef"]), np.array(data["intercept"])


def facet_probabilities(vecs: np.ndarray) -> np.ndarray:
    """``P(facet)`` of each sentence of one abstract (``vecs``: its sentence embeddings in order), shape
    ``(n, len(FACETS))``, by the logistic model fitted by ``benchmarks/fit_related.py`` (``facets.json``)."""
    if len(vecs) == 0:
        return np.zeros((0, len(FACETS)))
    coef, intercept = _facet_model()
    feats = facet_features(vecs)
    if feats.shape[1] != coef.shape[1]:  # another embedding model: position alone decides
        coef, feats = coef[:, -2:], feats[:, -2:]
    z = feats @ coef.T + intercept
    e = np.exp(z - z.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def sentence_facets(vecs: np.ndarray) -> list[str]:
    """The likeliest CSFCube facet of each sentence of one abstract (:func:`facet_probabilities`)."""
    return [FACETS[i] for i in np.argmax(facet_probabilities(vecs), axis=1)] if len(vecs) else []


def _stating(sents: list[str], probs: np.ndarray, f: int) -> list[int]:
    """The content sentences that state facet ``f`` (:data:`STATES_FACET`, or ``f`` their likeliest)."""
    return [i for i, s in enumerate(sents) if is_content(s)
            and (probs[i, f] >= STATES_FACET or int(np.argmax(probs[i])) == f)]


def _typical(idx: list[int], probs: np.ndarray, vecs: np.ndarray, f: int) -> int:
    """The sentence of ``idx`` quoted for facet ``f``: one whose likeliest facet it is, and of those the closest
    to its abstract's mean (a specific sentence rather than a generic opener)."""
    centre = vecs.mean(axis=0)
    return max(idx, key=lambda i: (int(np.argmax(probs[i])) == f, float(vecs[i] @ centre)))


def _centroid(vecs: np.ndarray, weights: np.ndarray) -> np.ndarray:
    v = (weights[:, None] * vecs).sum(axis=0)
    return v / (np.linalg.norm(v) or 1.0)


def facet_notes(query_sents: list[str], qvecs: np.ndarray, paper_sents: list[str], pvecs: np.ndarray,
                below: float = SHARED_ABOVE) -> list[FacetNote]:
    """Per facet (task, method, results), what the two texts share or how they differ.

    A facet is compared as each text states it as a whole: the centroid of its sentences that state the
    facet (:func:`_stating`), each weighted by its probability of that facet. Shared when the two centroids'
    cosine is ≥ ``below`` — so two method statements that say the same thing in other words are shared
    though no single sentence pair matches closely, and a method sentence the model reads as partly task
    still counts — quoting the facet's closest sentence pair; else a difference quoting each side's most
    typical sentence of the facet. A facet only the paper states is a difference with the query side "" (said
    only of a query of 3 sentences or more: a short pasted text states one facet). Facets in CSFCube's order."""
    if not paper_sents:
        return []
    qp, pp = facet_probabilities(qvecs), facet_probabilities(pvecs)
    notes = []
    for f, name in enumerate(FACETS):
        pi = _stating(paper_sents, pp, f)
        if not pi:
            continue
        p_rep = _typical(pi, pp, pvecs, f)
        qi = _stating(query_sents, qp, f)
        if not qi:
            if len(query_sents) > 2:
                notes.append(FacetNote(name, False, "", paper_sents[p_rep], 0.0))
            continue
        sim = float(_centroid(qvecs[qi], qp[qi, f]) @ _centroid(pvecs[pi], pp[pi, f]))
        if sim >= below:
            # The pair to quote: close, and each sentence about this facet (not a task sentence that is a
            # little method-like matched for its words).
            pair = (qvecs[qi] @ pvecs[pi].T) * np.sqrt(np.outer(qp[qi, f], pp[pi, f]))
            a, b = np.unravel_index(int(np.argmax(pair)), pair.shape)
            notes.append(FacetNote(name, True, query_sents[qi[a]], paper_sents[pi[b]], sim))
        else:
            q_rep = _typical(qi, qp, qvecs, f)
            notes.append(FacetNote(name, False, query_sents[q_rep], paper_sents[p_rep], sim))
    return notes


def facet_scores(encoder, facet_text: str, query_text: str, candidates: list[str],
                 facet_weight: float = _CAL.facet_weight, sentence_vectors=None,
                 lexical_weight: float = _CAL.facet_lexical_weight) -> list[float]:
    """Similarity of each candidate text to a query paper's facet (e.g. its method sentences).

    ``facet_weight · mean_f max_s cos(f, s) + (1 − facet_weight) · cos(query, mean of s)
    + lexical_weight · BM25(facet → candidate) / max BM25`` with f over the facet's sentences, s over the
    candidate's sentences, BM25 over the candidate pool. ``sentence_vectors(text) -> (n, dim) array`` may
    supply cached sentence embeddings. Weights: the middle of the plateau of a sweep on CSFCube
    (0.5–0.7 × 0.1–0.2 all score NDCG@20 0.60–0.62). Returns one float per candidate.
    """
    from vectorstore.store import LexicalIndex

    def sent_vecs(text: str) -> np.ndarray:
        return encoder.encode(split_sentences(text) or [text])

    sentence_vectors = sentence_vectors or sent_vecs
    f_vecs = encoder.encode(split_sentences(facet_text) or [facet_text])
    qv = encoder.encode([query_text])[0]
    lex = LexicalIndex.build([(str(i), str(i), t) for i, t in enumerate(candidates)], stamp="")
    bm25 = lex.scores(facet_text)
    bm25 = bm25 / (float(bm25.max()) or 1.0) if bm25.size else np.zeros(len(candidates))
    out = []
    for k, text in enumerate(candidates):
        cv = sentence_vectors(text)
        align = float((f_vecs @ cv.T).max(axis=1).mean())
        whole = cv.mean(axis=0)
        whole /= np.linalg.norm(whole) or 1.0
        out.append(facet_weight * align + (1 - facet_weight) * float(whole @ qv) + lexical_weight * float(bm25[k]))
    return out
