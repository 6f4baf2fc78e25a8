"""The developer's and operator's commands: ``eval`` (scores), ``train`` (the learned models), ``doctor``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from assistant.cli.common import IndexOpt, JsonOpt, embedding_bar, settings_for


def evaluate(
    ctx: typer.Context,
    questions: Annotated[Optional[list[Path]], typer.Option("--questions", help="question file, one JSON object a line: {qid, kind, question, gold, evidence?} (repeat for several files; the CV also reports each)")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    distractors: Annotated[Optional[Path], typer.Option("--distractors", help="JSONL collection mixed into a separate eval index")] = None,
    corpus: Annotated[Optional[list[Path]], typer.Option("--corpus", help="papers of the eval index (default: the bundled corpus)")] = None,
    csfcube: Annotated[Optional[Path], typer.Option("--csfcube", help="CSFCube folder: score related-work re-ranking instead")] = None,
    cv: Annotated[int, typer.Option("--cv", min=0, help="also cross-validate the learned models with N folds over these questions")] = 0,
):
    """Score retrieval (recall@k, MRR, nDCG@10), abstention and evidence on a question file."""
    from assistant.evaluation import eval_command

    with embedding_bar() as callbacks:  # only an index built the first time embeds
        typer.echo(eval_command(settings_for(ctx, index), questions, distractors, corpus, csfcube, cv, as_json, callbacks))


def train(ctx: typer.Context,
          corpus: Annotated[list[Path], typer.Option("--corpus", help="papers the questions are about (e.g. corpus2k.jsonl)")],
          questions: Annotated[list[Path], typer.Option("--questions", help="training questions (the question-file format of eval; never the dev questions); repeat for several files")] = [],  # noqa: B006
          index: IndexOpt = None, out: Annotated[Optional[Path], typer.Option("--out", metavar="DIR", help="folder for the models")] = None,
          relevance: Annotated[bool, typer.Option("--relevance", help="fine-tune the relevance cross-encoder instead (torch; about 45-50 minutes on 2 cores)")] = False,
          calibrate_on: Annotated[list[Path], typer.Option("--calibrate-on", help="with --relevance: held-out questions its probability is calibrated on (never trained on)")] = [],  # noqa: B006
          others: Annotated[Optional[Path], typer.Option("--absent-from", metavar="JSONL", help="with --relevance: papers whose titles make absent-topic questions")] = None,
          recalibrate: Annotated[bool, typer.Option("--recalibrate", help="with --relevance: only calibrate the model already there again on --calibrate-on (minutes; no torch)")] = False):
    """Fit the evidence ranker on training questions (deterministic), or with --relevance the relevance cross-encoder."""
    if relevance:
        from assistant.learning import train_relevance

        if not calibrate_on:
            raise typer.BadParameter("--relevance needs --calibrate-on FILE (held-out questions)")
        if recalibrate:
            from assistant.learning import recalibrate_relevance

            recalibrate_relevance(settings_for(ctx, index), corpus, calibrate_on, out, log=lambda m: typer.echo(m, err=True))
            return
        if not questions:
            raise typer.BadParameter("--relevance needs --questions FILE (the questions it trains on)")
        train_relevance(settings_for(ctx, index), corpus, questions, calibrate_on, others, out,
                        log=lambda m: typer.echo(m, err=True))
        return
    from assistant.learning import train_report

    if not questions:
        raise typer.BadParameter("train needs --questions FILE (training questions)")

    with embedding_bar() as callbacks:
        typer.echo(train_report(settings_for(ctx, index), corpus, questions, out, index is not None, callbacks))


def doctor(ctx: typer.Context, index: IndexOpt = None):
    """Check the index and the LLM endpoint, and say plainly what is wrong."""
    from assistant.faces import run_doctor

    ok = True
    for good, line in run_doctor(settings_for(ctx, index)):
        typer.echo(("ok    " if good else "FAIL  ") + line)
        ok &= good
    if not ok:
        raise typer.Exit(1)
