"""The CLI's text renderings (assistant.faces.render), no model."""

from __future__ import annotations

from assistant.faces.render import answer_text
from assistant.types import CitedAnswer, Source


def test_a_list_answer_prints_each_quote_once():
    """Issue 33 (6): a 20-paper list printed every quote twice, in the list and again under Sources."""
    quotes = [f"Paper {i} studies reinforcement learning from human feedback in setting {i}." for i in range(1, 21)]
    sources = [Source(n=i, paper_id=f"f#{i}", label=f"P{i}", sentence=q, links=["https://github.com/x/y"] if i == 3 else [])
               for i, q in enumerate(quotes, 1)]
    ans = CitedAnswer(question="Which papers use RLHF?", count=20, sources=sources,
                      answer="20 papers in the index match:\n" + "\n".join(f"- P{i}: {q} [{i}]" for i, q in enumerate(quotes, 1)))
    text = answer_text(ans)
    assert all(text.count(q) == 1 for q in quotes)
    assert "Sources:\n[1] P1 (f#1)\n[2] P2 (f#2)\n[3] P3 (f#3)\n    code / project: https://github.com/x/y\n" in text


def test_a_quote_the_answer_does_not_hold_is_printed_under_its_source():
    ans = CitedAnswer(question="What does it do?", answer="It routes tokens to experts [1].",
                      sources=[Source(n=1, paper_id="f#1", label="OmniMoE", sentence="We route each token to experts.")])
    assert '[1] OmniMoE (f#1)\n    "We route each token to experts."' in answer_text(ans)


def test_the_ingest_bar_says_what_it_is_doing_before_the_first_batch(monkeypatch):
    """Issue 33 (6): ingesting 2,000 papers showed ``0/?`` and then ``0/2000 -:--:--`` for about 40 s with no word."""
    import io
    import sys

    from assistant.cli.common import embedding_bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    term = Terminal()
    monkeypatch.setattr(sys, "stderr", term)
    with embedding_bar() as callbacks:
        callbacks["on_stage"]("loading the embedding model…")
        callbacks["on_stage"]("reading 3 files…")
        callbacks["on_total"](2000)
    shown = term.getvalue()
    assert "loading the embedding model…" in shown and "reading 3 files…" in shown
    assert shown.index("loading the embedding model…") < shown.index("reading 3 files…")


def test_the_stages_are_not_printed_when_stderr_is_not_a_terminal(monkeypatch):
    import io
    import sys

    from assistant.cli.common import embedding_bar

    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    with embedding_bar() as callbacks:
        callbacks["on_stage"]("reading 3 files…")
    assert pipe.getvalue() == ""  # scripts and logs read the report lines alone, as before
