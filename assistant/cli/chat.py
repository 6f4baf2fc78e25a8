"""``paper-assistant chat``: a conversation in the terminal, with the page's follow-up rules.

A line is a question; the answers so far (the page's ``calibration.history.ui_turns``) travel with
the next one, so "and what dataset?" or "the second one" keep the paper they mean. ``/new`` starts
over, ``/sources`` prints the latest answer's sources with their abstracts, ``/help`` lists these,
Ctrl-D (or ``/quit``) leaves. Line editing and the session's history come from ``readline`` where
Python has it.
"""

from __future__ import annotations

import sys


import typer

from assistant.cli.common import CategoryOpt, HasCodeOpt, IndexOpt, SourceOpt, VenueOpt, YearOpt, settings_for

HELP = ("Ask about the indexed papers; follow-ups keep their paper (\"and what dataset?\", \"the second one\").\n"
        "  /new      start a new conversation\n"
        "  /sources  the latest answer's sources, with their abstracts\n"
        "  /help     this text\n"
        "  Ctrl-D or /quit to leave")


def chat(
    ctx: typer.Context,
    index: IndexOpt = None,
    venue: VenueOpt = None,
    year: YearOpt = None,
    source: SourceOpt = None,
    category: CategoryOpt = None,
    has_code: HasCodeOpt = False,
):
    """Chat in the terminal: each answer is cited, and follow-ups keep the paper they mean."""
    from assistant.cli.query import print_answer
    from assistant.faces import answer_text
    from assistant.retrieval import Filters, resolve_filters
    from assistant.answer import get_assistant, require_papers
    from assistant.settings import Calibration
    from assistant.text import valid_text

    try:
        import readline  # noqa: F401 - line editing and up-arrow history for input()
    except ImportError:  # Windows without pyreadline: plain input
        pass
    if sys.stdin is None:  # started with stdin closed (`<&-`): nothing to read, as at end of input
        return
    settings = settings_for(ctx, index)
    assistant = get_assistant(settings)
    require_papers(assistant.index)
    filters = Filters(venue=venue, year=year, source=source, category=category, has_code=has_code or None)
    # A value no paper has ends the command at once, exit 2 as `ask` does: each turn said so, then exit 0 (round 11).
    filters = resolve_filters(filters, assistant.index.store.field_values)
    keep = Calibration().history.ui_turns
    turns: list = []
    interactive = sys.stdin.isatty()
    if interactive:
        typer.echo(HELP + "\n")
    while True:
        try:
            line = valid_text(input("you> " if interactive else "")).strip()  # undecodable bytes: U+FFFD, as `ask`
        except EOFError:
            break
        except KeyboardInterrupt:  # Ctrl-C drops the line being typed, as a shell does
            typer.echo("")
            continue
        if not line:
            continue
        if line in ("/quit", "/exit"):
            break
        if line == "/help":
            typer.echo(HELP)
            continue
        if line == "/new":
            turns = []
            typer.echo("(a new conversation: earlier answers are forgotten)")
            continue
        if line == "/sources":
            typer.echo(answer_text(turns[-1][1].model_copy(update={"answer": ""}), show_abstract=True).strip()
                       if turns else "(no answer yet)")
            continue
        if not interactive:
            typer.echo(f"you> {line}")
        try:
            final = print_answer(assistant, line, filters=filters, history=turns)
        except Exception as exc:  # noqa: BLE001 - one line, and the conversation goes on
            from assistant.faces import exit_message

            typer.echo(f"error: {exit_message(exc)[0]}", err=True)
            continue
        turns = [*turns, (line, final)][-keep:]
        typer.echo("")


__all__ = ["chat"]
