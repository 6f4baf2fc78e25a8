"""Plain-text and JSON renderings of results, shared by the CLI (and handy in tests)."""

from __future__ import annotations

import html
import json
import re

from assistant.types import CitedAnswer
from assistant.related import RelatedPaper
from assistant.relevance import VERDICT_TEXT, Verdict


_IMAGE = re.compile(r"!(?=\[)")


def inert(text: str) -> str:
    """Untrusted text (abstracts, titles, LLM replies) made safe to put in Markdown the page renders:
    HTML is escaped, image syntax ``![alt](url)`` is broken (``!\\[``), so nothing in a paper or a
    reply can make the browser fetch a URL, and so is link syntax (``](`` → ``]\\(``), so a title
    such as ``[1](javascript:…)`` cannot pose as a citation link. The page adds its own links after."""
    return _IMAGE.sub("!\\\\", html.escape(text, quote=False)).replace("](", "]\\(")


def answer_text(ans: CitedAnswer, show_abstract: bool = False) -> str:
    """The answer, then numbered sources with their supporting sentences, then 'also retrieved'."""
    lines = []
    if ans.note:
        lines += [f"Note: {ans.note}", ""]
    lines.append(ans.answer)
    if ans.verdict == Verdict.weak and VERDICT_TEXT[Verdict.weak] not in ans.answer:
        lines += ["", f"({VERDICT_TEXT[Verdict.weak]})"]
    if ans.count is not None:
        lines += ["", f"Found {ans.count} paper{'s' if ans.count != 1 else ''}."]
    if ans.sources:
        lines += ["", "Sources:"]
        for s in ans.sources:
            flag = "  [weak support]" if s.support == "weak" else ""
            lines.append(f"[{s.n}] {s.title or s.label} ({s.paper_id}){flag}")
            if s.sentence:
                lines.append(f'    "{s.sentence}"')
            if show_abstract:
                lines.append(f"    {s.abstract}")
    if ans.also_retrieved:
        lines += ["", "Also retrieved (not cited): " + "; ".join(f"{s.title or s.label} ({s.paper_id})" for s in ans.also_retrieved)]
    return "\n".join(lines)


def answer_json(ans: CitedAnswer) -> str:
    return ans.model_dump_json(indent=2)


def related_records(items: list[RelatedPaper]) -> list[dict]:
    return [
        {"rank": i, "paper_id": r.paper.id, "label": r.paper.display(), "score": round(r.score, 6),
         "similarity": round(r.similarity, 4),
         "explanation": [{"query_sentence": p.query_sentence, "paper_sentence": p.paper_sentence,
                          "similarity": round(p.similarity, 4)} for p in r.pairs],
         "differs": {"query_only": [{"sentence": u.sentence, "best_similarity": round(u.best_similarity, 4)}
                                    for u in r.query_only],
                     "paper_only": [{"sentence": u.sentence, "best_similarity": round(u.best_similarity, 4)}
                                    for u in r.paper_only]},
         "summary": r.summary}
        for i, r in enumerate(items, 1)
    ]


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…" when cut."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    return (cut.rsplit(" ", 1)[0] if " " in cut else cut).rstrip(",;:") + "…"


def related_text(items: list[RelatedPaper]) -> str:
    if not items:
        return "No related papers found."
    lines = []
    for rec in related_records(items):
        lines.append(f"{rec['rank']:>2}. {rec['label']} ({rec['paper_id']})  score {rec['score']:.4f}  similarity {rec['similarity']:.2f}")
        if rec["summary"]:
            lines.append(f"      {rec['summary']}")
        if rec["explanation"]:
            lines.append("      shares:")
        for p in rec["explanation"]:
            lines.append(f"        yours: \"{clip(p['query_sentence'], 160)}\"")
            lines.append(f"        paper: \"{clip(p['paper_sentence'], 160)}\"  ({p['similarity']:.2f})")
        d = rec["differs"]
        if d["query_only"] or d["paper_only"]:
            lines.append("      differs:")
            for u in d["query_only"]:
                lines.append(f"        only yours: \"{clip(u['sentence'], 160)}\"  (best match {u['best_similarity']:.2f})")
            for u in d["paper_only"]:
                lines.append(f"        only paper: \"{clip(u['sentence'], 160)}\"  (best match {u['best_similarity']:.2f})")
    return "\n".join(lines)


def related_json(items: list[RelatedPaper]) -> str:
    return json.dumps(related_records(items), indent=2, ensure_ascii=False)


# --- "all papers that…" lists -------------------------------------------------------------------
def list_text(result) -> str:
    """A :class:`assistant.listing.ListResult` as text: the count, then one numbered line and one
    evidence sentence per paper, best first, then how the bar was set."""
    n = result.count
    lines = [f"Found {n} paper{'s' if n != 1 else ''} matching “{result.topic}”" + (":" if n else ".")]
    if result.weak:
        lines.insert(0, f"({VERDICT_TEXT[Verdict.weak]})")
    for p in result.papers:
        lines.append(f"{p.rank:>2}. {p.paper.display()} ({p.id})  relevance {p.score:.2f}")
        if p.sentence:
            lines.append(f'    "{p.sentence.text}"')
    lines += ["", f"How the bar was set: {result.note}"]
    return "\n".join(lines)


def list_json(result) -> str:
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False)


def list_markdown(result) -> str:
    """A list result for a chat bubble: the count, then one line with its evidence sentence per paper."""
    n = result.count
    if not n:
        return f"**0 papers** match “{inert(result.topic)}”.\n\n_{inert(result.note)}_"
    lines = [f"**{n} paper{'s' if n != 1 else ''}** match{'es' if n == 1 else ''} “{inert(result.topic)}”:", ""]
    if result.weak:
        lines.insert(0, f"_{VERDICT_TEXT[Verdict.weak]}_\n")
    for p in result.papers:
        quote = f" — “{inert(p.sentence.text)}”" if p.sentence else ""
        lines.append(f"{p.rank}. **{inert(p.paper.display())}** `{p.id}` ({p.score:.2f}){quote}")
    return "\n".join(lines)


def list_html(result) -> str:
    """A list result for the sources panel: count, papers (abstract with the evidence sentence marked)
    and a collapsible note on how the bar was set."""
    import html as _html

    def marked(p) -> str:
        t = p.paper.text
        s = p.sentence
        if s and 0 <= s.start < s.end <= len(t):
            return (_html.escape(t[: s.start]) + "<mark>" + _html.escape(t[s.start : s.end]) + "</mark>"
                    + _html.escape(t[s.end :]))
        return _html.escape(t)

    n = result.count
    parts = [f'<div class="pa-list"><p class="pa-list-count"><b>{n}</b> paper{"s" if n != 1 else ""} found '
             f'for “{_html.escape(result.topic)}”.</p>']
    if result.weak:
        parts.append(f'<p class="pa-list-weak"><i>{_html.escape(VERDICT_TEXT[Verdict.weak])}</i></p>')
    for p in result.papers:
        parts.append(f'<details class="pa-source" data-paper-id="{_html.escape(p.id)}"><summary>{p.rank}. '
                     f'{_html.escape(p.paper.display())} <code>{_html.escape(p.id)}</code> '
                     f'<small>relevance {p.score:.2f}</small></summary><p>{marked(p)}</p></details>')
    parts.append(f'<details class="pa-list-note"><summary>How the bar was set</summary><p>{_html.escape(result.note)}</p></details></div>')
    return "".join(parts)


def related_markdown(items: list[RelatedPaper]) -> str:
    """Related work as a Markdown table: paper, score, what it shares (sentence pairs) and where it
    differs (sentences with no good match), plus the LLM's paragraph when there is one."""
    def esc(text: str) -> str:  # a table cell: inert, no bare "|"
        return inert(text).replace("|", "&#124;")

    if not items:
        return "No related papers found."
    rows = ["| # | paper | score | shares (your sentence → its sentence) | differs |", "|---|---|---|---|---|"]
    for r in related_records(items):
        shares = "<br>".join(f"“{esc(clip(p['query_sentence'], 120))}” → “{esc(clip(p['paper_sentence'], 160))}” "
                             f"({p['similarity']:.2f})" for p in r["explanation"])
        d = r["differs"]
        differs = "<br>".join([f"only yours: “{esc(clip(u['sentence'], 120))}”" for u in d["query_only"]]
                              + [f"only this paper: “{esc(clip(u['sentence'], 120))}”" for u in d["paper_only"]]) or "—"
        if r["summary"]:
            shares = f"{esc(r['summary'])}<br>{shares}"
        rows.append(f"| {r['rank']} | **{esc(r['label'])}** `{r['paper_id']}` | {r['score']:.4f} | {shares} | {differs} |")
    return "\n".join(rows)
