"""The chat page (Gradio): one module per tab, each its handlers (plain functions over the page's state) and then
its components: ``chat`` (answers, list mode, filters, New chat; its downloads: ``exports``), ``related``
(related work) and ``paper_map``; what they share (``state``: the :class:`~assistant.page.state.Page`, one-line
errors, filters, the chat's bounds); the HTML, Markdown, CSS and scripts they show (``render``); the Blocks
app that holds the tabs (``blocks``); and serving it (``serving``). ``app.py`` and ``paper-assistant serve``
start it. A thin face over the library: it renders CitedAnswer and RelatedPaper records and nothing else.

Imports: ``mcp`` and what is before it (in practice ``faces``, ``research`` and the answer path)."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "blocks": ("build_app",),
    "related": ("BAR_CHOICES", "bar_value"),
    "render": ("CSS", "EARLIER_SOURCES", "HEAD", "answer_markdown", "highlight", "link_citations", "links_html",
        "page_options", "source_html", "sources_html"),
    "serving": ("check_port_free", "is_loopback", "launch", "parse_auth", "prepare_assistant"),
    "state": ("ANY", "MAX_DISPLAY_TURNS", "MAX_HISTORY_TURNS", "make_filters", "trim_display", "ui_error"),
})
