"""Related work: papers like a pasted text or an indexed paper, each explained by what it shares with the
query (matching sentence pairs) and where it differs (sentences on either side with no good match);
with an LLM, :func:`assistant.research.related_llm.llm_explanation` writes a short paragraph citing those sentences."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.research.facets import (FACET_NAMES, FACETS, SHARED_ABOVE, FacetNote, facet_features,  # noqa: F401
                                       facet_notes, facet_scores, is_content, sentence_facets)
from assistant.research.related_list import MAX_TEXT_CHARS, RelatedList, apply_bar, shown_percent, within_budget
from assistant.research.related_score import score_pool
from assistant.retrieval import HybridRetriever
from assistant.settings import RelatedCalibration
from assistant.text import valid_text
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
    """A related paper, its relevance (``score`` and ``similarity``, the same number: what orders the list, is
    shown and is compared with the bar; :mod:`assistant.research.related_score`), the two parts it is made of
    (``cosine``: the dense embedding cosine, ``lexical``: the TF-IDF cosine) and the explanation: ``pairs``
    (shared), ``query_only`` / ``paper_only`` (differs)."""

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
    """The bar of the search that found it (the shown percentage sits on its side of it)."""
    cosine: float = 0.0
    lexical: float = 0.0

    @property
    def percent(self) -> int:
        """The relevance as a whole percentage (what the page and the CLI show), on the same side of the bar
        as the relevance itself (:func:`assistant.research.related_list.shown_percent`)."""
        return shown_percent(self.similarity, self.bar)


UNMATCHED_BELOW = _CAL.unmatched_below  # Settings.calibration.related
"""A sentence whose best cosine (MiniLM) on the other side is below this has "no good match"; fitted on
CSFCube (settings.RelatedCalibration.unmatched_below: related pairs' sentences median 0.585, unrelated 0.404)."""


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
    """Papers related to ``text`` or to the indexed paper ``paper_id`` (left out), most relevant first.

    Candidates: the papers nearest by dense similarity (paper-level, mean chunk embeddings) and those BM25
    ranks over chunks, each scored by its relevance (:func:`assistant.research.related_score.score_pool`:
    dense cosine and TF-IDF cosine, weighted by ``calibration.related.dense_weight``); the ``k`` most
    relevant are considered, shown in that order with that figure. Those below ``bar`` (None:
    ``calibration.related.min_similarity``, or ``min_similarity_short`` for a text of fewer than
    ``short_text_sentences`` sentences, both fitted on CSFCube; 0: keep all) are dropped and counted in
    ``below_bar``; if none clears it, the first ``related_list.NEAREST_SHOWN`` are kept anyway
    (``nearest_only``); up to ``NEAR_MISSES`` below it are ``near``, on the same score. Raises
    UnknownPaperError (naming close ids), or ValueError for neither or both inputs, an empty text or one over
    MAX_TEXT_CHARS. A text over TEXT_BUDGET_CHARS is read to that budget (``.text``), and ``.note`` says so."""
    paper_id, query, text, cut, qvec = _query(retriever, text, paper_id)
    exclude = {paper_id} if query is not None else set()
    pool, parts, papers = score_pool(retriever, text, qvec, exclude, k, _CAL.pool_extra, _CAL.dense_weight)
    ranked = pool[:k]  # most relevant first: the order is the figure shown
    # The query's sentence vectors are made as the papers' are (pooled in their chunk), so a
    # sentence both share scores 1.0 and is never listed as a difference.
    q_spans, q_vecs = sentence_cache.get([query])[paper_id] if query is not None else sentence_cache.embed_text(text)
    q_sents = [x.text for x in q_spans]
    if bar is None:
        short = query is None and len(q_sents) < _CAL.short_text_sentences
        bar = _CAL.min_similarity_short if short else _CAL.min_similarity
    kept, nearest_only, near_ids = apply_bar(ranked, dict(ranked), bar)
    cache = sentence_cache.get([papers[i] for i, _ in kept])
    out = [_explained(papers[pid], s, parts[pid], (q_sents, q_vecs), cache[pid], n_pairs, bar) for pid, s in kept]
    near = [(papers[i], dict(ranked)[i]) for i in near_ids]
    return RelatedList(out, considered=len(ranked), below_bar=len(ranked) - len(out), bar=bar,
                       nearest_only=nearest_only, near=near, query_label=query.display() if query is not None else "",
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


def _explained(paper: Paper, score: float, parts: tuple[float, float], query_side: tuple, paper_side: tuple,
               n_pairs: int, bar: float) -> RelatedPaper:
    """One related paper with what it shares with the query and how it differs; ``score``: its relevance,
    ``parts``: ``(dense cosine, tf-idf cosine)``; ``query_side`` and ``paper_side``: ``(sentences, their
    vectors)`` as the sentence cache gives them."""
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
    return RelatedPaper(paper, score, score, pairs, q_only, p_only, facets=facet_notes(q_sents, q_vecs, p_sents, vecs),
                        bar=bar, cosine=parts[0], lexical=parts[1])
