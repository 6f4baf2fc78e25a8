"""The index's commands: ``ingest`` papers, ``remove`` the papers of a file."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Annotated, Optional

import typer

from assistant.cli.common import IndexOpt, embedding_bar, fail, settings_for


SHOWN_ENTRIES = 50
"""Malformed entries named one by one on stderr; the rest are counted (a broken snapshot has thousands)."""


def _since(value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value.strip())
    except ValueError:
        raise typer.BadParameter(f"{value!r} is not a date: give it as YYYY-MM-DD, e.g. --since 2024-01-01") from None


def ingest(
    ctx: typer.Context,
    # readable=False: typer's own check stopped the whole ingest at one unreadable file; ingest skips it, names it,
    # reads the rest and exits 1 (a third hostile round, #35).
    paths: Annotated[list[Path], typer.Argument(help="paper files (.txt lists, .jsonl, .bib, .csv, arXiv snapshot "
                                                     ".json) or folders", readable=False)],
    index: IndexOpt = None,
    replace: Annotated[bool, typer.Option(
        "--replace", help="take these files as they are now: papers no longer in them are removed, a deleted "
        "heading drops venue and year, a same-named file from another folder takes the indexed one's place "
        "(without it such files are skipped and their indexed papers kept)")] = False,
    category: Annotated[Optional[str], typer.Option(
        help="read only papers of this category (arXiv's cs.LG), filtered while the file is read")] = None,
    since: Annotated[Optional[str], typer.Option(
        help="read only papers of this day or later (YYYY-MM-DD; arXiv: update_date, other formats: the year)")] = None,
):
    """Add papers to the index (idempotent: unchanged papers are skipped, edited ones replaced)."""
    from assistant.answer import get_index
    from vectorstore.ingest import ingest as run_ingest
    from vectorstore.papers import Selection, missing_path

    selection = Selection(category=category.strip() if category and category.strip() else None, since=_since(since))
    settings = settings_for(ctx, index)
    for path in paths:  # before the index is opened: a run with no such path left an empty index (a hostile round)
        if not os.path.lexists(path):
            fail(missing_path(path))
    with embedding_bar() as callbacks:
        callbacks["on_stage"]("loading the embedding model…")
        # Vector files that disagree with the database (a kill mid-write): rebuilt from the papers it stores, then on.
        idx = get_index(settings, create=True, repair=lambda line: typer.echo(line, err=True))
        report = run_ingest(paths, idx, write_batch=settings.store.write_batch, replace=replace,
                            selection=selection if selection.active() else None, **callbacks)
    for reason in report.skipped:
        typer.echo(f"skipped: {reason}", err=True)
    bad = report.entries
    for line in bad.skipped[:SHOWN_ENTRIES]:
        typer.echo(f"skipped entry: {line}", err=True)
    if bad.malformed > SHOWN_ENTRIES:
        typer.echo(f"skipped entry: … and {bad.malformed - SHOWN_ENTRIES:,} more malformed entries", err=True)
    for warning in report.empty[:SHOWN_ENTRIES]:  # 3,000 empty files gave 3,000 lines (a hostile round)
        typer.echo(f"warning: {warning}", err=True)
    if len(report.empty) > SHOWN_ENTRIES:
        typer.echo(f"warning: … and {len(report.empty) - SHOWN_ENTRIES:,} more files gave no paper", err=True)
    typer.echo(report.summary())
    if report.skipped or bad.malformed:
        raise typer.Exit(1)


def remove(
    ctx: typer.Context,
    files: Annotated[list[str], typer.Argument(help="names of ingested paper files, e.g. papers.txt")],
    index: IndexOpt = None,
):
    """Remove every paper ingested from these files (say, after renaming one and ingesting it again)."""
    from assistant.answer import get_index
    from vectorstore.ingest import remove_sources

    idx = get_index(settings_for(ctx, index), repair=lambda line: typer.echo(line, err=True))
    from vectorstore.papers import counted

    for name, n in remove_sources(files, idx).items():
        typer.echo(f"{name}: {counted(n, 'paper')} removed")
    papers, chunks = idx.store.counts()
    typer.echo(f"index holds {counted(papers, 'paper')} in {counted(chunks, 'chunk')}")
