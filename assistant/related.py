"""Related work: papers like a pasted text or an indexed paper, each explained by what it shares with the
query (matching sentence pairs) and where it differs (sentences on either side with no good match);
with an LLM, :func:`assistant.related_llm.llm_explanation` writes a short paragraph citing those sentences."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.retrieval import HybridRetriever, reciprocal_rank_fusion
from assistant.sanitize import valid_text
from assistant.settings import RelatedCalibration
from vectorstore.chunking import split_sentences
from vectorstore.papers import Paper

_CAL = RelatedCalibration()


class UnknownPaperError(KeyError):
    """No paper with that id is indexed."""

    def __str__(self) -> str:
        return str(self.args[0])


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
    """With an LLM: a short paragraph citing [Qn] / [Pn] sentences (see :mod:`assistant.related_llm`)."""


UNMATCHED_BELOW = _CAL.unmatched_below  # Settings.calibration.related
"""A sentence whose best cosine (MiniLM) on the other side is below this has "no good match"; matched
pairs of related dev.jsonl papers sit mostly above 0.5, pairs of unrelated sentences below 0.3."""


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


MAX_TEXT_CHARS = 50_000
"""Longest pasted text for related work (a long draft section; a whole paper is not a query)."""


def related_work(retriever: HybridRetriever, sentence_cache, text: str | None = None, paper_id: str | None = None,
                 k: int = 10, n_pairs: int = 2) -> list[RelatedPaper]:
    """Papers related to ``text`` or to the indexed paper ``paper_id`` (which is left out), best first.

    Ranking: RRF of dense similarity (paper-level, the query text's mean chunk embedding against the
    papers' mean chunk embeddings) and BM25 over chunks. Raises UnknownPaperError for an unknown id,
    ValueError when neither or both inputs are given or the text is empty or over MAX_TEXT_CHARS.
    """
    if (text is None) == (paper_id is None):
        raise ValueError("give either a text or a paper id")
    store = retriever.index.store
    exclude = set()
    if paper_id is not None:
        found = store.get_papers([paper_id])
        if paper_id not in found:
            raise UnknownPaperError(f"no indexed paper has id {paper_id!r}")
        text = found[paper_id].text
        exclude.add(paper_id)
        qvec = store.paper_embeddings([paper_id])[paper_id]
    else:
        if not text or not text.strip():
            raise ValueError("the text is empty: paste an abstract or a paragraph")
        text = valid_text(text)  # invalid UTF-8 (lone surrogates) becomes U+FFFD: tokenizers refuse it
        if len(text) > MAX_TEXT_CHARS:
            raise ValueError(f"the text is {len(text):,} characters long; the limit is {MAX_TEXT_CHARS:,}: "
                             "paste an abstract or a few paragraphs")
        qvec = text_embedding(retriever, text)
    nearest = store.nearest_papers(qvec, k + len(exclude) + _CAL.pool_extra)
    d_ids = [i for i, _ in nearest if i not in exclude]
    d_sim = dict(nearest)
    b_ids, _ = retriever.bm25(text)
    b_ids = [i for i in b_ids if i not in exclude]
    ids, scores = reciprocal_rank_fusion([d_ids, b_ids], k=retriever.rrf_k)
    ids, scores = ids[:k], scores[:k]
    papers = store.get_papers(ids)
    # The query's sentence vectors are made as the papers' are (pooled in their chunk), so a
    # sentence both share scores 1.0 and is never listed as a difference.
    if paper_id is not None:
        q_spans, q_vecs = sentence_cache.get([found[paper_id]])[paper_id]
    else:
        q_spans, q_vecs = sentence_cache.embed_text(text)
    q_sents = [x.text for x in q_spans]
    cache = sentence_cache.get([papers[i] for i in ids if i in papers])
    out = []
    for pid, s in zip(ids, scores):
        if pid not in papers:
            continue
        sents, vecs = cache[pid]
        p_sents = [x.text for x in sents]
        pairs = explain(q_sents, q_vecs, p_sents, vecs, n_pairs)
        # Shared: the closest pair always, further pairs only when they are a good match.
        pairs = pairs[:1] + [x for x in pairs[1:] if x.similarity >= UNMATCHED_BELOW]
        shown = {x.query_sentence for x in pairs} | {x.paper_sentence for x in pairs}
        q_only, p_only = differences(q_sents, q_vecs, p_sents, vecs, n_pairs + 2)
        q_only = [u for u in q_only if u.sentence not in shown][:n_pairs]
        p_only = [u for u in p_only if u.sentence not in shown][:n_pairs]
        out.append(RelatedPaper(papers[pid], s, float(d_sim.get(pid, 0.0)), pairs, q_only, p_only))
    return out


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
    from vectorstore.lexical import LexicalIndex

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
