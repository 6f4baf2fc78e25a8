"""The Gradio page: Chat (streamed, cited answers with a sources panel) and Related work.

A thin face over :mod:`assistant`: it renders CitedAnswer and RelatedPaper records and nothing else.
Binds 127.0.0.1 by default; any other address requires ``--auth user:pass``. Analytics are off,
so starting the page makes no outbound connection.
"""

from __future__ import annotations

import html
import ipaddress
import os
import re
import sys
import threading
import time

import vectorstore.offline  # noqa: E402,F401  before gradio: every library's telemetry off (see that module)
import gradio as gr  # noqa: E402

from assistant.answer import Assistant, require_papers  # noqa: E402
from assistant.faces import also_heading  # noqa: E402
from assistant.settings import Calibration, Settings  # noqa: E402
from assistant.text import markup, valid_text  # noqa: E402
from assistant.types import CitedAnswer, Source, VERDICT_TEXT, Verdict  # noqa: E402
from vectorstore.papers import counted  # noqa: E402

MAX_HISTORY_TURNS = Calibration().history.ui_turns
"""Turns (question, answer) the assistant reads as context for a follow-up (``calibration.history.ui_turns``)."""
MAX_DISPLAY_TURNS = 30
"""Turns the chat shows. Older ones are dropped from the page: the whole chat travels with every
request, so an unbounded one would make each question slower than the last."""

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
    """Look and behaviour of the page, for ``demo.launch(**page_options())`` (the CLI and the tests)."""
    from assistant.faces import launch_options

    return dict(theme=gr.themes.Soft(), css=CSS, head=HEAD + "<script>" + SHOW_NEWEST_JS + "</script>", footer_links=[],
                **launch_options())


_CITATION = re.compile(r"\[(\d+(?:\s*,\s*\d+)*)\]")


ANY = "any"
BAR_CHOICES = ["calibrated", "0% (show all)", "30%", "40%", "50%", "60%", "70%"]
"""The related-work tab's similarity bars: the calibrated one (fitted on CSFCube, lower for a short
text), or a fixed percentage, as ``related --min-similarity``."""


def bar_value(choice: str | None) -> float | None:
    """A BAR_CHOICES entry as related_work's ``bar``: None for the calibrated one (or anything else)."""
    m = re.match(r"(\d+)%", choice or "")
    return int(m.group(1)) / 100 if m else None


def ui_error(exc: BaseException) -> str:
    """One line for the page. User errors (an empty question, an unknown paper, a filter that matches
    nothing) are shown as they are; anything else, such as a Chroma server that went away, is named
    and logged as one line, so the page and the log stay readable and the next question can succeed."""
    from assistant.faces import one_line, user_errors

    if isinstance(exc, user_errors()) or isinstance(exc, KeyError):
        return one_line(exc)
    line = f"{type(exc).__name__}: {one_line(exc)}"
    print(f"paper-assistant: request failed: {line}", file=sys.stderr)
    return f"the request failed ({line}); if the index is on a Chroma server, check that it is running"


def make_filters(venue: str | None = ANY, year: str | int | None = ANY, source: str | None = ANY,
                 has_code: bool = False):
    """The chat's filter dropdowns and code checkbox as retrieval Filters (``"any"`` or empty: no filter)."""
    from assistant.retrieval import Filters

    def value(v):
        return None if v in (None, "", ANY) else v

    y = value(year)
    return Filters(venue=value(venue), year=int(y) if y is not None else None, source=value(source),
                   has_code=True if has_code else None)


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


def trim_display(history: list) -> list:
    """The latest ``MAX_DISPLAY_TURNS`` turns of a chat (a turn starts at a user message), behind a note."""
    starts = [i for i, m in enumerate(history) if m.get("role") == "user"]
    if len(starts) <= MAX_DISPLAY_TURNS:
        return history
    note = {"role": "assistant", "content": f'<span class="pa-trimmed">Earlier turns are not shown; the latest '
                                           f'{MAX_DISPLAY_TURNS} are kept.</span>'}
    return [note] + history[starts[-MAX_DISPLAY_TURNS]:]


def highlight(abstract: str, start: int, end: int) -> str:
    """The abstract as HTML with ``[start, end)`` wrapped in <mark> (escaped, offsets in characters of the
    stored text; math and emphasis rendered per part by :func:`assistant.text.markup.html`)."""
    if 0 <= start < end <= len(abstract):
        return (markup.html(abstract[:start]) + '<mark class="pa-cited">' + markup.html(abstract[start:end])
                + "</mark>" + markup.html(abstract[end:]))
    return markup.html(abstract)


def source_html(s: Source, open_: bool = False, key: str = "") -> str:
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
    if ans.removed_citations:
        out.append("\n_Removed citations of sources that were not given: "
                   + ", ".join(f"[{n}]" for n in ans.removed_citations) + "_")
    if ans.cut_reply:  # collapsed: a cut reply without a supported citation never leads the answer
        out.append('\n<details class="pa-cut-reply"><summary>The LLM\'s cut reply (failed the citation check)'
                   f"</summary>\n\n{markup.inert(ans.cut_reply)}\n\n</details>")
    return "\n".join(out)


def build_app(settings: Settings, assistant: Assistant) -> gr.Blocks:
    """The Blocks app over ``assistant`` (not launched). Behind a login (``settings.ui.auth``) the
    endpoints are left out of the API description, which Gradio also embeds in the login page, so a
    stranger does not read the index's venues, years and file names there."""
    api_visibility = "undocumented" if settings.ui.auth else "public"
    def labelled(ps) -> list[tuple[str, str]]:
        return sorted((f"{p.display()} — {p.id}", p.id) for p in ps)

    picker = {"stamp": None, "choices": []}
    picker_lock = threading.Lock()

    def paper_choices() -> list[tuple[str, str]]:
        """The related-work picker's papers, read again only when the index changed."""
        with picker_lock:
            stamp = assistant.index.store.state_stamp()
            if stamp != picker["stamp"]:
                picker.update(stamp=stamp, choices=labelled(assistant.index.store.all_papers()[0]))
            return picker["choices"]

    # Reading every paper takes seconds at 23k papers (3.9 s of a 12 s start): the page is served
    # meanwhile, and its load event (current_choices) gets the list when the read is done.
    threading.Thread(target=paper_choices, name="paper-picker", daemon=True).start()

    def facet_choices() -> dict[str, list[str]]:
        """The filter dropdowns' choices: every venue, year and source file the index holds now."""
        return {f: [ANY] + sorted(map(str, assistant.index.store.field_values(f))) for f in ("venue", "year", "source")}

    facets = facet_choices()

    # New chat, per browser session: an answer still streaming stops writing once its chat was
    # cleared (Gradio's cancel alone can lose the race with updates already on their way).
    chat_epochs: dict[str, int] = {}
    # Per browser session, the latest answers as [(key, answer)], newest first: the panel keeps their sources.
    answered: dict[str, list[tuple[str, CitedAnswer]]] = {}

    def chat(message: str, history: list, turns: list, venue: str = ANY, year: str = ANY, source: str = ANY,
             has_code: bool = False, request: gr.Request | None = None):
        sid = getattr(request, "session_hash", None)
        epoch = chat_epochs.get(sid, 0)
        turns = list(turns or [])[-MAX_HISTORY_TURNS:]
        message = valid_text(message or "")  # invalid UTF-8 (a lone surrogate in the JSON) becomes U+FFFD
        history = trim_display(list(history or []) + [{"role": "user", "content": markup.inert(message)}])
        text = ""
        try:
            require_papers(assistant.index)
            stream = assistant.ask_stream(message, history=turns[-MAX_HISTORY_TURNS:],
                                          filters=make_filters(venue, year, source, has_code))
            text = ""
            history.append({"role": "assistant", "content": ""})
            final = None
            # The box is cleared at once, and never again, so a next question typed while the answer
            # is prepared or streams is kept.
            yield "", history, turns, gr.update()
            box_update = gr.update()
            for piece in stream:
                if chat_epochs.get(sid, 0) != epoch:
                    return
                if isinstance(piece, str):
                    text += piece
                    history[-1]["content"] = markup.markdown(text)
                    yield box_update, history, turns, gr.update()
                    box_update = gr.update()
                else:
                    final = piece
            if chat_epochs.get(sid, 0) != epoch:
                return
            key = uuid.uuid4().hex[:8]  # citation links of this answer open this answer's sources
            history[-1]["content"] = link_citations(answer_markdown(final), key, {s.n for s in final.sources})
            turns.append((final.standalone_question or final.question, final))
            earlier = answered.get(sid, [])
            answered[sid] = [(key, final), *earlier][: EARLIER_SOURCES + 1]
            yield box_update, history, turns[-MAX_HISTORY_TURNS:], sources_html(final, key, earlier[:EARLIER_SOURCES])
        except Exception as exc:  # noqa: BLE001 - one clear line in the chat, never a traceback
            if history and history[-1]["role"] == "assistant":
                history.pop()
            history.append({"role": "assistant", "content": f"⚠ {markup.inert(ui_error(exc))}"})
            # Nothing answered yet (a question too long, say): the question goes back in the box to fix.
            yield message if not text else gr.update(), history, turns, gr.update()

    def ask_api(question: str) -> dict:
        try:
            require_papers(assistant.index)
            return assistant.ask(question).model_dump(mode="json", by_alias=True)  # "citations", as ask --json
        except Exception as exc:  # noqa: BLE001 - the client gets the line, the log no traceback
            raise gr.Error(ui_error(exc), print_exception=False) from None

    def related(text: str, paper_id: str | None, last: str = "text", k: float = 10, bar: str = BAR_CHOICES[0]):
        """Related work for the input the user touched last (``last``: "text" or "paper"), or the one given:
        the ``k`` best candidates, kept when their similarity clears ``bar`` (one of BAR_CHOICES: the
        calibrated bar, or a percentage as the CLI's ``--min-similarity``)."""
        from assistant.research import related_work
        from assistant.faces import related_markdown

        paper_id = (paper_id or "").strip() or None
        use_paper = bool(paper_id) and (last == "paper" or not (text or "").strip())
        try:
            require_papers(assistant.index)
            items = related_work(assistant.retriever, assistant.sentences, text=None if use_paper else text,
                                 paper_id=paper_id if use_paper else None, k=max(1, min(20, int(k or 10))),
                                 bar=bar_value(bar))
            query = assistant.index.store.get_papers([paper_id])[paper_id] if use_paper else None
        except Exception as exc:  # noqa: BLE001
            return f"⚠ {markup.inert(ui_error(exc))}"
        head = f"Related to **{markup.markdown(query.display())}** ({markup.inert(paper_id)}):" if use_paper else "Related to your text:"
        if assistant.llm is not None and items:
            from assistant.research import add_llm_summaries

            # One paragraph per listed paper: the bar keeps the list short.
            failed = add_llm_summaries(assistant.llm, settings.llm, settings.prompts_dir,
                                       query.text if use_paper else items.text, items, n=len(items))
            if failed:
                return f"⚠ {markup.inert(failed)}\n\n{head}\n\n" + related_markdown(items)
        return f"{head}\n\n" + related_markdown(items)

    # --- list mode, exports, paper map (issue 6) ---------------------------------------------
    import tempfile
    import uuid

    import atexit
    import shutil

    export_dir = tempfile.mkdtemp(prefix="paper-assistant-export-")
    # Downloads are served from here while the app runs; nothing should outlive the process.
    atexit.register(shutil.rmtree, export_dir, True)

    def list_chat(message: str, history: list, turns: list, venue: str = ANY, year: str = ANY, source: str = ANY,
                  has_code: bool = False):
        from assistant.relevance import as_answer
        from assistant.research import list_papers
        from assistant.faces import list_html, list_markdown

        message = valid_text(message or "")
        history = trim_display(list(history or []) + [{"role": "user", "content": markup.inert(message)}])
        try:
            require_papers(assistant.index)
            result = list_papers(assistant, message, filters=make_filters(venue, year, source, has_code))
        except Exception as exc:  # noqa: BLE001
            history.append({"role": "assistant", "content": f"⚠ {markup.inert(ui_error(exc))}"})
            return message, history, turns, gr.update(), None
        history.append({"role": "assistant", "content": list_markdown(result)})
        # A turn like an answer's, so "tell me more about the second one" finds this list.
        turns = [*(turns or []), (result.question, as_answer(result))][-MAX_HISTORY_TURNS:]
        return "", history, turns, list_html(result), result

    def route(message: str, history: list, turns: list, list_mode: bool, last_list, venue: str = ANY,
              year: str = ANY, source: str = ANY, has_code: bool = False, request: gr.Request | None = None):
        """Enter in the question box: list every matching paper in list mode, else answer."""
        if list_mode:
            yield list_chat(message, history, turns, venue, year, source, has_code)
            return
        for out in chat(message, history, turns, venue, year, source, has_code, request):
            yield (*out, None)  # an answer replaces the last list (the map and exports follow the latest)

    def refresh_exports(turns: list, last_list, list_mode: bool):
        """Write the cited (or listed) papers as BibTeX and Markdown for the download buttons."""
        from assistant.research import items_from_answer, items_from_list, write_export

        if list_mode and last_list is not None:
            items, heading = items_from_list(last_list), f"Papers for: {last_list.question}"
        elif turns:
            ans = turns[-1][1]
            items, heading = items_from_answer(ans, assistant.index.store), f"Sources for: {ans.question}"
        else:
            items = []
        if not items:
            return (gr.update(value=None, interactive=False, label="BibTeX"),
                    gr.update(value=None, interactive=False, label="Markdown"))
        folder = os.path.join(export_dir, uuid.uuid4().hex[:12])
        bib = write_export(os.path.join(folder, "papers.bib"), items, heading)
        md = write_export(os.path.join(folder, "papers.md"), items, heading)
        return (gr.update(value=str(bib), interactive=True, label=f"BibTeX ({len(items)})"),
                gr.update(value=str(md), interactive=True, label=f"Markdown ({len(items)})"))

    def show_map(question: str, turns: list, last_list):
        """The paper map with the papers of ``question`` (else the latest list or answer) highlighted.
        Yields a progress line first when the map is not drawn yet (the first open takes seconds)."""
        from assistant.research import list_papers
        from assistant.research import index_map, is_cached, map_figure

        hits, what, question = [], "", valid_text(question or "")
        try:
            require_papers(assistant.index)
            if not is_cached(assistant.index.store):
                yield gr.update(), (f"Drawing the map of {counted(assistant.index.store.counts()[0], 'paper')}: "
                                    "layout, clusters and their keywords (the first time takes a few seconds)…")
            pmap = index_map(assistant.index.store)
            if question and question.strip():
                hits, what = [p.id for p in list_papers(assistant, question).papers], question.strip()
            elif last_list is not None:
                hits, what = [p.id for p in last_list.papers], last_list.question
            elif turns:
                hits, what = [s.paper_id for s in turns[-1][1].sources], turns[-1][1].question
        except Exception as exc:  # noqa: BLE001
            yield gr.update(), f"⚠ {markup.inert(ui_error(exc))}"
            return
        info = [f"**{len(pmap.points)} papers**, {len(pmap.clusters)} clusters (PCA of the abstract embeddings; "
                f"KMeans; keywords by class-based TF-IDF)."]
        if what:
            info.append(f"Highlighted (★): {counted(len(hits), 'paper')} for “{markup.inert(what)}”.")
        info += [f"{c.id + 1}. {', '.join(c.keywords)} ({c.size})" for c in pmap.clusters]
        yield map_figure(pmap, hits), "\n\n".join(info[:2]) + "\n\n" + "\n".join(f"- {x}" for x in info[2:])

    with gr.Blocks(title="Paper Assistant") as demo:
        gr.Markdown(f"## Paper Assistant\nAsk about the {assistant.index.store.counts()[0]} indexed abstracts. Every answer cites its sources; "
                    f"{'an LLM (' + html.escape(settings.llm.model or '') + ') writes answers' if assistant.llm else 'answers are extracted from the abstracts (no LLM configured)'}.")
        with gr.Tab("Chat"):
            with gr.Row():
                with gr.Column(scale=3):
                    # No label chip and no toolbar (share, copy all, clear; CSS hides the rest): Gradio floats
                    # them over the top messages once the chat scrolls. "New chat" clears; messages keep a copy.
                    chatbot = gr.Chatbot(label="Chat", show_label=False, buttons=["copy"], height=480,
                                         elem_id="pa-chat", placeholder=CHAT_PLACEHOLDER,
                                         latex_delimiters=markup.LATEX_DELIMITERS, autoscroll=False)
                    with gr.Row():
                        box = gr.Textbox(placeholder="Ask a question about the papers…", show_label=False,
                                         scale=5, elem_id="pa-question")
                        send = gr.Button("Ask", variant="primary", scale=1, elem_id="pa-ask")
                        list_send = gr.Button("List all", variant="primary", scale=1, visible=False, elem_id="pa-list-go")
                    list_mode = gr.Checkbox(False, label="List mode: every paper that matches, with the count",
                                            elem_id="pa-list-mode")
                    with gr.Accordion("Filters", open=False, elem_id="pa-filters"):
                        with gr.Row():
                            f_venue = gr.Dropdown(facets["venue"], value=ANY, label="Venue",
                                                  elem_id="pa-filter-venue")
                            f_year = gr.Dropdown(facets["year"], value=ANY, label="Year",
                                                 elem_id="pa-filter-year")
                            f_source = gr.Dropdown(facets["source"], value=ANY, label="Source file", scale=2,
                                                   elem_id="pa-filter-source")
                        f_code = gr.Checkbox(False, label="Only papers with code (a link in the abstract)",
                                             elem_id="pa-filter-code")
                    clear = gr.Button("New chat", size="sm")
                with gr.Column(scale=2):
                    gr.Markdown("### Sources")
                    # Markdown passes the panel's HTML through and renders its math with the KaTeX
                    # Gradio bundles (gr.HTML would show "$\\times$" raw).
                    panel = gr.Markdown(sources_html(None), elem_id="pa-sources",
                                        latex_delimiters=markup.LATEX_DELIMITERS)
                    with gr.Row():
                        exp_bib = gr.DownloadButton("BibTeX", value=None, size="sm", interactive=False, elem_id="pa-export-bib")
                        exp_md = gr.DownloadButton("Markdown", value=None, size="sm", interactive=False, elem_id="pa-export-md")
            turns = gr.State([])
            filters = [f_venue, f_year, f_source, f_code]
            last_list = gr.State(None)
            # A question asked while an answer is still coming is asked after it ("once", Gradio's default,
            # dropped it: the question stayed in the box and nothing happened); one chat writes at a time.
            one_at_a_time = dict(trigger_mode="always_last", concurrency_id="chat")
            asked = send.click(chat, [box, chatbot, turns, *filters], [box, chatbot, turns, panel], api_name="chat",
                               api_visibility=api_visibility, **one_at_a_time)
            asked.then(lambda: None, None, [last_list], api_name=False)
            submitted = box.submit(route, [box, chatbot, turns, list_mode, last_list, *filters],
                                   [box, chatbot, turns, panel, last_list], api_name=False, **one_at_a_time)
            listed = list_send.click(list_chat, [box, chatbot, turns, *filters], [box, chatbot, turns, panel, last_list],
                                     api_name="list", api_visibility=api_visibility, **one_at_a_time)
            for ev in (asked, submitted, listed):
                ev.then(None, None, None, js=SHOW_NEWEST, api_name=False)
            list_mode.change(lambda on: (gr.update(visible=not on), gr.update(visible=on)), list_mode, [send, list_send],
                             api_name=False)
            panel.change(refresh_exports, [turns, last_list, list_mode], [exp_bib, exp_md], api_name=False)
            # A new chat forgets the last list too: exports and the map's highlight follow it.
            # It also stops an answer still streaming, which would otherwise write the old chat back.
            def cleared(request: gr.Request):
                chat_epochs[request.session_hash] = chat_epochs.get(request.session_hash, 0) + 1
                answered.pop(request.session_hash, None)
                return [], [], sources_html(None), None

            def settled():
                # An update the cancelled stream sent just before it stopped can reach the page
                # after the clear (seen on a loaded machine): clear once more when it has landed.
                time.sleep(0.5)
                return [], [], sources_html(None), None

            wiped = [chatbot, turns, panel, last_list]
            # Also the API's way to start over: a client's conversation lives in its session, not in the
            # `history` it sends (that is the display), so a script calls /new_chat between conversations.
            clear.click(cleared, None, wiped, api_name="new_chat", api_visibility=api_visibility,
                        cancels=[asked, submitted, listed]).then(
                settled, None, wiped, api_name=False)
            api_out = gr.JSON(visible=False)
            api_in = gr.Textbox(visible=False)
            api_btn = gr.Button(visible=False)
            api_btn.click(ask_api, api_in, api_out, api_name="ask", api_visibility=api_visibility)
        with gr.Tab("Related work"):
            gr.Markdown("Paste a draft abstract, or pick an indexed paper (the one you touched last is used).")
            # No max_length: the browser would cut a longer text silently; related_work says so instead.
            rel_text = gr.Textbox(lines=6, label="Your abstract or paragraph", elem_id="pa-related-text")
            # Any id (the API, or a paper ingested since the page loaded): related_work checks it.
            rel_pick = gr.Dropdown(choices=picker["choices"], value=None, label="…or an indexed paper",
                                   elem_id="pa-related-pick", allow_custom_value=True)
            with gr.Row():
                rel_k = gr.Slider(1, 20, value=10, step=1, label="Papers to consider", elem_id="pa-related-k")
                rel_bar = gr.Dropdown(choices=BAR_CHOICES, value=BAR_CHOICES[0], label="Similarity bar",
                                      elem_id="pa-related-bar")
            rel_btn = gr.Button("Find related work", variant="primary", elem_id="pa-related-go")
            rel_out = gr.Markdown(elem_id="pa-related-out", latex_delimiters=markup.LATEX_DELIMITERS)
            # Whichever input was touched last is the query: a picked paper cannot be un-picked.
            rel_last = gr.State("text")
            rel_text.change(lambda: "text", None, rel_last, api_name=False)  # typed or pasted (paste fires no .input)
            rel_pick.input(lambda: "paper", None, rel_last, api_name=False)
            rel_btn.click(related, [rel_text, rel_pick, rel_last, rel_k, rel_bar], rel_out, api_name="related",
                          api_visibility=api_visibility)
        with gr.Tab("Paper map", elem_id="pa-map-tab") as map_tab:
            with gr.Row():
                map_q = gr.Textbox(label="Highlight the papers of a question (empty: the latest answer or list)",
                                   scale=5, elem_id="pa-map-question")
                map_btn = gr.Button("Show on map", variant="primary", scale=1, elem_id="pa-map-go")
            map_plot = gr.Plot(elem_id="pa-map-plot")
            map_info = gr.Markdown(elem_id="pa-map-info")
            map_tab.select(show_map, [map_q, turns, last_list], [map_plot, map_info], api_name=False)
            map_btn.click(show_map, [map_q, turns, last_list], [map_plot, map_info], api_name="map", api_visibility=api_visibility)
            map_q.submit(show_map, [map_q, turns, last_list], [map_plot, map_info], api_name=False)
        def current_choices():
            """The filter and paper-picker choices at page load (papers ingested while the app runs appear)."""
            try:
                now, pick = facet_choices(), paper_choices()
            except Exception:  # noqa: BLE001 - a store that went away: keep the start-up choices
                return gr.update(), gr.update(), gr.update(), gr.update()
            return (*(gr.update(choices=now[f]) for f in ("venue", "year", "source")), gr.update(choices=pick))

        demo.load(current_choices, None, [f_venue, f_year, f_source, rel_pick], api_name=False)
    return demo


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_auth(auth: str | None) -> tuple[str, str] | None:
    """``"user:pass"`` → ("user", "pass"); raises ValueError on another shape."""
    if not auth:
        return None
    if ":" not in auth or auth.startswith(":") or auth.endswith(":"):
        raise ValueError("auth must look like user:password")
    user, _, pw = auth.partition(":")
    return user, pw


def prepare_assistant(settings: Settings, ingest_default: bool = True) -> Assistant:
    """Ingest the configured corpus if the index is missing or stale, then open the Assistant."""
    from assistant.answer import corpus_to_refresh, get_assistant, get_index
    from vectorstore.ingest import ingest

    if ingest_default:
        from vectorstore.store import IndexInUseError

        was_new = not settings.index.exists()
        index = get_index(settings, create=True)
        try:
            report = ingest(corpus_to_refresh(settings, index, was_new), index, write_batch=settings.store.write_batch)
        except IndexInUseError as exc:
            if not index.store.counts()[0]:
                raise
            # Another process is writing (an ingest of more papers, say): readers need no lock.
            print(f"warning: {exc}; serving the index as it is (the papers it adds appear as they are written)",
                  file=sys.stderr)
        else:
            if report.added or report.updated or report.removed or report.skipped:
                print(f"ingested the corpus: {report.summary()}", file=sys.stderr)
            for reason in report.skipped:
                print(f"skipped: {reason}", file=sys.stderr)
    return get_assistant(settings)


def launch(settings: Settings, ingest_default: bool = True, block: bool = True):
    """Ingest if needed, build and launch the app. Raises ValueError for an exposed bind without auth."""
    host, port = settings.ui.host, settings.ui.port
    auth = parse_auth(settings.ui.auth)
    if ":" in host:
        raise ValueError(f"cannot serve on the IPv6 address {host}: use 127.0.0.1 (or an IPv4 address with --auth)")
    if not is_loopback(host) and not auth:
        raise ValueError(f"refusing to bind {host} without authentication: pass --auth user:pass "
                         "(or PAPER_ASSISTANT_UI__AUTH)")
    check_port_free(host, port)  # before ingesting, not after
    assistant = prepare_assistant(settings, ingest_default)
    demo = build_app(settings, assistant)
    demo.queue(default_concurrency_limit=20)
    try:
        from assistant.faces import LoginGuard

        result = demo.launch(server_name=host, server_port=port, auth=LoginGuard(*auth).check if auth else None, share=False,
                             prevent_thread_lock=True, quiet=True, **page_options())
    except OSError as exc:  # lost a race for the port since the check
        raise ValueError(f"cannot serve on {host}:{port}: {exc}".splitlines()[0]) from None
    # Our own line instead of Gradio's banner (which suggests share=True), once the page is up.
    print(f"Paper Assistant on http://{host}:{port}" + (" (login required)" if auth else ""), file=sys.stderr)
    if block:
        import signal

        if threading.current_thread() is threading.main_thread():
            # SIGTERM (a service manager, `kill`) ends the process like Ctrl-C, so the server closes
            # and the atexit clean-up (the export folder) runs; Python's default would skip both.
            signal.signal(signal.SIGTERM, _terminate)
        demo.block_thread()
    return result


def _terminate(signum, frame):
    raise KeyboardInterrupt


def check_port_free(host: str, port: int) -> None:
    """Raise ValueError (one line, what to do) when ``host:port`` cannot be bound, e.g. already in use."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ValueError(f"cannot serve on {host}:{port} ({exc.strerror or exc}): choose another port with "
                             "--port (or PAPER_ASSISTANT_UI__PORT)") from None


if __name__ == "__main__":  # `python app.py`: serve with the environment's settings (`paper-assistant serve` takes flags)
    from assistant.faces import exit_message
    from assistant.settings import load_settings

    try:
        launch(load_settings())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:  # one line, as the CLI prints it
        message, code = exit_message(exc)
        print(f"error: {message}", file=sys.stderr)
        sys.exit(code)
