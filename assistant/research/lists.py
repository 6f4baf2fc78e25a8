"""“All papers that…” as a research tool (``paper-assistant list``, the page's list mode, MCP): the question
prepared by the answer path, listed by its bar (:mod:`assistant.relevance.listing`)."""

from __future__ import annotations

from assistant.answer import Assistant, listed_from
from assistant.question import FOREIGN_NOTE
from assistant.relevance import ListBar, ListResult
from assistant.retrieval import Filters


def list_papers(assistant: Assistant, question: str, filters: Filters | None = None,
                bar: ListBar | None = None) -> ListResult:
    """Every paper that answers an "all papers that…" question, best first (the bar: :mod:`assistant.relevance.listing`).
    Raises QuestionError for an empty or over-long question."""
    prep = assistant.prepare(question, filters=filters, k=(bar or assistant.list_bar).pool)
    # The answer's own list when the bar is the calibrated one (a list question), else computed here.
    if prep.listing is not None and bar in (None, assistant.list_bar):
        result = prep.listing
    else:
        result = listed_from(prep, assistant.sentences, assistant.index.encoder, assistant.index.store.counts()[0],
                             assistant.judge, bar or assistant.list_bar)
    if FOREIGN_NOTE in prep.note and FOREIGN_NOTE not in result.note:
        # A list in French came back empty or off-topic with no word why (a hostile round, #35 F10).
        result.note = " ".join(x for x in (result.note, FOREIGN_NOTE) if x)
    return result
