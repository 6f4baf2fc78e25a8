"""The Chat tab's downloads: what the latest answer cited, or the latest list holds in list mode, written as BibTeX
and Markdown into the page's export folder for its two download buttons."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import uuid

import gradio as gr

from assistant.page.state import Page


def export_folder() -> str:
    """A new folder for the page's downloads, removed when the process ends."""
    folder = tempfile.mkdtemp(prefix="paper-assistant-export-")
    # Downloads are served from here while the app runs; nothing should outlive the process.
    atexit.register(shutil.rmtree, folder, True)
    return folder


def export_files(page: Page, turns: list, last_list, list_mode: bool) -> tuple:
    """Write the cited (or listed) papers as BibTeX and Markdown for the download buttons: the two buttons'
    updates, each with its file and count, or both disabled when there is nothing to export."""
    from assistant.research import items_from_answer, items_from_list, write_export

    if list_mode and last_list is not None:
        items, heading = items_from_list(last_list), f"Papers for: {last_list.question}"
    elif turns:
        ans = turns[-1][1]
        items, heading = items_from_answer(ans, page.assistant.index.store), f"Sources for: {ans.question}"
    else:
        items = []
    if not items:
        return (gr.update(value=None, interactive=False, label="BibTeX"),
                gr.update(value=None, interactive=False, label="Markdown"))
    folder = os.path.join(page.export_dir, uuid.uuid4().hex[:12])
    bib = write_export(os.path.join(folder, "papers.bib"), items, heading)
    md = write_export(os.path.join(folder, "papers.md"), items, heading)
    return (gr.update(value=str(bib), interactive=True, label=f"BibTeX ({len(items)})"),
            gr.update(value=str(md), interactive=True, label=f"Markdown ({len(items)})"))
