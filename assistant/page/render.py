"""How the page looks and what it shows: its CSS and scripts (``CSS``, ``HEAD``, ``SHOW_NEWEST``; all of it for
``launch`` in :func:`page_options`), and the HTML and Markdown it renders from CitedAnswer records: the chat
bubble (:func:`answer_markdown`, with :func:`link_citations`) and the sources panel (:func:`sources_html`, each
source by :func:`source_html` with the cited sentence highlighted). Every text from a paper or an LLM goes
through :mod:`assistant.text.markup`, which escapes it."""

from __future__ import annotations

import html
import re

from assistant.faces import also_heading, comparison_markdown
from assistant.text import markup
from assistant.types import CitedAnswer, Source, VERDICT_TEXT, Verdict

CSS = """
.pa-sources { max-height: 640px; overflow-y: auto; padding-right: 4px; }
.pa-source { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 6px 10px; margin: 6px 0;
             transition: box-shadow .3s; }
.pa-source[open] { border-color: var(--color-accent-soft, #c7d2fe); }
.pa-source.pa-flash { box-shadow: 0 0 0 3px var(--color-accent, #6366f1); }
.pa-source summary { cursor: pointer; font-weight: 600; }
.pa-source summary code { font-weight: 400; font-size: 0.8em; color: var(--body-text-color-subdued); }
.pa-source p { line-height: 1.5; }
.pa-source mark { background: #ffe58a; color: inherit; padding: 0 2px; border-radius: 2px; }
#pa-chat a[href*="#pa-src-"] { text-decoration: none; font-weight: 600; }
/* The chat's toolbar (Gradio keeps a Clear icon there whatever `buttons` says) floats over the top messages
   once the chat scrolls; "New chat" below does the same. */
#pa-chat .top-panel { display: none !important; }
/* Long file names ("000_12a0d7b1c5c902c5.txt") fit the Source filter. */
#pa-filter-source { min-width: 280px; }
#pa-filter-source input { text-overflow: clip; }
.pa-trimmed { color: var(--body-text-color-subdued); font-size: 0.85em; }
#pa-chat .placeholder { max-width: 34em; margin: 0 auto; padding: 0 1.5em; text-align: center;
                        color: var(--body-text-color-subdued); }
#pa-related-out table { font-size: 0.92em; }
#pa-related-out td:nth-child(1), #pa-related-out th:nth-child(1),
#pa-related-out td:nth-child(3), #pa-related-out th:nth-child(3) { white-space: nowrap; width: 1%; }
#pa-related-out td { vertical-align: top; }
/* A comparison in the chat (assistant.faces.compared): facet and verdict columns stay one word wide. */
#pa-chat table td:first-child, #pa-chat table th:first-child,
#pa-chat table td:last-child, #pa-chat table th:last-child { white-space: nowrap; width: 1%; }
#pa-chat table td { vertical-align: top; }
.pa-weak { color: #b45309; font-weight: 500; }
.pa-verdict { font-style: italic; color: #92400e; }
.pa-also { color: var(--body-text-color-subdued); font-size: 0.9em; }
"""


CHAT_PLACEHOLDER = (
    "**Ask about the indexed papers.**\n\n"
    "*Which papers study …?* lists every match · *What is …?* explains a method · "
    "*How does it …?* follows up on the last answer.\n\n"
    "Each answer cites its abstracts as [1], [2]: click one to see the quoted sentence in the Sources panel."
)

# Clicking a citation "[n]" in an answer opens source n in the sources panel and scrolls to it.
HEAD = """<script>
document.addEventListener("click", function (ev) {
  var a = ev.target.closest && ev.target.closest('a[href*="#pa-src-"]');
  if (!a) return;
  ev.preventDefault(); ev.stopPropagation();
  var el = document.getElementById(a.getAttribute("href").split("#")[1]);
  if (!el) return;  /* an answer older than the panel keeps (EARLIER_SOURCES) */
  /* an earlier answer's source sits in the collapsed "earlier answers" section: open its way */
  for (var d = el.parentElement && el.parentElement.closest("details"); d; d = d.parentElement && d.parentElement.closest("details")) d.open = true;
  el.open = true;
  el.scrollIntoView({block: "nearest", behavior: "smooth"});
  el.classList.add("pa-flash");
  setTimeout(function () { el.classList.remove("pa-flash"); }, 1200);
}, true);
</script>""" + """<script>
/* A blank question is never sent (no empty bubble, no warning in the chat): Ask, List all and Enter on a
   blank box are stopped here, before Gradio sees them, and the box's placeholder says what to do. The
   API still answers a blank question with its one-line error. */
(function () {
  var HINT = "Type a question first, e.g. \u201cWhich papers study machine unlearning?\u201d";
  function blank(ev) {
    var box = document.querySelector("#pa-question textarea");
    if (!box) return false;
    if (box.value.trim() !== "") { if (box.dataset.paPlaceholder) box.placeholder = box.dataset.paPlaceholder; return false; }
    ev.preventDefault(); ev.stopImmediatePropagation();
    if (!box.dataset.paPlaceholder) box.dataset.paPlaceholder = box.placeholder;
    box.value = ""; box.dispatchEvent(new Event("input", {bubbles: true}));
    box.placeholder = HINT; box.focus();
    return true;
  }
  document.addEventListener("click", function (ev) {
    if (ev.target.closest && ev.target.closest("#pa-ask, #pa-list-go")) blank(ev);
  }, true);
  ["keydown", "keypress"].forEach(function (type) {
    document.addEventListener(type, function (ev) {
      if (ev.key === "Enter" && !ev.shiftKey && ev.target.closest && ev.target.closest("#pa-question")) blank(ev);
    }, true);
  });
})();
</script>"""


# The newest question at the top of the chat as soon as it is asked, and again once its answer has
# rendered (math). Gradio's own autoscroll is off (``autoscroll=False``): it jumps to a long answer's
# end whenever it re-renders, which on a narrow window scrolled the question and the answer's start
# away, at a moment no timer could predict on a busy machine. The chat itself is brought into the window.
SHOW_NEWEST_JS = """
window.paShowNewest = function () {
  var chat = document.querySelector('#pa-chat'); if (!chat) return;
  var users = chat.querySelectorAll('[data-testid="user"]'); var q = users[users.length - 1];
  var box = chat.querySelector('.bubble-wrap'); if (!q || !box) return;
  var top = q.getBoundingClientRect().top - box.getBoundingClientRect().top + box.scrollTop - 36;  /* below the "Chat" label */
  box.scrollTop = Math.max(0, Math.min(top, box.scrollHeight));
  var r = chat.getBoundingClientRect();
  if (r.top < 0 || r.bottom > window.innerHeight) chat.scrollIntoView({block: "nearest"});
};
(function () {
  var asked = 0;
  new MutationObserver(function () {
    var chat = document.querySelector('#pa-chat'); if (!chat) return;
    var n = chat.querySelectorAll('[data-testid="user"]').length;
    if (n !== asked) { asked = n; if (n) window.paShowNewest(); }
  }).observe(document.documentElement, {childList: true, subtree: true});
})();
"""
SHOW_NEWEST = """() => { if (window.paShowNewest) {
  window.paShowNewest(); setTimeout(window.paShowNewest, 300); } }"""


def page_options() -> dict:
    """Look and behaviour of the page, for ``demo.launch(**page_options())`` (the launch and the tests)."""
    import gradio as gr

    from assistant.faces import launch_options

    return dict(theme=gr.themes.Soft(), css=CSS, head=HEAD + "<script>" + SHOW_NEWEST_JS + "</script>", footer_links=[],
                **launch_options())


_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


def link_citations(markdown: str, key: str, sources: set[int]) -> str:
    """``[1, 2]`` → ``[[1](#pa-src-KEY-1), [2](#pa-src-KEY-2)]``: citations that open their source.

    Only numbers in ``sources`` (the answer's shown sources) become links; any other stays plain text.
    """
    def link(m: re.Match) -> str:
        nums = re.split(r"\s*,\s*", m.group(1))
        if not all(int(n) in sources for n in nums):
            return m.group(0)
        return "[" + ", ".join(f"[{n}](#pa-src-{key}-{n})" for n in nums) + "]"

    return _CITATION.sub(link, markdown)


def highlight(abstract: str, start: int, end: int) -> str:
    """The abstract as HTML with ``[start, end)`` wrapped in <mark> (escaped, offsets in characters of the
    stored text; math and emphasis rendered per part by :func:`assistant.text.markup.html`)."""
    if 0 <= start < end <= len(abstract):
        return (markup.html(abstract[:start]) + '<mark class="pa-cited">' + markup.html(abstract[start:end])
                + "</mark>" + markup.html(abstract[end:]))
    return markup.html(abstract)


def source_html(s: Source, open_: bool = False, key: str = "") -> str:
    """One source of the panel: a <details> (open with ``open_``) titled ``[n] title`` and the paper id, holding
    the abstract with the cited sentence highlighted and the paper's links; its id, ``pa-src-KEY-n``, is what
    a citation of the answer ``key`` links to."""
    weak = ' <span class="pa-weak">⚠ weak support</span>' if s.support == "weak" else ""
    sid = f"pa-src-{key}-{s.n}" if key else f"pa-src-{s.n}"
    return (f'<details class="pa-source" id="{sid}" data-n="{s.n}"{" open" if open_ else ""}>'
            f'<summary>[{s.n}] {markup.html(s.title or s.label)} <code>{html.escape(s.paper_id)}</code>{weak}</summary>'
            f'<p>{highlight(s.abstract, s.sentence_start, s.sentence_end)}</p>{links_html(s.links)}</details>')


def links_html(links: list[str]) -> str:
    """A source's code and project links as real links (http(s) only, escaped; a new tab, no opener)."""
    shown = [u for u in links if re.match(r"https?://", u)]
    if not shown:
        return ""
    return ('<p class="pa-links">Code / project: ' + " · ".join(
        f'<a href="{html.escape(u)}" target="_blank" rel="noopener noreferrer">{html.escape(u)}</a>' for u in shown)
        + "</p>")


EARLIER_SOURCES = 10
"""Earlier answers whose sources the panel keeps (collapsed), so their citations still open a source."""


def sources_html(ans: CitedAnswer | None, key: str = "", earlier: list[tuple[str, CitedAnswer]] = ()) -> str:
    """The sources panel: each cited paper (click to open its abstract, cited sentence highlighted), then
    ``earlier`` — ``[(key, answer)]``, newest first — collapsed, with ids unique to each answer (``key``)
    so a citation in an earlier answer opens that answer's source."""
    if ans is None:
        return '<div class="pa-sources"><p>Sources of the latest answer appear here.</p></div>'
    parts = ['<div class="pa-sources">']
    if ans.note:
        parts.append(f'<p class="pa-weak">{html.escape(ans.note)}</p>')
    if ans.verdict != Verdict.answered:
        parts.append(f'<p class="pa-verdict">{html.escape(VERDICT_TEXT[ans.verdict])}</p>')
    if ans.count is not None:
        parts.append(f"<p><b>{ans.count}</b> paper{'s' if ans.count != 1 else ''} found.</p>")
    parts += [source_html(s, open_=(i == 0), key=key) for i, s in enumerate(ans.sources)]
    if ans.also_retrieved:
        parts.append(f'<p class="pa-also">{html.escape(also_heading(ans))}: '
                     + "; ".join(f"{markup.html(s.title or s.label)} <code>{html.escape(s.paper_id)}</code>"
                                 for s in ans.also_retrieved) + "</p>")
    if earlier:
        parts.append(f'<details class="pa-earlier"><summary>Sources of earlier answers ({len(earlier)})</summary>')
        for k, a in earlier:
            parts.append(f'<p class="pa-also">For: {markup.html(a.question)}</p>')
            parts += [source_html(s, key=k) for s in a.sources]
        parts.append("</details>")
    parts.append("</div>")
    # One line: a blank line would end the raw-HTML block the Markdown panel passes through.
    return "".join(parts).replace("\n", " ")


def answer_markdown(ans: CitedAnswer) -> str:
    """The chat bubble: answer text, supporting quotes per citation, and flags."""
    out = []
    if ans.note:
        out.append(f"> ⚠ {markup.inert(ans.note)}\n")
    out.append(markup.markdown(ans.answer))
    if ans.verdict == Verdict.weak and VERDICT_TEXT[Verdict.weak] not in ans.answer:
        out.append(f"\n_{VERDICT_TEXT[Verdict.weak]}_")
    checked = [s for s in ans.sources if s.support]  # citations the LLM made, checked against the abstract
    if checked:
        bullet = "- " if len(checked) > 1 else ""  # one quote is a line, not a one-item list
        out.append("\n" + "\n".join(
            f"{bullet}[{s.n}] {markup.markdown(s.title or s.label)}: “{markup.markdown(s.sentence)}”"
            + (f" ⚠ weak support (similarity {s.similarity:.2f})" if s.support == "weak" else "")
            for s in checked))
    table = comparison_markdown(ans)  # papers side by side, as the CLI shows them (assistant.faces.compared)
    if table:
        out.append("\n" + table)
    if ans.removed_citations:
        out.append("\n_Removed citations of sources that were not given: "
                   + ", ".join(f"[{n}]" for n in ans.removed_citations) + "_")
    if ans.cut_reply:  # collapsed: a cut reply without a supported citation never leads the answer
        out.append('\n<details class="pa-cut-reply"><summary>The LLM\'s cut reply (failed the citation check)'
                   f"</summary>\n\n{markup.inert(ans.cut_reply)}\n\n</details>")
    return "\n".join(out)

