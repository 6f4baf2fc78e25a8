"""The commands that query the index: ``ask``, ``related``, ``list`` and ``map``, and their ``--export``."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Literal, Optional

import typer

from assistant.cli.common import (CategoryOpt, ExportOpt, ForceOpt, HasCodeOpt, IndexOpt, JsonOpt, SourceOpt, VenueOpt,
                                  YearOpt, fail, settings_for)


def ask(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="the question")],
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    k: Annotated[Optional[int], typer.Option("-k", min=1, max=100,
                                             help="papers to retrieve (default: the retrieval.k setting, 5)")] = None,
    venue: VenueOpt = None,
    year: YearOpt = None,
    source: SourceOpt = None,
    category: CategoryOpt = None,
    has_code: HasCodeOpt = False,
    mode: Annotated[Optional[Literal["hybrid", "dense", "bm25"]],
                    typer.Option(help="retrieval (default: the retrieval.mode setting, hybrid)")] = None,
    abstracts: Annotated[bool, typer.Option("--abstracts", help="print each cited abstract")] = False,
    export: ExportOpt = None,
    force: ForceOpt = False,
    show_cut: Annotated[bool, typer.Option("--show-cut-reply", help="also print a cut LLM reply that failed the citation check")] = False,
):
    """Answer a question from the indexed abstracts, with numbered citations (one question: for
    follow-ups, `chat`)."""
    from assistant.faces import answer_json
    from assistant.retrieval import Filters
    from assistant.answer import get_assistant, require_papers

    _check_export(export, force)
    settings = settings_for(ctx, index, retrieval={"k": k, "mode": mode})
    assistant = get_assistant(settings)
    require_papers(assistant.index)
    filters = Filters(venue=venue, year=year, source=source, category=category, has_code=has_code or None)
    if as_json:
        from assistant.research import reply

        ans = reply(assistant, question, filters=filters)
        typer.echo(answer_json(ans))
        _export_answer(export, ans, assistant)
        return
    final = print_answer(assistant, question, filters=filters, abstracts=abstracts, show_cut=show_cut)
    _export_answer(export, final, assistant)
    if final.note.startswith("“") and "refers to an earlier answer" in final.note:
        typer.echo("(A one-shot `ask` keeps no conversation: follow-ups need `paper-assistant chat`.)", err=True)


def print_answer(assistant, question: str, filters=None, history=None, abstracts: bool = False,
                 show_cut: bool = False):
    """Answer ``question`` (after ``history``: ``[(question, CitedAnswer)]``), printing the LLM's text as
    it streams, then the sources; returns the CitedAnswer. Shared by ``ask`` and ``chat``."""
    from assistant.faces import answer_text
    from assistant.research import reply_stream

    final = None
    streamed = False
    # hold: LLM text waits for a supported citation (printed text cannot be taken back if the reply is cut)
    for piece in reply_stream(assistant, question, history=history, filters=filters, hold=True):
        if isinstance(piece, str):
            if assistant.llm is not None:
                typer.echo(piece, nl=False)  # click flushes each echo: the user sees tokens as they come
                streamed = True
        else:
            final = piece
    cut = "" if not final.cut_reply else (f"\n\nThe cut LLM reply (failed the citation check):\n{final.cut_reply}"
                                          if show_cut else "\n\n(The cut LLM reply is hidden; --show-cut-reply prints it.)")
    if not streamed:
        typer.echo(answer_text(final, show_abstract=abstracts) + cut)
        return final
    # The streamed pieces are the final answer text; print only what the check adds after it.
    import re

    typer.echo("\n")
    footer = answer_text(final.model_copy(update={"answer": ""}), show_abstract=abstracts)
    if final.removed_citations:
        footer += "\n\nRemoved citations of sources that were not given: " + ", ".join(
            f"[{n}]" for n in final.removed_citations)
    typer.echo(re.sub(r"\n{3,}", "\n\n", footer).strip("\n") + cut)
    return final


def related(
    ctx: typer.Context,
    text: Annotated[Optional[str], typer.Argument(help="a draft abstract or paragraph")] = None,
    paper: Annotated[Optional[str], typer.Option("--paper", help="an indexed paper id, e.g. 000_x#3")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="papers to list")] = 10,
    explain: Annotated[int, typer.Option("--explain", min=0, help="with an LLM configured: a cited paragraph for the top N papers")] = 3,
    min_similarity: Annotated[Optional[float], typer.Option("--min-similarity", min=0.0, max=1.0, help="list only papers at least this similar (the relevance: embedding and TF-IDF cosine; default: the calibrated bar; 0: all k)")] = None,
):
    """Rank indexed papers related to a text or a paper: what each shares with it and where it differs."""
    from assistant.research import related_work
    from assistant.faces import related_json, related_text
    from assistant.answer import get_assistant, require_papers

    paper = paper.strip() if paper is not None else None  # a pasted id keeps no spaces around it
    if (text is None) == (paper is None):
        fail("give a text or --paper ID (one of them)")
    text = sys.stdin.read() if text == "-" else text
    a = get_assistant(settings_for(ctx, index))
    require_papers(a.index)
    items = related_work(a.retriever, a.sentences, text=text, paper_id=paper, k=k, bar=min_similarity)  # None: calibrated
    if a.llm is not None and explain and items:
        from assistant.research import add_llm_summaries

        query = items.text if paper is None else a.index.store.get_papers([paper])[paper].text
        failed = add_llm_summaries(a.llm, a.settings.llm, a.settings.prompts_dir, query, items, n=explain)
        if failed:
            typer.echo(f"note: {failed}", err=True)
    typer.echo(related_json(items) if as_json else related_text(items))


def _check_export(path: Path | None, force: bool = False) -> None:
    """Before any work: the export's format, and no existing file overwritten unless ``force``."""
    if path is not None:
        from assistant.research import export_format, output_problem

        try:
            export_format(path)
        except ValueError as exc:
            fail(str(exc))
        if problem := output_problem(path, force):
            fail(problem)


def _write_export(path: Path | None, items, heading: str) -> None:
    """Write the export file and say so on stderr (stdout stays the result, e.g. JSON)."""
    if path is None:
        return
    from assistant.research import write_export

    if not items:  # a refusal cites nothing: an empty file would only block the next run (--force)
        typer.echo(f"nothing to export to {path}: the answer cites no paper", err=True)
        return
    write_export(path, items, heading)
    typer.echo(f"exported {len(items)} paper{'s' if len(items) != 1 else ''} to {path}", err=True)


def _export_answer(path: Path | None, ans, assistant) -> None:
    if path is not None and ans is not None:
        from assistant.research import items_from_answer

        _write_export(path, items_from_answer(ans, assistant.index.store), f"Sources for: {ans.question}")


def list_cmd(
    ctx: typer.Context,
    question: Annotated[str, typer.Argument(help="an 'all papers that…' question, e.g. \"Which papers study X?\"")],
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    venue: VenueOpt = None,
    year: YearOpt = None,
    source: SourceOpt = None,
    category: CategoryOpt = None,
    has_code: HasCodeOpt = False,
    export: Annotated[Optional[Path], typer.Option("--export", help="also write the listed papers to FILE.bib (BibTeX) or FILE.md")] = None,
    force: ForceOpt = False,
):
    """List every indexed paper above the relevance bar, with the count and one evidence sentence each."""
    from assistant.research import items_from_list
    from assistant.research import list_papers
    from assistant.faces import list_json, list_text
    from assistant.retrieval import Filters
    from assistant.answer import get_assistant, require_papers

    _check_export(export, force)
    a = get_assistant(settings_for(ctx, index))
    require_papers(a.index)
    result = list_papers(a, question, filters=Filters(venue=venue, year=year, source=source, category=category,
                                                      has_code=has_code or None))
    typer.echo(list_json(result) if as_json else list_text(result))
    _write_export(export, items_from_list(result), f"Papers for: {result.question}")


def map_cmd(
    ctx: typer.Context,
    out: Annotated[Optional[Path], typer.Option("--out", help="PNG file to write (default map.png; with --json, "
                                                              "none unless given)")] = None,
    index: IndexOpt = None,
    question: Annotated[Optional[str], typer.Option("--question", help="highlight the papers this question lists")] = None,
    clusters: Annotated[Optional[int], typer.Option("--clusters", min=1, help="number of clusters (default √papers)")] = None,
    as_json: JsonOpt = False,
    force: Annotated[bool, typer.Option("--force", help="let --out overwrite an existing file")] = False,
):
    """Draw a 2-D map of all indexed papers (PCA), coloured by cluster with keywords, to a PNG."""
    import json

    from assistant.research import index_map, save_png
    from assistant.answer import get_assistant, require_papers

    if out is None and not as_json:
        out = Path("map.png")
    if out is not None and out.suffix.lower() != ".png":
        fail(f"--out must be a .png file, not {out.name!r}")
    if out is not None:  # as --export: never overwrite silently, never through a link; missing folders are created
        from assistant.research import output_problem

        if problem := output_problem(out, force, "--out"):
            fail(problem)
    a = get_assistant(settings_for(ctx, index))
    require_papers(a.index)
    pmap = index_map(a.index.store, clusters)
    hits = []
    if question:
        from assistant.research import list_papers

        hits = [p.id for p in list_papers(a, question).papers]
    if out is not None:
        save_png(pmap, out, highlight=hits)
    if as_json:
        typer.echo(json.dumps(pmap.to_dict() | {"out": str(out) if out else None, "highlighted": hits}, indent=2,
                              ensure_ascii=False))
        return
    from vectorstore.papers import counted

    typer.echo(f"wrote {out}: {counted(len(pmap.points), 'paper')} in {counted(len(pmap.clusters), 'cluster')}"
               + (f", {len(hits)} highlighted" if question else ""))
    for line in pmap.cluster_lines():
        typer.echo(f"  {line}")
