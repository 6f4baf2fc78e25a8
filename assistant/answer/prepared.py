"""The record the pipeline's early steps fill (analyze → follow-up → retrieve → evidence → judge)
and its later steps read (cite → generate → check): one question, prepared."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.evidence import Cues, RelevanceEvidence, Sentence
from assistant.question import Question
from assistant.relevance import ListResult
from assistant.retrieval import ScoredPaper
from assistant.types import Verdict


@dataclass
class Prepared:
    """Everything generation and the citation check need."""

    question: str
    query: str
    qvec: np.ndarray
    papers: list[ScoredPaper]
    evidence: dict[str, tuple[Sentence | None, float]]
    relevance: dict[str, RelevanceEvidence]
    verdict: Verdict
    context_ids: list[str] = field(default_factory=list)
    multi: bool = False
    llm_error: BaseException | None = None
    """The endpoint already failed while condensing: answer extractively without waiting again."""
    pinned: list[str] = field(default_factory=list)
    """Paper ids the question points at ("the second one"): the only ones cited."""
    note: str = ""
    """Remarks for the answer's note (e.g. an ordinal past the end of the list), in the order added."""
    scope: str = ""
    """Where the papers were searched when filters narrowed it (assistant.retrieval.hybrid.filters_scope)."""
    topic_vec: np.ndarray | None = None
    """Embedding of a list question's topic (``analysis.topic``); ``qvec`` otherwise."""
    listing: ListResult | None = None
    """For a list question: the papers above list mode's bar (assistant.relevance.listing), the ones it cites."""
    analysis: Question | None = None
    """The analysis of ``query`` (assistant.question.analysis): what every later step reads."""
    headline: str = ""
    """What a refusal says first when the check of the question's names decided it ("No indexed abstract
    mentions FlashPrune."; assistant.relevance.names), else ""."""
    quotes: dict[str, list[Sentence]] = field(default_factory=dict)
    """Several sentences to quote for a paper instead of its one evidence sentence (a synthesis without an LLM:
    assistant.research.conversation), in abstract order."""
    needs_llm: str = ""
    """The line an extractive answer ends with when the question wants a written synthesis and no LLM is set."""
    excluded: frozenset[str] = frozenset()
    """Papers left out as already discussed (the question asked for another one)."""
    cues: Cues | None = None
    """Its cues (assistant.evidence.question_cues), made once by the evidence step; None when it had no papers."""

    def add_note(self, remark: str) -> None:
        """Append ``remark`` (a sentence) to :attr:`note`."""
        self.note = " ".join(x for x in (self.note, remark) if x)
