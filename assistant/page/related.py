"""The Related work tab: a pasted draft, or an indexed paper picked from the list, and the indexed papers related
to it, each with what it shares and where it differs (an LLM's paragraph when one is configured). First the
handlers, plain functions over a :class:`~assistant.page.state.Page`; then :func:`related_tab`, which builds
the tab and binds them."""

from __future__ import annotations

import re

import gradio as gr

from assistant.answer import require_papers
from assistant.page.state import Page, ui_error
from assistant.text import markup

BAR_CHOICES = ["calibrated", "0% (show all)", "30%", "40%", "50%", "60%", "70%"]
"""The related-work tab's similarity bars: the calibrated one (fitted on CSFCube, lower for a short
text), or a fixed percentage, as ``related --min-similarity``."""


def bar_value(choice: str | None) -> float | None:
    """A BAR_CHOICES entry as related_work's ``bar``: None for the calibrated one (or anything else)."""
    m = re.match(r"(\d+)%", choice or "")
    return int(m.group(1)) / 100 if m else None


def labelled(papers) -> list[tuple[str, str]]:
    """The picker's ``(label, id)`` choices for ``papers``, by label."""
    return sorted((f"{p.display()} — {p.id}", p.id) for p in papers)


def paper_choices(page: Page) -> list[tuple[str, str]]:
    """The related-work picker's papers, read again only when the index changed."""
    store = page.assistant.index.store
    with page.picker_lock:
        stamp = store.state_stamp()
        if stamp != page.picker["stamp"]:
            page.picker.update(stamp=stamp, choices=labelled(store.all_papers()[0]))
        return page.picker["choices"]


def find_related(page: Page, text: str, paper_id: str | None, last: str = "text", k: float = 10,
            bar: str = BAR_CHOICES[0]) -> str:
    """Related work for the input the user touched last (``last``: "text" or "paper"), or the one given:
    the ``k`` best candidates, kept when their similarity clears ``bar`` (one of BAR_CHOICES: the
    calibrated bar, or a percentage as the CLI's ``--min-similarity``). Markdown: the heading and the
    table, or one "⚠" line for an error."""
    from assistant.research import related_work
    from assistant.faces import related_markdown

    assistant, settings = page.assistant, page.settings
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


def related_tab(page: Page) -> gr.Dropdown:
    """Build the Related work tab (inside its ``gr.Tab``) and bind :func:`find_related`. Returns the paper picker,
    whose choices the page's load event refreshes."""
    gr.Markdown("Paste a draft abstract, or pick an indexed paper (the one you touched last is used).")
    # No max_length: the browser would cut a longer text silently; related_work says so instead.
    rel_text = gr.Textbox(lines=6, label="Your abstract or paragraph", elem_id="pa-related-text")
    # Any id (the API, or a paper ingested since the page loaded): related_work checks it.
    rel_pick = gr.Dropdown(choices=page.picker["choices"], value=None, label="…or an indexed paper",
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

    def related(text: str, paper_id: str | None, last: str = "text", k: float = 10, bar: str = BAR_CHOICES[0]):
        return find_related(page, text, paper_id, last, k, bar)

    rel_btn.click(related, [rel_text, rel_pick, rel_last, rel_k, rel_bar], rel_out, api_name="related",
                  api_visibility=page.api_visibility)
    return rel_pick
