"""A comparison (:class:`assistant.types.Comparison`) as every face shows it: plain text for the CLI
(:func:`comparison_text`, inside :func:`assistant.faces.render.answer_text`) and a Markdown table for the page's
chat (:func:`comparison_markdown`): per facet, each paper's own sentence, then whether they share it."""

from __future__ import annotations

from assistant.text import markup
from assistant.types import CitedAnswer, FacetRow

HEADING = "Side by side, in each abstract's own words"


def verdicts(row: FacetRow, numbers: list[int]) -> str:
    """``"shared (0.62)"`` / ``"differ (0.31)"`` for two papers; per later paper for more ("[2] shares it (0.62);
    [3] differs (0.31)"); "only [2] states it" where one side gives no sentence."""
    def one(k: int) -> str:
        first, other = row.sentences[0], row.sentences[k + 1]
        if not (first and other):
            return f"only [{numbers[0] if first else numbers[k + 1]}] states it"
        word = ("shared" if row.shared[k] else "differ") if len(numbers) == 2 else \
            f"[{numbers[k + 1]}] {'shares it' if row.shared[k] else 'differs'}"
        return f"{word} ({row.similarity[k]:.2f})"
    return "; ".join(one(k) for k in range(len(numbers) - 1))


def _label(ans: CitedAnswer, n: int) -> str:
    src = next((s for s in ans.sources if s.n == n), None)
    return (src.title or src.label) if src else ""


def comparison_text(ans: CitedAnswer) -> str:
    """The comparison of ``ans`` as indented text ("" without one); math left as stored (answer_text renders it)."""
    c = ans.comparison
    if c is None or not c.rows:
        return ""
    lines = [f"{HEADING}:"]
    for row in c.rows:
        lines.append(f"  {row.facet}")
        for n, sentence in zip(c.papers, row.sentences):
            lines.append(f"    [{n}] {_label(ans, n)}: " + (f"“{sentence}”" if sentence else "(its abstract states none)"))
        lines.append(f"    → {verdicts(row, c.papers)}")
    return "\n".join(lines)


def comparison_markdown(ans: CitedAnswer) -> str:
    """The comparison of ``ans`` as a Markdown table for the chat ("" without one): a row per facet, a column per
    paper, the last saying whether they share it. Every paper's text goes through :func:`markup.markdown`."""
    c = ans.comparison
    if c is None or not c.rows:
        return ""

    def cell(text: str) -> str:
        return markup.markdown(text).replace("|", "&#124;").replace("\n", " ")

    head = " | ".join(f"[{n}] {cell(_label(ans, n))}" for n in c.papers)
    rows = [f"**{HEADING}**", "", f"| facet | {head} | shared? |", "|---|" + "---|" * len(c.papers) + "---|"]
    for row in c.rows:
        quotes = " | ".join(f"“{cell(s)}”" if s else "—" for s in row.sentences)
        rows.append(f"| **{row.facet}** | {quotes} | {verdicts(row, c.papers)} |")
    return "\n".join(rows)
