"""Plain-text and JSON renderings of results, shared by the CLI (and handy in tests)."""

from __future__ import annotations

import json
import re

from assistant.faces.compared import comparison_text
from assistant.research import FACET_NAMES, RelatedPaper, shown_percent
from assistant.settings import RelatedCalibration
from assistant.text import markup
from assistant.types import CitedAnswer, VERDICT_TEXT, Verdict
from vectorstore.papers import counted


inert = markup.inert  # render.py shows untrusted text through it often


def answer_text(ans: CitedAnswer, show_abstract: bool = False) -> str:
    """The answer, then numbered sources with their supporting sentences (each quote once: one the answer
    already quotes, as a list's lines do, is not repeated), then 'also retrieved'; math
    and emphasis as plain Unicode (:func:`assistant.text.markup.plain`: ``10.9$\\times$`` → ``10.9×``)."""
    return markup.plain(_answer_text(ans, show_abstract))


def _answer_text(ans: CitedAnswer, show_abstract: bool) -> str:
    lines = []
    if ans.note:
        lines += [f"Note: {ans.note}", ""]
    lines.append(ans.answer)
    if ans.verdict == Verdict.weak and VERDICT_TEXT[Verdict.weak] not in ans.answer:
        lines += ["", f"({VERDICT_TEXT[Verdict.weak]})"]
    if ans.count is not None and not re.match(rf"{ans.count:,} papers? (?:in the index )?match", ans.answer):
        lines += ["", f"Found {counted(ans.count, 'paper')}."]  # once: an extractive list opens with its count
    if ans.comparison is not None:  # papers side by side (assistant.faces.compared)
        lines += ["", comparison_text(ans)]
    if ans.sources:
        lines += ["", "Sources:"]
        for s in ans.sources:
            flag = "  [weak support]" if s.support == "weak" else ""
            lines.append(f"[{s.n}] {s.title or s.label} ({s.paper_id}){flag}")
            if s.sentence and s.sentence not in ans.answer:  # a list (or extractive) answer already quotes it
                lines.append(f'    "{s.sentence}"')
            if s.links:
                lines.append(f"    code / project: {' '.join(s.links)}")
            if show_abstract:
                lines.append(f"    {s.abstract}")
    if ans.also_retrieved:
        lines += ["", f"{also_heading(ans)}: " + "; ".join(f"{s.title or s.label} ({s.paper_id})" for s in ans.also_retrieved)]
    return "\n".join(lines)


def also_heading(ans: CitedAnswer) -> str:
    """The heading of the retrieved papers an answer did not cite: under "No relevant abstract found"
    they were judged not relevant, and must not read as leads."""
    return ("Nearest papers, judged not relevant" if ans.verdict == Verdict.none
            else "Also retrieved (not cited)")


def answer_json(ans: CitedAnswer) -> str:
    """``ask --json``: the answer record, its cited papers under ``citations`` (as HTTP ``/ask`` and MCP)."""
    return ans.model_dump_json(indent=2, by_alias=True)


def related_records(items: list[RelatedPaper]) -> list[dict]:
    return [
        {"rank": i, "paper_id": r.paper.id, "label": r.paper.display(), "score": round(r.score, 6),
         "similarity": round(r.similarity, 4), "cosine": round(r.cosine, 4), "lexical": round(r.lexical, 4),
         "explanation": [{"query_sentence": p.query_sentence, "paper_sentence": p.paper_sentence,
                          "similarity": round(p.similarity, 4)} for p in r.pairs],
         "differs": {"query_only": [{"sentence": u.sentence, "best_similarity": round(u.best_similarity, 4)}
                                    for u in r.query_only],
                     "paper_only": [{"sentence": u.sentence, "best_similarity": round(u.best_similarity, 4)}
                                    for u in r.paper_only]},
         "summary": r.summary,
         "similarity_percent": r.percent,
         "facets": [{"facet": FACET_NAMES.get(f.facet, f.facet), "shared": f.shared, "query_sentence": f.query_sentence,
                     "paper_sentence": f.paper_sentence, "similarity": round(f.similarity, 4)} for f in r.facets]}
        for i, r in enumerate(items, 1)
    ]


def related_headline(items) -> str:
    """``"3 related papers; 7 others were below the bar (similarity under 40%)."`` (a plain list: its count)."""
    if hasattr(items, "headline"):
        return items.headline()
    return f"{counted(len(items), 'related paper')}."


def facet_lines(rec: dict, limit: int = 160, yours: str = "yours") -> tuple[list[str], list[str]]:
    """``(shares, differs)`` as short lines by facet, e.g. ``method: “…” ↔ “…” (0.62)`` and
    ``results — yours: “…”; this paper: “…”`` (``yours``: what the query is called, a picked paper's label)."""
    shares, differs = [], []
    for f in rec["facets"]:
        if f["shared"]:
            shares.append((f["facet"], f["query_sentence"], f["paper_sentence"], f["similarity"]))
        else:
            differs.append((f["facet"], f["query_sentence"], f["paper_sentence"]))
    return ([f"{name}: “{clip(q, limit)}” ↔ “{clip(p, limit)}” ({sim:.2f})" for name, q, p, sim in shares],
            [f"{name} — " + (f"{yours}: “{clip(q, limit)}”; " if q else "") + f"this paper: “{clip(p, limit)}”"
             for name, q, p in differs])


def _yours(items) -> str:
    """What a related-work query is called: a picked paper by its label, a pasted text "yours"."""
    return getattr(items, "query_label", "") or "yours"


def near_heading(items) -> str:
    """The heading over ``near_records``: all shown papers are below the bar too when ``nearest_only``."""
    return "Next nearest, also below the bar" if getattr(items, "nearest_only", False) else "Just below the bar"


def near_records(items) -> list[dict]:
    """The papers just below the bar (``RelatedList.near``) as ``[{paper_id, label, similarity,
    similarity_percent}]``, most similar first."""
    bar = getattr(items, "bar", 0.0)
    return [{"paper_id": p.id, "label": p.display(), "similarity": round(sim, 4),
             "similarity_percent": shown_percent(sim, bar)} for p, sim in getattr(items, "near", [])]


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters at a word boundary, with "…" when cut; never inside
    a ``$…$`` math span (a lone ``$`` would pair with the next one on the page)."""
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    cut = cut.rsplit(" ", 1)[0] if " " in cut else cut
    spans = markup.split_math(cut)
    if spans and not spans[-1][0] and re.search(r"(?<!\\)\$", spans[-1][1]):  # an unclosed "$": cut before it
        last = spans[-1][1]
        cut = cut[: len(cut) - len(last) + re.search(r"(?<!\\)\$", last).start()].rstrip()
    return cut.rstrip(",;:") + "…"


_W = round(100 * RelatedCalibration().dense_weight)
RELATED_ORDER_NOTE = (f"Similarity: {_W}% the cosine of the two texts' embeddings, {100 - _W}% the overlap of their "
                      "distinctive words (TF-IDF cosine); papers are ordered by it, and the bar and the % are on it.")


def related_text(items: list[RelatedPaper]) -> str:
    """Related work as plain text (math as Unicode), after the note saying a long text was cut."""
    note = getattr(items, "note", "")
    return markup.plain((f"{note}\n" if note else "") + _related_text(items))


def _related_text(items: list[RelatedPaper]) -> str:
    if not items:
        return related_headline(items) if getattr(items, "below_bar", 0) else "No related papers found."
    lines = [related_headline(items)]
    yours = _yours(items)
    for rec in related_records(items):
        lines.append(f"{rec['rank']:>2}. {rec['label']} ({rec['paper_id']})  {rec['similarity_percent']}% similar")
        if rec["summary"]:
            lines.append(f"      {rec['summary']}")
        shares, differs = facet_lines(rec, yours=yours)
        if not rec["facets"] and rec["explanation"]:  # no facet to compare: the closest pair overall
            p = rec["explanation"][0]
            shares = [f"“{clip(p['query_sentence'], 160)}” ↔ “{clip(p['paper_sentence'], 160)}” ({p['similarity']:.2f})"]
        if shares:
            lines.append("      shares:")
            lines += [f"        {x}" for x in shares]
        if differs:
            lines.append("      differs:")
            lines += [f"        {x}" for x in differs]
    near = near_records(items)
    if near:
        lines.append(f"{near_heading(items)}:")
        lines += [f"    {r['label']} ({r['paper_id']})  {r['similarity_percent']}%" for r in near]
    lines.append(RELATED_ORDER_NOTE)
    return "\n".join(lines)


def related_json(items: list[RelatedPaper]) -> str:
    """``related --json``: the object the MCP ``related`` tool returns — ``count``, ``papers`` (records),
    ``below_bar`` (ranked but too dissimilar), ``bar`` (relevance) and ``nearest_only`` (none cleared the bar:
    ``papers`` are the nearest few, all below it), ``near_misses`` (up to five just below it, with their
    similarity), ``note`` ("" or the line saying a long text was read to its first TEXT_BUDGET_CHARS)
    — plus ``headline``, the line the text output starts with (after the note)."""
    return json.dumps({"count": len(items), "papers": related_records(items),
                       "below_bar": getattr(items, "below_bar", 0), "bar": round(getattr(items, "bar", 0.0), 4),
                       "nearest_only": bool(getattr(items, "nearest_only", False)),
                       "near_misses": near_records(items), "note": getattr(items, "note", ""),
                       "headline": related_headline(items)}, indent=2, ensure_ascii=False)


# --- "all papers that…" lists -------------------------------------------------------------------
def list_text(result) -> str:
    """A :class:`assistant.relevance.listing.ListResult` as text: the count, then one numbered line and one
    evidence sentence per paper, best first, then how the bar was set (math as Unicode)."""
    return markup.plain(_list_text(result))


def _list_text(result) -> str:
    n = result.count
    lines = [f"Found {counted(n, 'paper')} matching “{result.topic}”{_scope(result)}:" if n else
             f"No indexed paper is about “{result.topic}”{_scope(result)}."]
    if result.weak:
        lines.insert(0, f"({VERDICT_TEXT[Verdict.weak]})")
    for p in result.papers:
        lines.append(f"{p.rank:>2}. {p.paper.display()} ({p.id})  relevance {p.score:.2f}")
        if p.sentence:
            lines.append(f'    "{p.sentence.text}"')
    lines += ["", f"How the bar was set: {result.note}"]
    return "\n".join(lines)


def _scope(result) -> str:
    """" in 004_….txt" when filters narrowed the search, else ""."""
    scope = getattr(result, "scope", "")
    return f" {scope}" if scope else ""


def list_json(result) -> str:
    return json.dumps(result.to_dict(), indent=2, ensure_ascii=False)


def list_markdown(result) -> str:
    """A list result for a chat bubble: the count, then one line with its evidence sentence per paper."""
    n = result.count
    if not n:
        return f"**No indexed paper** is about “{inert(result.topic)}”{inert(_scope(result))}.\n\n_{inert(result.note)}_"
    lines = [f"**{n} paper{'s' if n != 1 else ''}** match{'es' if n == 1 else ''} “{inert(result.topic)}”"
             f"{inert(_scope(result))}:", ""]
    if result.weak:
        lines.insert(0, f"_{VERDICT_TEXT[Verdict.weak]}_\n")
    for p in result.papers:
        quote = f" — “{markup.markdown(p.sentence.text)}”" if p.sentence else ""
        lines.append(f"{p.rank}. **{markup.markdown(p.paper.display())}** `{p.id}` ({p.score:.2f}){quote}")
    return "\n".join(lines)


def list_html(result) -> str:
    """A list result for the sources panel: count, papers (abstract with the evidence sentence marked)
    and a collapsible note on how the bar was set."""
    import html as _html

    def marked(p) -> str:
        t = p.paper.text
        s = p.sentence
        if s and 0 <= s.start < s.end <= len(t):
            return (markup.html(t[: s.start]) + "<mark>" + markup.html(t[s.start : s.end]) + "</mark>"
                    + markup.html(t[s.end :]))
        return markup.html(t)

    n = result.count
    parts = [f'<div class="pa-list"><p class="pa-list-count"><b>{n}</b> paper{"s" if n != 1 else ""} found '
             f'for “{_html.escape(result.topic)}”{_html.escape(_scope(result))}.</p>' if n else
             f'<div class="pa-list"><p class="pa-list-count"><b>No indexed paper</b> is about '
             f'“{_html.escape(result.topic)}”{_html.escape(_scope(result))}.</p>']
    if result.weak:
        parts.append(f'<p class="pa-list-weak"><i>{_html.escape(VERDICT_TEXT[Verdict.weak])}</i></p>')
    for p in result.papers:
        parts.append(f'<details class="pa-source" id="pa-listed-{_html.escape(p.id)}"><summary>{p.rank}. '
                     f'{markup.html(p.paper.display())} <code>{_html.escape(p.id)}</code> '
                     f'<small>relevance {p.score:.2f}</small></summary><p>{marked(p)}</p></details>')
    parts.append(f'<details class="pa-list-note"><summary>How the bar was set</summary><p>{_html.escape(result.note)}</p></details></div>')
    return "".join(parts).replace("\n", " ")  # one raw-HTML block for the Markdown panel


def related_markdown(items: list[RelatedPaper]) -> str:
    """Related work as a Markdown table: paper, score, what it shares (sentence pairs) and where it
    differs (sentences with no good match), plus the LLM's paragraph when there is one; after the note
    saying a long text was cut."""
    note = getattr(items, "note", "")
    return (f"_{markup.markdown(note)}_\n\n" if note else "") + _related_markdown(items)


def _related_markdown(items: list[RelatedPaper]) -> str:
    def esc(text: str) -> str:  # a table cell: inert, math kept for KaTeX, no bare "|"
        return markup.markdown(text).replace("|", "&#124;")

    head = related_headline(items)
    near = near_records(items)
    near_lines = (["", f"**{near_heading(items)}:**", ""]
                  + [f"- **{esc(r['label'])}** `{r['paper_id']}` ({r['similarity_percent']}%)" for r in near]) if near else []
    if not items:
        return "\n".join([head if getattr(items, "below_bar", 0) else "No related papers found.", *near_lines])
    yours = _yours(items)
    rows = [f"**{esc(head)}**", "", "Shares and differs by facet (task, method, results).", "", f"_{RELATED_ORDER_NOTE}_", "",
            f"| # | paper | similarity | shares ({esc(yours)} ↔ this paper) | differs |", "|---|---|---|---|---|"]
    for r in related_records(items):
        shares, differs = [], []
        for f in r["facets"]:
            if f["shared"]:
                shares.append(f"**{f['facet']}**: “{esc(clip(f['query_sentence'], 120))}” ↔ "
                              f"“{esc(clip(f['paper_sentence'], 160))}” ({f['similarity']:.2f})")
            else:
                differs.append(f"**{f['facet']}** — " + (f"{esc(yours)}: “{esc(clip(f['query_sentence'], 120))}”; "
                                                           if f["query_sentence"] else "")
                               + f"this paper: “{esc(clip(f['paper_sentence'], 140))}”")
        if not r["facets"] and r["explanation"]:
            p = r["explanation"][0]
            shares.append(f"“{esc(clip(p['query_sentence'], 120))}” ↔ “{esc(clip(p['paper_sentence'], 160))}” "
                          f"({p['similarity']:.2f})")
        cell = "<br>".join(shares) or "—"
        if r["summary"]:
            cell = f"{esc(r['summary'])}<br>{cell}"
        rows.append(f"| {r['rank']} | **{esc(r['label'])}** `{r['paper_id']}` | {r['similarity_percent']}% | {cell} | "
                    f"{'<br>'.join(differs) or '—'} |")
    return "\n".join(rows + near_lines)
