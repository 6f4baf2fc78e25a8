"""The Paper map tab: every indexed paper on a plane (PCA of the abstract embeddings), in clusters named by their
keywords, with the papers of a question, or else of the latest list or answer, starred. First the handler, a
plain function over a :class:`~assistant.page.state.Page`; then :func:`map_tab`, which builds the tab and binds it."""

from __future__ import annotations

import gradio as gr

from assistant.answer import require_papers
from assistant.page.state import Page, ui_error
from assistant.text import markup, valid_text
from vectorstore.papers import counted


def draw_map(page: Page, question: str, turns: list, last_list):
    """The paper map with the papers of ``question`` (else the latest list or answer) highlighted: yields
    ``(figure, Markdown beside it)``. Yields a progress line first when the map is not drawn yet (the first
    open takes seconds); an error is one "⚠" line."""
    from assistant.research import list_papers
    from assistant.research import index_map, is_cached, map_figure

    assistant = page.assistant
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
    yield map_figure(pmap, hits), map_info(pmap, hits, what)


def map_info(pmap, hits: list[str], what: str) -> str:
    """The Markdown beside the map: the counts, what is highlighted, then the clusters as one flat numbered
    list (they were a numbered paragraph followed by bullets each holding a number)."""
    info = [f"**{len(pmap.points)} papers**, {len(pmap.clusters)} clusters (PCA of the abstract embeddings; "
            f"KMeans; keywords by class-based TF-IDF)."]
    if what:
        info.append(f"Highlighted (★): {counted(len(hits), 'paper')} for “{markup.inert(what)}”.")
    return "\n\n".join(info) + "\n\n" + "\n".join(markup.inert(line) for line in pmap.cluster_lines())


def map_tab(page: Page, tab: gr.Tab, turns: gr.State, last_list: gr.State) -> None:
    """Build the Paper map tab (inside ``tab``) and bind :func:`draw_map`: when the tab is opened, and for a
    question. ``turns`` and ``last_list``: the Chat tab's, whose latest answer or list is highlighted."""
    with gr.Row():
        map_q = gr.Textbox(label="Highlight the papers of a question (empty: the latest answer or list)",
                           scale=5, elem_id="pa-map-question")
        map_btn = gr.Button("Show on map", variant="primary", scale=1, elem_id="pa-map-go")
    map_plot = gr.Plot(elem_id="pa-map-plot")
    info_md = gr.Markdown(elem_id="pa-map-info")

    def show_map(question: str, turns: list, last_list):
        yield from draw_map(page, question, turns, last_list)

    inputs, outputs = [map_q, turns, last_list], [map_plot, info_md]
    tab.select(show_map, inputs, outputs, api_name=False)
    map_btn.click(show_map, inputs, outputs, api_name="map", api_visibility=page.api_visibility)
    map_q.submit(show_map, inputs, outputs, api_name=False)
