"""Running a command-line app: terminal-safe output, one-line errors, exit codes (``paper-assistant``)."""

from __future__ import annotations

import contextlib
import sys

import typer

from assistant.faces.errors import exit_message
from assistant.text import TerminalSafe, mask_secrets


def run(app: typer.Typer) -> None:
    """Run ``app``, turning known errors into one line on stderr. Everything it prints goes through
    :class:`assistant.text.sanitize.TerminalSafe` (abstracts, questions and LLM replies may hold escape
    sequences that a terminal would execute). Exits with the command's code (2 for an error, 130 when
    interrupted)."""
    with safe_streams():
        _run(app)


@contextlib.contextmanager
def safe_streams():
    """Within it, stdout and stderr are :class:`assistant.text.sanitize.TerminalSafe` over the process' own, and
    stderr (errors, ``skipped:`` lines, the servers' logs) masks the configured secrets
    (:func:`assistant.text.configured.mask_secrets`: a key or password pasted into a filter or a file name came
    back in an error, hostile rounds five to nine)."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = TerminalSafe(out), TerminalSafe(err, mask=mask_secrets)
    try:
        yield
    finally:
        sys.stdout, sys.stderr = out, err


def _run(app: typer.Typer) -> None:
    from assistant.faces.errors import env_file_problem

    problem = env_file_problem()
    if problem:  # before any setting is read: one line, not a warning per read and a key silently dropped
        typer.echo(f"error: {problem}", err=True)
        sys.exit(2)
    try:
        # Without standalone mode click returns (not raises) the code of a `typer.Exit(n)`.
        code = app(standalone_mode=False)
        if isinstance(code, int) and code:
            sys.exit(code)
    except typer.Exit as exc:
        sys.exit(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        typer.echo("aborted", err=True)
        sys.exit(130)
    except Exception as exc:  # a user error, a click usage error, anything unexpected: one line
        if type(exc).__name__ == "NoArgsIsHelpError":  # the help is printed already: no empty error under it
            sys.exit(getattr(exc, "exit_code", 2))
        message, code = exit_message(exc)
        typer.echo(f"error: {message}", err=True)
        sys.exit(code)
    except BaseException as exc:
        # Chroma's Rust core panics on a damaged database ("malformed"): pyo3's PanicException is a
        # BaseException, so it printed a traceback. SystemExit and the like pass on.
        if type(exc).__name__ != "PanicException":
            raise
        message, code = exit_message(exc)
        typer.echo(f"error: {message}", err=True)
        sys.exit(code)
