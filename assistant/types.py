"""The records every face shows: the verdict, a cited answer, its sources and checked claims.

Imports nothing from ``assistant/``, so any module can use them (the CLI, the UI, list mode, the
export) without importing the pipeline.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, Field


class Verdict(str, Enum):
    """Does a retrieved paper answer the question (assistant.relevance.judge decides)."""

    answered = "answered"
    weak = "weak"
    none = "none"


VERDICT_TEXT = {
    Verdict.answered: "",
    Verdict.weak: "Closest match, may not answer the question.",
    Verdict.none: "No relevant abstract found in the indexed papers.",
}


class Source(BaseModel):
    """A numbered source of an answer: the paper and the sentence that supports the citation."""

    n: int
    paper_id: str
    label: str
    title: str = ""
    sentence: str = ""
    sentence_start: int = -1
    sentence_end: int = -1
    score: float = 0.0
    abstract: str = ""
    support: str | None = Field(None, description="'supported' | 'weak' for cited LLM claims; None if unchecked")
    similarity: float | None = Field(None, description="cosine of the weakest claim citing it to its best sentence")
    links: list[str] = Field(default_factory=list, description="code and project links the abstract gives")


class Claim(BaseModel):
    """One cited sentence of an LLM answer, checked against one cited abstract."""

    text: str
    n: int
    paper_id: str
    sentence: str
    similarity: float
    support: str = Field(description="'supported' | 'weak'")


class FacetRow(BaseModel):
    """One facet of a comparison (task, method, data, results): each compared paper's sentence for it, and
    whether each later paper shares it with the first."""

    facet: str
    sentences: list[str] = Field(description="one per compared paper, in the comparison's order; \"\" where its "
                                             "abstract states none")
    shared: list[bool] = Field(default_factory=list, description="per paper after the first: its closest sentence "
                                                                 "pair with the first's reaches the related-work bar")
    similarity: list[float] = Field(default_factory=list, description="per paper after the first: that pair's cosine")


class Comparison(BaseModel):
    """Papers side by side, facet by facet, each in its abstract's own sentences."""

    papers: list[int] = Field(description="the source numbers compared, in the order asked")
    rows: list[FacetRow] = Field(default_factory=list)


class CitedAnswer(BaseModel):
    """What every face shows: the answer with [n] markers, the cited sources, and what else was retrieved."""

    question: str
    standalone_question: str = ""
    answer: str
    sources: list[Source] = Field(default_factory=list, serialization_alias="citations")
    """The cited papers, [n] order; named ``citations`` in JSON (``ask --json``, HTTP ``/ask``, the MCP tool)."""
    also_retrieved: list[Source] = Field(default_factory=list)
    verdict: Verdict = Verdict.answered
    mode: str = "extractive"
    note: str = ""
    incomplete: bool = False
    removed_citations: list[int] = Field(default_factory=list)
    count: int | None = Field(None, description="papers found, for 'which papers…' questions")
    claims: list[Claim] = Field(default_factory=list, description="LLM claims and their support check")
    usage: dict[str, int] | None = Field(None, description="token usage reported by the endpoint, if any")
    caveat: str = Field("", description="the abstract-only caveat (generate.caveat_text) when the question asks for "
                                        "what abstracts rarely state (Question.beyond_abstracts); also in ``note``")
    cut_reply: str = Field("", description="an LLM reply cut before its end (reply budget, dropped or stalled "
                                           "stream) that no supported citation backs: kept out of the answer, "
                                           "shown on request")
    comparison: Comparison | None = Field(None, description="papers compared facet by facet (a comparison asked)")


History = list[tuple[str, CitedAnswer]]
"""Earlier turns, oldest first: (question as typed, its answer)."""
