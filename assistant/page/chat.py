"""The Chat tab: streamed, cited answers beside the sources panel, list mode (every matching paper, with the count),
the filters, New chat, the BibTeX and Markdown downloads (:mod:`assistant.page.exports`) and the ``/ask``
endpoint (an answer as JSON). First the handlers, plain functions over a :class:`~assistant.page.state.Page`;
then :func:`chat_tab`, which builds the tab's components and binds the handlers to them."""

from __future__ import annotations

import time
import uuid
from types import SimpleNamespace

import gradio as gr

from assistant.answer import require_papers
from assistant.research import reply, reply_stream
from assistant.page.exports import export_files
from assistant.page.render import CHAT_PLACEHOLDER, EARLIER_SOURCES, SHOW_NEWEST, answer_markdown, link_citations, sources_html
from assistant.page.state import ANY, MAX_HISTORY_TURNS, Page, make_filters, trim_display, ui_error
from assistant.text import markup, valid_text


FACETS = ("venue", "year", "source", "category")
"""The filter dropdowns, in the page's order."""


def facet_choices(page: Page) -> dict[str, list[str]]:
    """The filter dropdowns' choices: every venue, year, source file and category the index holds now."""
    store = page.assistant.index.store
    return {f: [ANY] + sorted(map(str, store.field_values("categories" if f == "category" else f))) for f in FACETS}


def answer(page: Page, message: str, history: list, turns: list, venue: str = ANY, year: str = ANY,
           source: str = ANY, has_code: bool = False, session: str | None = None, category: str = ANY):
    """Answer ``message`` in the chat: yields ``(box, history, turns, sources panel)`` as the answer streams.
    ``turns``: ``[(question, CitedAnswer)]``, what a follow-up reads. Stops writing once New chat cleared
    ``session``'s chat. An error is one line in the chat, never a traceback."""
    epoch = page.chat_epochs.get(session, 0)
    turns = list(turns or [])[-MAX_HISTORY_TURNS:]
    message = valid_text(message or "")  # invalid UTF-8 (a lone surrogate in the JSON) becomes U+FFFD
    history = trim_display(list(history or []) + [{"role": "user", "content": markup.inert(message)}])
    text = ""
    try:
        require_papers(page.assistant.index)
        stream = reply_stream(page.assistant, message, history=turns[-MAX_HISTORY_TURNS:],
                              filters=make_filters(venue, year, source, has_code, category))
        text = ""
        history.append({"role": "assistant", "content": ""})
        final = None
        # The box is cleared at once, and never again, so a next question typed while the answer
        # is prepared or streams is kept.
        yield "", history, turns, gr.update()
        box_update = gr.update()
        for piece in stream:
            if page.chat_epochs.get(session, 0) != epoch:
                return
            if isinstance(piece, str):
                text += piece
                history[-1]["content"] = markup.markdown(text)
                yield box_update, history, turns, gr.update()
                box_update = gr.update()
            else:
                final = piece
        if page.chat_epochs.get(session, 0) != epoch:
            return
        key = uuid.uuid4().hex[:8]  # citation links of this answer open this answer's sources
        history[-1]["content"] = link_citations(answer_markdown(final), key, {s.n for s in final.sources})
        turns.append((final.standalone_question or final.question, final))
        earlier = page.answered.get(session, [])
        page.answered[session] = [(key, final), *earlier][: EARLIER_SOURCES + 1]
        yield box_update, history, turns[-MAX_HISTORY_TURNS:], sources_html(final, key, earlier[:EARLIER_SOURCES])
    except Exception as exc:  # noqa: BLE001 - one clear line in the chat, never a traceback
        if history and history[-1]["role"] == "assistant":
            history.pop()
        history.append({"role": "assistant", "content": f"⚠ {markup.inert(ui_error(exc))}"})
        # Nothing answered yet (a question too long, say): the question goes back in the box to fix.
        yield message if not text else gr.update(), history, turns, gr.update()


def answer_json(page: Page, question: str) -> dict:
    """``/ask``: the answer as ``ask --json`` prints it. Raises gr.Error with the one line for any error."""
    try:
        require_papers(page.assistant.index)
        return reply(page.assistant, question).model_dump(mode="json", by_alias=True)  # "citations", as ask --json
    except Exception as exc:  # noqa: BLE001 - the client gets the line, the log no traceback
        raise gr.Error(ui_error(exc), print_exception=False) from None


def list_all(page: Page, message: str, history: list, turns: list, venue: str = ANY, year: str = ANY,
             source: str = ANY, has_code: bool = False, category: str = ANY) -> tuple:
    """List mode: every paper that matches ``message``, as ``(box, history, turns, sources panel, the list or None)``."""
    from assistant.relevance import as_answer
    from assistant.research import list_papers
    from assistant.faces import list_html, list_markdown

    message = valid_text(message or "")
    history = trim_display(list(history or []) + [{"role": "user", "content": markup.inert(message)}])
    try:
        require_papers(page.assistant.index)
        result = list_papers(page.assistant, message, filters=make_filters(venue, year, source, has_code, category))
    except Exception as exc:  # noqa: BLE001
        history.append({"role": "assistant", "content": f"⚠ {markup.inert(ui_error(exc))}"})
        return message, history, turns, gr.update(), None
    history.append({"role": "assistant", "content": list_markdown(result)})
    # A turn like an answer's, so "tell me more about the second one" finds this list.
    turns = [*(turns or []), (result.question, as_answer(result))][-MAX_HISTORY_TURNS:]
    return "", history, turns, list_html(result), result


def on_enter(page: Page, message: str, history: list, turns: list, list_mode: bool, last_list, venue: str = ANY,
          year: str = ANY, source: str = ANY, has_code: bool = False, session: str | None = None,
          category: str = ANY):
    """Enter in the question box: list every matching paper in list mode, else answer. Yields what
    :func:`answer` yields, and the latest list (None after an answer)."""
    if list_mode:
        yield list_all(page, message, history, turns, venue, year, source, has_code, category)
        return
    for out in answer(page, message, history, turns, venue, year, source, has_code, session, category):
        yield (*out, None)  # an answer replaces the last list (the map and exports follow the latest)


def new_chat(page: Page, session: str | None) -> tuple:
    """New chat: ``session``'s answer still streaming stops writing, its earlier sources are forgotten. Returns the
    cleared ``(chat, turns, sources panel, last list)``."""
    page.chat_epochs[session] = page.chat_epochs.get(session, 0) + 1
    page.answered.pop(session, None)
    return [], [], sources_html(None), None


def chat_tab(page: Page, facets: dict[str, list[str]]) -> SimpleNamespace:
    """Build the Chat tab (inside its ``gr.Tab``) with the filter choices ``facets`` and bind the handlers.
    Returns its components by name; the map reads ``turns`` and ``last_list``, the page's load event
    refreshes the filters (``f_venue``, ``f_year``, ``f_source``, ``f_category``)."""
    c = _components(facets)
    _bind(c, _endpoints(page), page.api_visibility)
    return c


def _components(facets: dict[str, list[str]]) -> SimpleNamespace:
    """The tab's components, in the page's order (chat, question box, list mode, filters; the sources panel and
    its downloads), and the session state the handlers pass along (``turns``, ``last_list``)."""
    c = SimpleNamespace()
    with gr.Row():
        with gr.Column(scale=3):
            # No label chip and no toolbar (share, copy all, clear; CSS hides the rest): Gradio floats
            # them over the top messages once the chat scrolls. "New chat" clears; messages keep a copy.
            c.chatbot = gr.Chatbot(label="Chat", show_label=False, buttons=["copy"], height=480,
                                   elem_id="pa-chat", placeholder=CHAT_PLACEHOLDER,
                                   latex_delimiters=markup.LATEX_DELIMITERS, autoscroll=False)
            with gr.Row():
                c.box = gr.Textbox(placeholder="Ask a question about the papers…", show_label=False,
                                   scale=5, elem_id="pa-question")
                c.send = gr.Button("Ask", variant="primary", scale=1, elem_id="pa-ask")
                c.list_send = gr.Button("List all", variant="primary", scale=1, visible=False, elem_id="pa-list-go")
            c.list_mode = gr.Checkbox(False, label="List mode: every paper that matches, with the count",
                                      elem_id="pa-list-mode")
            with gr.Accordion("Filters", open=False, elem_id="pa-filters"):
                with gr.Row():
                    c.f_venue = gr.Dropdown(facets["venue"], value=ANY, label="Venue", elem_id="pa-filter-venue")
                    c.f_year = gr.Dropdown(facets["year"], value=ANY, label="Year", elem_id="pa-filter-year")
                    c.f_source = gr.Dropdown(facets["source"], value=ANY, label="Source file", scale=2,
                                             elem_id="pa-filter-source")
                    # Shown once the index holds a paper with categories (an arXiv snapshot, a .bib's primaryClass).
                    c.f_category = gr.Dropdown(facets["category"], value=ANY, label="Category",
                                               visible=len(facets["category"]) > 1, elem_id="pa-filter-category")
                c.f_code = gr.Checkbox(False, label="Only papers with code (a link in the abstract)",
                                       elem_id="pa-filter-code")
            c.clear = gr.Button("New chat", size="sm")
        with gr.Column(scale=2):
            gr.Markdown("### Sources")
            # Markdown passes the panel's HTML through and renders its math with the KaTeX
            # Gradio bundles (gr.HTML would show "$\\times$" raw).
            c.panel = gr.Markdown(sources_html(None), elem_id="pa-sources", latex_delimiters=markup.LATEX_DELIMITERS)
            with gr.Row():
                c.exp_bib = gr.DownloadButton("BibTeX", value=None, size="sm", interactive=False, elem_id="pa-export-bib")
                c.exp_md = gr.DownloadButton("Markdown", value=None, size="sm", interactive=False, elem_id="pa-export-md")
    c.turns = gr.State([])
    c.filters = [c.f_venue, c.f_year, c.f_source, c.f_code, c.f_category]
    c.last_list = gr.State(None)
    return c


def _endpoints(page: Page) -> SimpleNamespace:
    """The handlers as Gradio calls them: their parameters are the endpoints' (the API's names and defaults),
    and ``request`` is Gradio's, whose session the chat state is kept under."""
    def chat(message: str, history: list, turns: list, venue: str = ANY, year: str = ANY, source: str = ANY,
             has_code: bool = False, category: str = ANY, request: gr.Request | None = None):
        yield from answer(page, message, history, turns, venue, year, source, has_code,
                          getattr(request, "session_hash", None), category)

    def ask_api(question: str) -> dict:
        return answer_json(page, question)

    def list_chat(message: str, history: list, turns: list, venue: str = ANY, year: str = ANY, source: str = ANY,
                  has_code: bool = False, category: str = ANY):
        return list_all(page, message, history, turns, venue, year, source, has_code, category)

    def route(message: str, history: list, turns: list, list_mode: bool, last_list, venue: str = ANY,
               year: str = ANY, source: str = ANY, has_code: bool = False, category: str = ANY,
               request: gr.Request | None = None):
        yield from on_enter(page, message, history, turns, list_mode, last_list, venue, year, source, has_code,
                         getattr(request, "session_hash", None), category)

    def refresh_exports(turns: list, last_list, list_mode: bool):
        return export_files(page, turns, last_list, list_mode)

    def cleared(request: gr.Request):
        return new_chat(page, request.session_hash)

    def settled():
        # An update the cancelled stream sent just before it stopped can reach the page
        # after the clear (seen on a loaded machine): clear once more when it has landed.
        time.sleep(0.5)
        return [], [], sources_html(None), None

    return SimpleNamespace(chat=chat, ask_api=ask_api, list_chat=list_chat, route=route,
                           refresh_exports=refresh_exports, cleared=cleared, settled=settled)


def _bind(c: SimpleNamespace, fn: SimpleNamespace, api_visibility: str) -> None:
    """Bind the endpoints ``fn`` to the components ``c``: Ask (``/chat``), Enter, List all (``/list``), New chat
    (``/new_chat``), the downloads, and ``/ask``, which has no visible component."""
    # A question asked while an answer is still coming is asked after it ("once", Gradio's default,
    # dropped it: the question stayed in the box and nothing happened); one chat writes at a time.
    one_at_a_time = dict(trigger_mode="always_last", concurrency_id="chat")
    asked = c.send.click(fn.chat, [c.box, c.chatbot, c.turns, *c.filters], [c.box, c.chatbot, c.turns, c.panel],
                         api_name="chat", api_visibility=api_visibility, **one_at_a_time)
    asked.then(lambda: None, None, [c.last_list], api_name=False)
    submitted = c.box.submit(fn.route, [c.box, c.chatbot, c.turns, c.list_mode, c.last_list, *c.filters],
                             [c.box, c.chatbot, c.turns, c.panel, c.last_list], api_name=False, **one_at_a_time)
    listed = c.list_send.click(fn.list_chat, [c.box, c.chatbot, c.turns, *c.filters],
                               [c.box, c.chatbot, c.turns, c.panel, c.last_list],
                               api_name="list", api_visibility=api_visibility, **one_at_a_time)
    for ev in (asked, submitted, listed):
        ev.then(None, None, None, js=SHOW_NEWEST, api_name=False)
    c.list_mode.change(lambda on: (gr.update(visible=not on), gr.update(visible=on)), c.list_mode,
                       [c.send, c.list_send], api_name=False)
    c.panel.change(fn.refresh_exports, [c.turns, c.last_list, c.list_mode], [c.exp_bib, c.exp_md], api_name=False)
    # A new chat forgets the last list too: exports and the map's highlight follow it.
    # It also stops an answer still streaming, which would otherwise write the old chat back.
    wiped = [c.chatbot, c.turns, c.panel, c.last_list]
    # Also the API's way to start over: a client's conversation lives in its session, not in the
    # `history` it sends (that is the display), so a script calls /new_chat between conversations.
    c.clear.click(fn.cleared, None, wiped, api_name="new_chat", api_visibility=api_visibility,
                  cancels=[asked, submitted, listed]).then(fn.settled, None, wiped, api_name=False)
    api_out = gr.JSON(visible=False)
    api_in = gr.Textbox(visible=False)
    api_btn = gr.Button(visible=False)
    api_btn.click(fn.ask_api, api_in, api_out, api_name="ask", api_visibility=api_visibility)
