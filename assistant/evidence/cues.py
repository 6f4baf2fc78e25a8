"""What the learned decisions know about one question (:class:`Cues`, computed once) and the term coverage they
share. The judge's paper-level features are :mod:`assistant.relevance.features`.

Both models (:mod:`assistant.relevance.learned`) read only these numbers, computed the same way at training
(:mod:`assistant.learning.train`) and at answer time, from what the index already stores: the contextual
sentence vectors (vectorstore.sentences), the chunk cosine and BM25 score of retrieval, and the
BM25 index's document frequencies. The regular expressions below are *cues*: each is one named
feature the evidence model weighs (or ignores); none decides anything on its own. The evidence
ranker is the only sentence chooser (the hand-weighted rules it replaced are gone); its per-sentence
features are in :mod:`assistant.evidence.features`, over this module's :class:`Cues`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from assistant.question import FRAMING_TERMS, Question, asking_clause
from vectorstore.lexical import LexicalIndex, tokenize

@dataclass
class Cues:
    """What the features need to know about one question, computed once (:func:`question_cues`)."""

    question: str
    names: list[str]
    definition: bool
    quantity: bool
    known_figures: set[str]
    counts: set[str]
    weights: dict[str, float]
    """Stemmed question term → idf (BM25's, over the index's chunks)."""
    content: dict[str, float]
    """``weights`` without framing words ("which", "papers", "is there work"): what the question is about."""
    max_idf: float = 1.0
    """The idf of a term no chunk holds: the scale for idf features, so they read alike on any index size."""
    expands: list[re.Pattern] = field(default_factory=list)
    ask: str = ""
    """The clause that asks (from the last question word on: "… a separate batch-norm layer per domain.
    Which benchmarks did it report gains on?" → "Which benchmarks did it report gains on?"); the whole
    question when it has none. A question often describes its paper first, then asks a detail."""
    ask_weights: dict[str, float] = field(default_factory=dict)
    ask_vec: np.ndarray | None = None
    """The unit vector of ``ask`` (set by the caller, who holds the encoder; None: the question's)."""
    analysis: Question | None = None
    """The analysed question (its answer type and figures); None in hand-made cues."""


def question_cues(question: Question, lexical: LexicalIndex | None) -> Cues:
    """The :class:`Cues` of an analysed question (assistant.question.analysis.analyze); ``content`` counts a
    list question's topic, without its lead-in. ``ask_vec`` is left for the caller to set."""
    idf = lexical.idf if lexical is not None else (lambda t: 1.0)
    weights = {t: idf(t) for t in question.terms}
    about = weights if question.topic == question.text else {t: idf(t) for t in question.topic_terms}
    ask = asking_clause(question.text)
    return Cues(question=question.text, names=list(question.names), definition=question.definition,
                quantity=question.quantity, known_figures=set(question.figures), counts=set(question.counts),
                weights=weights, content={t: w for t, w in about.items() if t not in FRAMING_TERMS},
                max_idf=idf("\x00 no such term") if lexical is not None else 1.0,
                expands=[re.compile(rf"\w[\w\s-]{{3,}}\(\s*{re.escape(n)}s?\s*\)", re.I) for n in question.names],
                ask=ask, ask_weights={t: idf(t) for t in tokenize(ask)}, analysis=question)


@lru_cache(maxsize=65536)
def sentence_terms(text: str) -> tuple[str, ...]:
    """:func:`vectorstore.lexical.tokenize` of an abstract's sentence, cached: the same sentences come
    back question after question, and stemming is most of the features' cost."""
    return tuple(tokenize(text))


def coverage(terms: set[str], weights: dict[str, float]) -> float:
    """Weighted share of ``weights``' terms present in ``terms`` (a text's stemmed terms), in [0, 1]."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total > 0 else 0.0
