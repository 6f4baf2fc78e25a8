"""The page as one Gradio Blocks app: its heading, the three tabs (:mod:`~assistant.page.chat`,
:mod:`~assistant.page.related`, :mod:`~assistant.page.paper_map`) over one :class:`~assistant.page.state.Page`,
and the load event that refreshes the choices each visitor sees."""

from __future__ import annotations

import html
import threading

import gradio as gr

from assistant.answer import Assistant
from assistant.page.chat import chat_tab, facet_choices
from assistant.page.exports import export_folder
from assistant.page.paper_map import map_tab
from assistant.page.related import paper_choices, related_tab
from assistant.page.state import Page
from assistant.settings import Settings


def heading(settings: Settings, assistant: Assistant) -> str:
    """The page's title and one line: how many abstracts, and who writes the answers."""
    writer = ("an LLM (" + html.escape(settings.llm.model or "") + ") writes answers" if assistant.llm
              else "answers are extracted from the abstracts (no LLM configured)")
    return (f"## Paper Assistant\nAsk about the {assistant.index.store.counts()[0]} indexed abstracts. "
            f"Every answer cites its sources; {writer}.")


def build_app(settings: Settings, assistant: Assistant) -> gr.Blocks:
    """The Blocks app over ``assistant`` (not launched). Behind a login (``settings.ui.auth``) the
    endpoints are left out of the API description, which Gradio also embeds in the login page, so a
    stranger does not read the index's venues, years and file names there."""
    page = Page(settings, assistant, export_dir=export_folder())
    # Reading every paper takes seconds at 23k papers (3.9 s of a 12 s start): the page is served
    # meanwhile, and its load event (current_choices) gets the list when the read is done.
    threading.Thread(target=paper_choices, args=(page,), name="paper-picker", daemon=True).start()
    facets = facet_choices(page)
    with gr.Blocks(title="Paper Assistant") as demo:
        gr.Markdown(heading(settings, assistant))
        with gr.Tab("Chat"):
            chat = chat_tab(page, facets)
        with gr.Tab("Related work"):
            rel_pick = related_tab(page)
        with gr.Tab("Paper map", elem_id="pa-map-tab") as tab:
            map_tab(page, tab, chat.turns, chat.last_list)

        def current_choices():
            """The filter and paper-picker choices at page load (papers ingested while the app runs appear)."""
            try:
                now, pick = facet_choices(page), paper_choices(page)
            except Exception:  # noqa: BLE001 - a store that went away: keep the start-up choices
                return gr.update(), gr.update(), gr.update(), gr.update(), gr.update()
            return (*(gr.update(choices=now[f]) for f in ("venue", "year", "source")),
                    gr.update(choices=now["category"], visible=len(now["category"]) > 1), gr.update(choices=pick))

        demo.load(current_choices, None, [chat.f_venue, chat.f_year, chat.f_source, chat.f_category, rel_pick],
                  api_name=False)
    return demo
