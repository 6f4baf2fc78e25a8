"""The relevance judge's named features: what the best retrieved papers show about one question
(:class:`PaperSignals` per paper, :data:`JUDGE_FEATURES` over the ranked list), over the evidence stage's
:class:`assistant.evidence.Cues`.

Shapes: :func:`judge_features` gives ``(len(JUDGE_FEATURES),)`` float32.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from assistant.evidence import Cues, Sentence, sentence_answer_types
from assistant.question import coverage, names_in, text_terms


@dataclass(frozen=True)
class PaperSignals:
    """What the relevance judge reads about one retrieved paper (see :func:`paper_signals`)."""

    dense: float
    """Best chunk cosine of the paper to the question (retrieval's dense score)."""
    sentence: float
    """Best sentence cosine to the question (to a list question's topic)."""
    bm25: float
    """Retrieval's BM25 score of the paper's best chunk."""
    name_share: float
    """Share of the question's names the paper holds (0 when it names none)."""
    coverage: float
    """idf-weighted share of the question's content terms in the title and abstract."""
    sentence_coverage: float
    """The same within the paper's single best-covering sentence."""
    missing_idf: float
    """The largest idf (/ max idf) among the content terms the paper lacks: a specific word of the
    question that appears nowhere in it."""
    ask_coverage: float = 0.0
    """idf-weighted share of the asking clause's content terms (:attr:`Cues.ask`) in the paper."""
    ask_sentence: float = 0.0
    """Best cosine of the asking clause to one of the paper's sentences."""
    ask_sentence_coverage: float = 0.0
    """The asking clause's content coverage within the paper's best-covering sentence."""
    rest_coverage: float = 1.0
    """Content coverage of the question's terms outside its names (1 when it has no others): a
    question naming a paper's method but asking what the paper does not state is short of these."""
    answer_type_missing: float = 0.0
    """1 when the question expects a figure or a name (assistant.question.analysis.answer_type) and no sentence
    of the paper offers one (:func:`sentence_answer_types`): "what BLEU score did it get?" over an
    abstract that states no score."""


def paper_signals(cues: Cues, dense: float, bm25: float, text: str, sents: list[Sentence],
                  sentence_cos: np.ndarray, ask_cos: np.ndarray | None = None) -> PaperSignals:
    """:class:`PaperSignals` of one paper: ``text`` its title + abstract, ``sents`` its sentences (whose terms
    are read, not tokenized again), ``sentence_cos`` the cosine of each of its sentences to the question (or
    topic), ``ask_cos`` that of each sentence to the asking clause (default ``sentence_cos``)."""
    terms = text_terms(text)
    hit = [n for n in cues.names if names_in([n], text)]
    scov = max((coverage(s.terms, cues.content) for s in sents), default=0.0)
    missing = [w for t, w in cues.content.items() if t not in terms]
    ask, rest = cues.ask_content, cues.rest
    ask_cos = sentence_cos if ask_cos is None else ask_cos
    typed = cues.analysis.answer_type if cues.analysis is not None else "other"
    missing_type = typed in ("quantity", "name") and not any(
        typed in sentence_answer_types(s.text, cues.analysis) for s in sents)
    return PaperSignals(
        dense=float(dense), sentence=float(np.max(sentence_cos)) if len(sentence_cos) else 0.0, bm25=float(bm25),
        name_share=len(hit) / len(cues.names) if cues.names else 0.0, coverage=coverage(terms, cues.content),
        sentence_coverage=scov, missing_idf=max(missing, default=0.0) / cues.max_idf,
        ask_coverage=coverage(terms, ask), ask_sentence=float(np.max(ask_cos)) if len(ask_cos) else 0.0,
        ask_sentence_coverage=max((coverage(s.terms, ask) for s in sents), default=0.0),
        rest_coverage=coverage(terms, rest) if rest else 1.0, answer_type_missing=float(missing_type))


# Only how well the question matches the papers; nothing about how the question is worded (its length,
# whether it names something): on the training questions those describe how the unanswerable ones
# were written (near misses name a method) and refuse short questions such as "What is SyPE?" elsewhere.
JUDGE_FEATURES = (
    "dense",            # top paper: best chunk cosine
    "sentence",         # top paper: best sentence cosine
    "dense_gap",        # top paper's dense − the second's
    "sentence_gap",     # top paper's sentence − the second's
    "bm25_share",       # top paper's BM25 / (the question's Σ idf × (k1 + 1)): how much of the best possible match
    "coverage",         # top paper: content coverage
    "sentence_coverage",  # top paper: content coverage of its best-covering sentence
    "missing_idf",      # top paper: rarest content term it lacks (0 when it holds them all)
    "name_share",       # top paper: share of those names it holds
    "agree",            # the top paper is also the best by dense and by BM25 among those retrieved
    "ask_coverage",     # top paper: content coverage of the asking clause
    "ask_sentence",     # top paper: best cosine of the asking clause to a sentence
    "ask_sentence_coverage",  # top paper: the asking clause's coverage in its best-covering sentence
    "rest_coverage",    # top paper: coverage of the content terms outside the question's names
    "spread",           # top paper's dense − the mean dense of the other retrieved papers
    "answer_type_missing",  # top paper: the question expects a figure or a name and no sentence offers one
)


def judge_features(cues: Cues, ranked: list[PaperSignals]) -> np.ndarray:
    """Features (:data:`JUDGE_FEATURES`) of the retrieved papers, best first (``ranked``, at least one)."""
    top = ranked[0]
    second = ranked[1] if len(ranked) > 1 else PaperSignals(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)
    best_possible = sum(cues.content.values()) * 2.5  # BM25 k1 = 1.5: a term scores at most idf·(k1 + 1)
    cols = {
        "dense": top.dense, "sentence": top.sentence,
        "dense_gap": top.dense - second.dense, "sentence_gap": top.sentence - second.sentence,
        "bm25_share": top.bm25 / best_possible if best_possible > 0 else 0.0,
        "coverage": top.coverage, "sentence_coverage": top.sentence_coverage, "missing_idf": top.missing_idf,
        "name_share": top.name_share, "answer_type_missing": top.answer_type_missing,
        "ask_coverage": top.ask_coverage, "ask_sentence": top.ask_sentence,
        "ask_sentence_coverage": top.ask_sentence_coverage, "rest_coverage": top.rest_coverage,
        "agree": float(top.dense >= max(p.dense for p in ranked) and top.bm25 >= max(p.bm25 for p in ranked)),
        "spread": top.dense - float(np.mean([p.dense for p in ranked[1:]])) if len(ranked) > 1 else 0.0,
    }
    return np.array([cols[n] for n in JUDGE_FEATURES], dtype=np.float32)


def retrieved_signals(cues: Cues, papers: list, sentences: dict, qvec: np.ndarray,
                      rvec: np.ndarray | None = None) -> dict[str, PaperSignals]:
    """``{paper id: PaperSignals}`` for retrieved ``papers`` (assistant.retrieval.hybrid.ScoredPaper, best
    first); ``sentences`` is ``{paper id: (sentences, vectors)}`` (assistant.evidence.sentences.SentenceCache.get);
    ``rvec`` (default ``qvec``) is what the sentence cosines are taken to (a list question's topic)."""
    rvec = qvec if rvec is None else rvec
    out = {}
    for p in papers:
        sents, vecs = sentences[p.id]
        dense = p.dense if p.dense or not len(sents) else float(np.max(vecs @ qvec))
        avec = qvec if cues.ask_vec is None else cues.ask_vec
        out[p.id] = paper_signals(cues, dense, p.bm25, p.paper.searchable(), sents,
                                  vecs @ rvec if len(sents) else np.zeros(0, np.float32),
                                  vecs @ avec if len(sents) else np.zeros(0, np.float32))
    return out
