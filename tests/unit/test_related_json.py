"""``related --json`` carries the bar as the text output and the MCP tool do (no model)."""

from __future__ import annotations

import json

from assistant.research.related import RelatedPaper
from assistant.research.related_list import RelatedList
from assistant.faces.render import related_json
from vectorstore.papers import Paper


def _near(i: int, sim: float) -> RelatedPaper:
    return RelatedPaper(paper=Paper(id=f"x#{i}", text=f"We study topic {i}."), score=1.0 / i, similarity=sim, pairs=[])


def test_related_json_marks_a_result_where_no_paper_clears_the_bar():
    items = RelatedList([_near(1, 0.40), _near(2, 0.35)], considered=10, below_bar=8, bar=0.52, nearest_only=True)
    out = json.loads(related_json(items))
    assert out["nearest_only"] is True and out["count"] == 2 and out["bar"] == 0.52
    assert [p["paper_id"] for p in out["papers"]] == ["x#1", "x#2"]
    assert out["headline"].startswith("None is closely related (similarity under 52%)")


def test_related_json_over_the_bar_is_not_marked():
    items = RelatedList([_near(1, 0.70)], considered=10, below_bar=9, bar=0.52)
    out = json.loads(related_json(items))
    assert out["nearest_only"] is False and out["below_bar"] == 9
    assert out["headline"] == "1 related paper; 9 others were below the bar (similarity under 52%)."


def test_text_and_page_say_what_the_similarity_is_and_that_it_orders_the_list():
    """The order was the fusion of two rankings and the % the embedding cosine alone, so a list could read
    40 %, 45 %; now one relevance orders the list and is the % shown (issue 33, item 5)."""
    from assistant.faces.render import RELATED_ORDER_NOTE, related_markdown, related_text

    items = RelatedList([_near(2, 0.45), _near(1, 0.40)], considered=10, below_bar=8, bar=0.52, nearest_only=True)
    text = related_text(items)
    assert text.index("45% similar") < text.index("40% similar")
    assert text.endswith(RELATED_ORDER_NOTE) and "ordered by it" in RELATED_ORDER_NOTE and "TF-IDF" in RELATED_ORDER_NOTE
    assert RELATED_ORDER_NOTE in related_markdown(items)


def test_related_json_gives_the_relevance_and_its_two_parts():
    paper = RelatedPaper(paper=Paper(id="x#1", text="We study topic 1."), score=0.61, similarity=0.61, pairs=[],
                         cosine=0.7, lexical=0.25, bar=0.5)
    (rec,) = json.loads(related_json(RelatedList([paper], considered=1, bar=0.5)))["papers"]
    assert (rec["score"], rec["similarity"], rec["cosine"], rec["lexical"], rec["similarity_percent"]) == (
        0.61, 0.61, 0.7, 0.25, 61)
