"""The developer's and operator's commands: ``eval`` (scores), ``train`` (the learned models), ``doctor``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from assistant.cli.common import IndexOpt, JsonOpt, embedding_bar, settings_for


def evaluate(
    ctx: typer.Context,
    questions: Annotated[Optional[list[Path]], typer.Option("--questions", help="questions in the dev.jsonl format (repeat for several files; the CV also reports each)")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    distractors: Annotated[Optional[Path], typer.Option("--distractors", help="JSONL collection mixed into a separate eval index")] = None,
    corpus: Annotated[Optional[list[Path]], typer.Option("--corpus", help="papers of the eval index (default: the bundled corpus)")] = None,
    csfcube: Annotated[Optional[Path], typer.Option("--csfcube", help="CSFCube folder: score related-work re-ranking instead")] = None,
    cv: Annotated[int, typer.Option("--cv", min=0, help="also cross-validate the learned models with N folds over these questions")] = 0,
):
    """Score retrieval (recall@k, MRR, nDCG@10), abstention and evidence on a question file."""
    from assistant.evaluate import eval_command

    with embedding_bar() as callbacks:  # only an index built the first time embeds
        typer.echo(eval_command(settings_for(ctx, index), questions, distractors, corpus, csfcube, cv, as_json, callbacks))


def train(ctx: typer.Context,
          corpus: Annotated[list[Path], typer.Option("--corpus", help="papers the questions are about (e.g. corpus2k.jsonl)")],
          questions: Annotated[list[Path], typer.Option("--questions", help="training questions (dev.jsonl format; never dev.jsonl); repeat for several files")],
          index: IndexOpt = None, out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="folder for the models")] = None):
    """Fit the evidence ranker and the relevance judge on training questions (deterministic)."""
    from assistant.train import train_report

    with embedding_bar() as callbacks:
        typer.echo(train_report(settings_for(ctx, index), corpus, questions, out, index is not None, callbacks))


def doctor(ctx: typer.Context, index: IndexOpt = None):
    """Check the index and the LLM endpoint, and say plainly what is wrong."""
    from assistant.doctor import run_doctor

    ok = True
    for good, line in run_doctor(settings_for(ctx, index)):
        typer.echo(("ok    " if good else "FAIL  ") + line)
        ok &= good
    if not ok:
        raise typer.Exit(1)
