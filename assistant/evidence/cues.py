"""What the learned decisions and the rules judge know about one question (:class:`Cues`, computed once, from the
analysed question's terms and the index's idf). The term coverage they share is
:func:`assistant.question.terms.coverage`; the judge's paper-level features are :mod:`assistant.relevance.features`.

Both models (:mod:`assistant.relevance.learned`) read only these numbers, computed the same way at training
(:mod:`assistant.learning.train`) and at answer time, from what the index already stores: the contextual
sentence vectors (vectorstore.chunks.sentences), the chunk cosine and BM25 score of retrieval, and the
BM25 index's document frequencies. The regular expressions below are *cues*: each is one named
feature the evidence model weighs (or ignores); none decides anything on its own. The evidence
ranker is the only sentence chooser (the hand-weighted rules it replaced are gone); its per-sentence
features are in :mod:`assistant.evidence.features`, over this module's :class:`Cues`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from assistant.question import FRAMING_TERMS, Question, content_weights, term_weights
from assistant.settings import SentenceCalibration
from vectorstore.encoding import Encoder
from vectorstore.store import LexicalIndex

_DEFAULTS = SentenceCalibration()


@dataclass
class Cues:
    """What the features need to know about one question, computed once (:func:`question_cues`): its
    terms' weights over the index read from the analysed question's terms, never tokenized again."""

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
    """The unit vector of ``ask`` (None: the question's, as in cues made without an encoder)."""
    analysis: Question | None = None
    """The analysed question (its answer type and figures); None in hand-made cues."""
    rest: dict[str, float] = field(default_factory=dict)
    """``content`` without the terms of the question's names (which every sentence of the named paper is about)."""
    ask_content: dict[str, float] = field(default_factory=dict)
    """``ask_weights`` without framing words."""
    ask_rest: dict[str, float] = field(default_factory=dict)
    """``ask_content`` without the names' terms, each term cut to its first 5 letters ("assumption" ~ "assumed")."""
    description: dict[str, float] = field(default_factory=dict)
    """``weights`` of the terms before the asking clause that it does not repeat (the paper's description)."""
    ask_only: dict[str, float] = field(default_factory=dict)
    """``ask_weights`` of the terms the description does not hold."""
    rule_content: dict[str, float] = field(default_factory=dict)
    """``content`` as the rules judge weighs it (assistant.evidence.sentences.relevance_evidence): idf times the
    name weight for terms of names and numbers (``Question.name_terms``)."""


def question_cues(question: Question, lexical: LexicalIndex | None, name_weight: float = _DEFAULTS.name_term_weight,
                  encoder: Encoder | None = None, qvec: np.ndarray | None = None) -> Cues:
    """The :class:`Cues` of an analysed question (assistant.question.analysis.analyze); ``content`` counts a
    list question's topic, without its lead-in; ``name_weight`` weighs names in ``rule_content``. With an
    ``encoder``, ``ask_vec`` is the asking clause's vector (``qvec``, the question's, when that is the whole question)."""
    idf = lexical.idf if lexical is not None else (lambda t: 1.0)
    weights = {t: idf(t) for t in question.terms}
    about = weights if question.topic == question.text else {t: idf(t) for t in question.topic_terms}
    content = {t: w for t, w in about.items() if t not in FRAMING_TERMS}
    ask = {t: idf(t) for t in question.ask_terms}
    named, described = question.names_terms, question.described_terms
    ask_vec = None if encoder is None else qvec if question.ask == question.text else encoder.encode_one(question.ask)
    return Cues(question=question.text, names=list(question.names), definition=question.definition,
                quantity=question.quantity, known_figures=set(question.figures), counts=set(question.counts),
                weights=weights, content=content, max_idf=idf("\x00 no such term") if lexical is not None else 1.0,
                expands=[re.compile(rf"\w[\w\s-]{{3,}}\(\s*{re.escape(n)}s?\s*\)", re.I) for n in question.names],
                ask=question.ask, ask_weights=ask, ask_vec=ask_vec, analysis=question,
                rest={t: w for t, w in content.items() if t not in named},
                ask_content={t: w for t, w in ask.items() if t not in FRAMING_TERMS},
                ask_rest={t[:5]: w for t, w in ask.items() if t not in named and t not in FRAMING_TERMS},
                description={t: w for t, w in weights.items() if t in described and t not in ask},
                ask_only={t: w for t, w in ask.items() if t not in described},
                rule_content=content_weights(term_weights(question.topic_terms, lexical, question.name_terms,
                                                          name_weight)))
