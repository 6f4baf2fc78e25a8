"""Related work: papers like a pasted text or an indexed paper, each explained by what it shares with the
query (matching sentence pairs) and where it differs (sentences on either side with no good match);
with an LLM, :func:`assistant.research.related_llm.llm_explanation` writes a short paragraph citing those sentences."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from assistant.research.related_list import MAX_TEXT_CHARS, RelatedList, apply_bar, shown_percent, within_budget
from assistant.retrieval import HybridRetriever, reciprocal_rank_fusion
from assistant.settings import RelatedCalibration
from assistant.text import valid_text
from vectorstore.chunks import split_sentences
from vectorstore.papers import Paper

_CAL = RelatedCalibration()


class UnknownPaperError(KeyError):
    """No paper with that id is indexed."""

    def __str__(self) -> str:
        return str(self.args[0])


def unknown_paper(store, paper_id: str) -> UnknownPaperError:
    """The error for an id ``store`` does not hold, naming up to 3 close ids (difflib ratio ≥ 0.8) or, when
    none is close, what an id looks like."""
    import difflib

    close = difflib.get_close_matches(paper_id, list(store.paper_hashes()), n=3, cutoff=0.8) if paper_id else []
    hint = (f"; did you mean {', '.join(close)}?" if close
            else "; an id is a paper list's file stem, '#' and the paper's number (see list or search)")
    return UnknownPaperError(f"no indexed paper has id {paper_id!r}{hint}")


@dataclass
class SentencePair:
    """A query sentence and the paper sentence most similar to it (cosine, MiniLM)."""

    query_sentence: str
    paper_sentence: str
    similarity: float


@dataclass
class Unmatched:
    """A sentence with no good counterpart on the other side, and its best similarity there."""

    sentence: str
    best_similarity: float


@dataclass
class RelatedPaper:
    """A related paper, its fused score, its dense (embedding) similarity and the explanation:
    ``pairs`` (shared), ``query_only`` / ``paper_only`` (differs)."""

    paper: Paper
    score: float
    similarity: float
    pairs: list[SentencePair]
    query_only: list[Unmatched] = field(default_factory=list)
    paper_only: list[Unmatched] = field(default_factory=list)
    summary: str = ""
    """With an LLM: a short paragraph citing [Qn] / [Pn] sentences (see :mod:`assistant.research.related_llm`)."""
    facets: list[FacetNote] = field(default_factory=list)
    """What the two share and where they differ, by facet (task, method, results), content sentences only."""

    bar: float = 0.0
    """The similarity bar of the search that found it (the shown percentage sits on its side of it)."""

    @property
    def percent(self) -> int:
        """The dense cosine similarity as a whole percentage (what the page and the CLI show), on the
        same side of the bar as the similarity (:func:`assistant.research.related_list.shown_percent`)."""
        return shown_percent(self.similarity, self.bar)


UNMATCHED_BELOW = _CAL.unmatched_below  # Settings.calibration.related
"""A sentence whose best cosine (MiniLM) on the other side is below this has "no good match"; fitted on
CSFCube (settings.RelatedCalibration.unmatched_below: related pairs' sentences median 0.585, unrelated 0.404)."""


SHARED_ABOVE = _CAL.shared_above  # Settings.calibration.related
"""A facet counts as shared when its closest sentence pair has at least this cosine; below it the two
texts differ there. Set by hand: pairs below 0.50 read as loosely related words ("gradient" in unlearning
vs in PINN training), not as a shared task or method; UNMATCHED_BELOW, fitted on CSFCube, is the same cut."""


@dataclass
class FacetNote:
    """One facet of the comparison: ``shared`` when the closest sentence pair of that facet is a good
    match (cosine ≥ SHARED_ABOVE), else a difference; either sentence may be "" (that side states no
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


def sentence_facets(vecs: np.ndarray) -> list[str]:
    """The CSFCube facet of each sentence of one abstract (``vecs``: its sentence embeddings in order),
    by the logistic model fitted by ``benchmarks/fit_related.py`` (weights in ``assistant/research/facets.json``)."""
    if len(vecs) == 0:
        return []
    coef, intercept = _facet_model()
    feats = facet_features(vecs)
    if feats.shape[1] != coef.shape[1]:  # another embedding model: position alone decides
        coef, feats = coef[:, -2:], feats[:, -2:]
    return [FACETS[i] for i in np.argmax(feats @ coef.T + intercept, axis=1)]


def facet_notes(query_sents: list[str], qvecs: np.ndarray, paper_sents: list[str], pvecs: np.ndarray,
                below: float = SHARED_ABOVE) -> list[FacetNote]:
    """Per facet (task, method, results), what the two texts share or how they differ.

    For each facet stated by both sides: the closest pair of that facet's content sentences (see
    :func:`is_content`) — shared when its cosine is ≥ ``below``, else a difference quoting each side's
    most representative sentence of the facet (closest to its own abstract's mean, so a specific
    sentence rather than a generic opener). A facet only the paper states is a difference with the
    query side "". Facets are in CSFCube's order."""
    def by_facet(sents, vecs):
        keep = [i for i, s in enumerate(sents) if is_content(s)]
        labels = sentence_facets(vecs) if len(vecs) else []
        centre = vecs.mean(axis=0) if len(vecs) else None
        return {f: [(i, float(vecs[i] @ centre)) for i in keep if labels[i] == f] for f in FACETS}

    if not paper_sents:
        return []
    qf, pf = by_facet(query_sents, qvecs), by_facet(paper_sents, pvecs)
    notes = []
    for f in FACETS:
        if not pf[f]:
            continue
        p_rep = max(pf[f], key=lambda t: t[1])[0]
        if not qf[f]:
            if len(query_sents) > 2:  # a short pasted text states one facet: say nothing of the others
                notes.append(FacetNote(f, False, "", paper_sents[p_rep], 0.0))
            continue
        qi = [i for i, _ in qf[f]]
        pi = [i for i, _ in pf[f]]
        sims = qvecs[qi] @ pvecs[pi].T
        a, b = np.unravel_index(int(np.argmax(sims)), sims.shape)
        best = float(sims[a, b])
        if best >= below:
            notes.append(FacetNote(f, True, query_sents[qi[a]], paper_sents[pi[b]], best))
        else:
            q_rep = max(qf[f], key=lambda t: t[1])[0]
            notes.append(FacetNote(f, False, query_sents[q_rep], paper_sents[p_rep], best))
    return notes


def differences(query_sents: list[str], qvecs: np.ndarray, paper_sents: list[str], pvecs: np.ndarray,
                n: int = 2, below: float = UNMATCHED_BELOW) -> tuple[list[Unmatched], list[Unmatched]]:
    """``(query_only, paper_only)``: up to ``n`` sentences of each side whose best match on the other
    side is below ``below``, least similar first."""
    if not query_sents or not paper_sents:
        return ([Unmatched(s, 0.0) for s in query_sents[:n]], [Unmatched(s, 0.0) for s in paper_sents[:n]])
    sims = qvecs @ pvecs.T
    q_best, p_best = sims.max(axis=1), sims.max(axis=0)
    q_only = [Unmatched(query_sents[i], float(q_best[i])) for i in np.argsort(q_best) if q_best[i] < below][:n]
    p_only = [Unmatched(paper_sents[j], float(p_best[j])) for j in np.argsort(p_best) if p_best[j] < below][:n]
    return q_only, p_only


def text_embedding(retriever: HybridRetriever, text: str) -> np.ndarray:
    """Embedding of an arbitrarily long text: normalized mean of its chunk embeddings (shape ``(dim,)``)."""
    enc = retriever.index.encoder
    chunker = retriever.index.chunker()
    chunks = chunker.split(Paper(id="query", text=text))
    v = enc.encode([c.text for c in chunks]).mean(axis=0)
    return v / (np.linalg.norm(v) or 1.0)


def explain(query_sents: list[str], qvecs: np.ndarray, paper_sents: list[str], pvecs: np.ndarray,
            n_pairs: int = 2) -> list[SentencePair]:
    """Up to ``n_pairs`` best (query sentence ↔ paper sentence) pairs, each sentence used once."""
    if not query_sents or not paper_sents:
        return []
    sims = qvecs @ pvecs.T
    pairs, used_q, used_p = [], set(), set()
    for flat in np.argsort(-sims, axis=None):
        i, j = divmod(int(flat), sims.shape[1])
        if i in used_q or j in used_p:
            continue
        pairs.append(SentencePair(query_sents[i], paper_sents[j], float(sims[i, j])))
        used_q.add(i)
        used_p.add(j)
        if len(pairs) == n_pairs:
            break
    return pairs


def related_work(retriever: HybridRetriever, sentence_cache, text: str | None = None, paper_id: str | None = None,
                 k: int = 10, n_pairs: int = 2, bar: float | None = None) -> RelatedList:
    """Papers related to ``text`` or to the indexed paper ``paper_id`` (left out), most similar first.

    Candidates: the top ``k`` of the RRF of dense similarity (paper-level, mean chunk embeddings) and
    BM25 over chunks, shown by dense similarity, the figure shown (one number). Those whose dense cosine is
    below ``bar`` are dropped (None: ``calibration.related.min_similarity``, or ``min_similarity_short``
    for a text of fewer than ``short_text_sentences`` sentences, both fitted on CSFCube; 0: keep all)
    and counted in ``below_bar``; if none clears it, the first ``related_list.NEAREST_SHOWN`` are kept
    anyway (``nearest_only``); up to ``NEAR_MISSES`` below it are ``near``. Raises UnknownPaperError (naming
    close ids), or ValueError for neither or both inputs, an empty text or one over MAX_TEXT_CHARS. A text
    over TEXT_BUDGET_CHARS is read to that budget (``.text``), and ``.note`` says so."""
    paper_id, query, text, cut, qvec = _query(retriever, text, paper_id)
    store = retriever.index.store
    exclude = {paper_id} if query is not None else set()
    nearest = store.nearest_papers(qvec, k + len(exclude) + _CAL.pool_extra)
    d_ids = [i for i, _ in nearest if i not in exclude]
    d_sim = dict(nearest)
    b_ids, _ = retriever.bm25(text)
    b_ids = [i for i in b_ids if i not in exclude]
    ids, scores = reciprocal_rank_fusion([d_ids, b_ids], k=retriever.rrf_k)
    ids, scores = ids[:k], scores[:k]
    # The query's sentence vectors are made as the papers' are (pooled in their chunk), so a
    # sentence both share scores 1.0 and is never listed as a difference.
    q_spans, q_vecs = sentence_cache.get([query])[paper_id] if query is not None else sentence_cache.embed_text(text)
    q_sents = [x.text for x in q_spans]
    if bar is None:
        short = query is None and len(q_sents) < _CAL.short_text_sentences
        bar = _CAL.min_similarity_short if short else _CAL.min_similarity
    # Fusion picks the candidates; they are shown most similar first, so the order is the figure shown.
    ranked = sorted(zip(ids, scores), key=lambda t: -d_sim.get(t[0], 0.0))
    kept, nearest_only, near_ids = apply_bar(ranked, d_sim, bar)
    papers = store.get_papers([i for i, _ in kept] + near_ids)
    cache = sentence_cache.get([papers[i] for i, _ in kept if i in papers])
    out = [_explained(papers[pid], s, float(d_sim.get(pid, 0.0)), (q_sents, q_vecs), cache[pid], n_pairs, bar)
           for pid, s in kept if pid in papers]
    near = [(papers[i], float(d_sim.get(i, 0.0))) for i in near_ids if i in papers]
    return RelatedList(out, considered=len(ids), below_bar=len(ids) - len(out), bar=bar, nearest_only=nearest_only,
                       near=near, query_label=query.display() if query is not None else "",
                       text="" if query is not None else text, note="" if query is not None else cut)


def _query(retriever: HybridRetriever, text: str | None, paper_id: str | None) -> tuple:
    """related_work's input as ``(paper id or None, the paper or None, text read, note, query vector)``;
    raises as related_work says."""
    if (text is None) == (paper_id is None):
        raise ValueError("give either a text or a paper id")
    paper_id = paper_id.strip() if paper_id is not None else None  # a pasted id: spaces around it are no part of it
    store = retriever.index.store
    if paper_id is not None:
        found = store.get_papers([paper_id])
        if paper_id not in found:
            raise unknown_paper(store, paper_id)
        return paper_id, found[paper_id], found[paper_id].text, "", store.paper_embeddings([paper_id])[paper_id]
    if not text or not text.strip():
        raise ValueError("the text is empty: paste an abstract or a paragraph")
    text = valid_text(text)  # invalid UTF-8 (lone surrogates) becomes U+FFFD: tokenizers refuse it
    if len(text) > MAX_TEXT_CHARS:
        raise ValueError(f"the text is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}: "
                         "paste an abstract or a few paragraphs")
    text, cut = within_budget(text)  # a long draft: its start, and a note saying so
    return None, None, text, cut, text_embedding(retriever, text)


def _explained(paper: Paper, score: float, similarity: float, query_side: tuple, paper_side: tuple, n_pairs: int,
               bar: float) -> RelatedPaper:
    """One related paper with what it shares with the query and how it differs; ``query_side`` and
    ``paper_side``: ``(sentences, their vectors)`` as the sentence cache gives them."""
    q_sents, q_vecs = query_side
    p_sents, vecs = [x.text for x in paper_side[0]], paper_side[1]
    pairs = explain(q_sents, q_vecs, p_sents, vecs, n_pairs)
    # Shared: the closest pair always, further pairs only when they are a good match.
    pairs = pairs[:1] + [x for x in pairs[1:] if x.similarity >= UNMATCHED_BELOW]
    shown = {x.query_sentence for x in pairs} | {x.paper_sentence for x in pairs}
    q_only, p_only = differences(q_sents, q_vecs, p_sents, vecs, n_pairs + 2)
    q_only = [u for u in q_only if u.sentence not in shown][:n_pairs]
    p_only = [u for u in p_only if u.sentence not in shown][:n_pairs]
    # Shares and differs quote content, never a code link or an "available at" line.
    pairs = [x for x in pairs if is_content(x.query_sentence) and is_content(x.paper_sentence)] or pairs[:1]
    q_only = [u for u in q_only if is_content(u.sentence)]
    p_only = [u for u in p_only if is_content(u.sentence)]
    return RelatedPaper(paper, score, similarity, pairs, q_only, p_only,
                        facets=facet_notes(q_sents, q_vecs, p_sents, vecs), bar=bar)


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
