"""A question's terms weighed: idf weights of its stemmed terms, its content terms (framing words left out),
and how much of them a text holds. Read by retrieval, evidence and the judge alike."""

from __future__ import annotations

from functools import lru_cache

from assistant.question.analysis import FRAMING_TERMS, Question
from assistant.settings import SentenceCalibration
from vectorstore.store import LexicalIndex, tokenize

_DEFAULTS = SentenceCalibration()


def term_weights(terms, lexical: LexicalIndex | None, named=frozenset(),
                 name_weight: float = _DEFAULTS.name_term_weight) -> dict[str, float]:
    """Stemmed terms (a Question's ``terms``) → weight: idf, times ``name_weight`` for the terms in
    ``named`` (a Question's ``name_terms``: names and numbers such as 'PEER', '73ms')."""
    weights = {}
    for t in terms:
        w = lexical.idf(t) if lexical is not None else 1.0
        weights[t] = w * (name_weight if t in named else 1.0)
    return weights


def question_weights(question: Question, lexical: LexicalIndex | None,
                     name_weight: float = _DEFAULTS.name_term_weight) -> dict[str, float]:
    """:func:`term_weights` of a question's own terms."""
    return term_weights(question.terms, lexical, question.name_terms, name_weight)


@lru_cache(maxsize=4096)
def text_terms(text: str) -> frozenset[str]:
    """The terms of ``text`` (:func:`vectorstore.store.lexical.tokenize`), cached: a paper's title and abstract
    (``Paper.searchable()``) come back question after question, and retrieval, the judge and follow-ups
    all read them."""
    return frozenset(tokenize(text))


def coverage(terms: frozenset[str] | set[str], weights: dict[str, float]) -> float:
    """Weighted share of ``weights``' terms present in ``terms`` (a text's terms), in [0, 1]."""
    total = sum(weights.values())
    return sum(w for t, w in weights.items() if t in terms) / total if total > 0 else 0.0


def lexical_coverage(text: str, weights: dict[str, float]) -> float:
    """:func:`coverage` of ``text`` (its :func:`text_terms`)."""
    return coverage(text_terms(text), weights)


def content_weights(weights: dict[str, float]) -> dict[str, float]:
    """``weights`` (stemmed term → weight, as :func:`term_weights`) without framing words."""
    return {t: w for t, w in weights.items() if t not in FRAMING_TERMS}
