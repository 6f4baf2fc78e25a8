"""One name for an answer's cited papers in every JSON face: ``citations`` (no model)."""

from __future__ import annotations

import json

from assistant.mcp.tools import AskResult
from assistant.faces.render import answer_json
from assistant.types import CitedAnswer, Source


def test_ask_json_names_the_cited_papers_citations_as_the_mcp_tool_does():
    ans = CitedAnswer(question="What is SyPE?", answer="SyPE is … [1]",
                      sources=[Source(n=1, paper_id="x#1", label="SyPE", sentence="We propose SyPE.")])
    data = json.loads(answer_json(ans))
    assert "sources" not in data and data["citations"][0]["paper_id"] == "x#1"
    assert "citations" in AskResult.model_fields and "sources" not in AskResult.model_fields
    assert ans.sources[0].n == 1  # the Python name stays
