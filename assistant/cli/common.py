"""What every command shares: the typer app, its global options (kept on the click context), the
options several commands take, the settings loader, one-line failures and the embedding progress bar.

Imports typer only: each command imports what it runs, so ``paper-assistant --help`` or a usage
error prints before the answer path (LangChain, torch, Chroma) loads."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Optional

import typer
from typer.core import TyperCommand, TyperGroup

_METAVARS = {"index": "DIR", "csfcube": "DIR", "out": "FILE", "export": "FILE", "questions": "FILE",
             "distractors": "FILE", "corpus": "FILE", "paper": "ID", "auth": "USER:PASS", "port": "PORT",
             "chroma_port": "PORT", "chroma_host": "HOST", "host": "HOST", "base_url": "URL", "model": "NAME",
             "embedding_model": "NAME", "timeout": "SECONDS", "first_token_timeout": "SECONDS"}
"""Metavars in a user's words, by parameter name; others follow their type (:func:`_user_metavars`)."""
_BY_TYPE = {"int": "N", "float": "X", "Path": "PATH", "str": "TEXT", "list[Path]": "PATH", "list[str]": "NAME"}


def _user_metavars(params: list) -> list:
    """Give each parameter without one a metavar a user reads (``FILE``, ``N``, ``PATH...``; none on a
    flag) instead of typer's type names (``<bool>``, ``<list[Path]>``); ``--help`` shows them. Choices
    keep their list (``<hybrid|dense|bm25>``)."""
    for p in params:
        if p.metavar is not None or not hasattr(p, "type_descriptor"):
            continue
        if getattr(p, "is_flag", False):
            p.metavar = ""
            continue
        if p.type_descriptor.is_choice:
            continue
        bare = p.bare_type()
        if p.param_type_name == "argument":  # the usage line adds "..." to a list; the name says the type
            p.metavar = p.name.upper() if bare == "str" else _METAVARS.get(p.name) or _BY_TYPE.get(bare, p.name.upper())
            p.display_type_rich = lambda ctx: None
        elif p.name in _METAVARS or bare in _BY_TYPE:
            p.metavar = _METAVARS.get(p.name) or _BY_TYPE[bare] + ("..." if bare.startswith("list[") else "")
    return params


class _Command(TyperCommand):
    def get_params(self, ctx):
        return _user_metavars(super().get_params(ctx))


class _Group(TyperGroup):
    def get_params(self, ctx):
        return _user_metavars(super().get_params(ctx))


app = typer.Typer(cls=_Group, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Ask questions over conference paper abstracts, with citations.")

def _index_dir(value: str) -> Path:
    """``--index``'s value as a path; an empty one is an error (``Path("")`` would be the working directory)."""
    if not str(value).strip():
        raise typer.BadParameter("the index directory is empty: give a folder, e.g. --index data/index")
    return Path(value)


IndexOpt = Annotated[Optional[Path], typer.Option("--index", parser=_index_dir,
                                                  help="index directory [env: PAPER_ASSISTANT_INDEX]")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
ExportOpt = Annotated[Optional[Path], typer.Option("--export", help="also write the cited papers to FILE.bib (BibTeX) or FILE.md")]
ForceOpt = Annotated[bool, typer.Option("--force", help="let --export overwrite an existing file")]
VenueOpt = Annotated[Optional[str], typer.Option(help="only papers of this venue")]
YearOpt = Annotated[Optional[int], typer.Option(help="only papers of this year")]
SourceOpt = Annotated[Optional[str], typer.Option(help="only papers from this file name")]
CategoryOpt = Annotated[Optional[str], typer.Option(help="only papers of this category (arXiv's cs.LG)")]
HasCodeOpt = Annotated[bool, typer.Option("--has-code", help="only papers whose abstract links code or a project page")]


@dataclass(frozen=True)
class GlobalOptions:
    """The app's options given before the command (``--model``, ``--chroma-host``, …) as settings
    overrides: section name → {field: value}, only the options given. The app's callback puts one on
    the click context (``ctx.obj``), which every command's context inherits."""

    overrides: dict[str, dict[str, object]] = field(default_factory=dict)


def settings_for(ctx: typer.Context, index: Path | None = None, **extra):
    """The :class:`assistant.settings.Settings` for a command: the environment, then the global
    options, then ``index`` and ``extra`` (section → {field: value}; a None value is not an override)."""
    from assistant.settings import load_settings

    options = ctx.obj if isinstance(ctx.obj, GlobalOptions) else GlobalOptions()
    ov: dict = {section: dict(values) for section, values in options.overrides.items()}
    if index is not None:
        ov["index"] = index
    for k, v in extra.items():
        if isinstance(v, dict):
            ov.setdefault(k, {}).update({a: b for a, b in v.items() if b is not None})
        elif v is not None:
            ov[k] = v
    return load_settings(**ov)


def fail(message: str, code: int = 2) -> None:
    """End the command with ``error: message`` on stderr and exit ``code``."""
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


def _print_version(value: bool) -> None:
    """``--version``: the installed package's version (pyproject's ``version``), then exit."""
    if value:
        from importlib.metadata import PackageNotFoundError, version

        try:
            typer.echo(f"paper-assistant {version('paper-assistant')}")
        except PackageNotFoundError:  # run from a checkout that was never installed
            typer.echo("paper-assistant (not installed: version unknown)")
        raise typer.Exit()


@app.callback()
def main_options(
    ctx: typer.Context,
    show_version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                               help="print the version and exit")] = False,
    model: Annotated[Optional[str], typer.Option("--model", help="LLM model name [env: OPENAI_MODEL]")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible base URL [env: OPENAI_BASE_URL]")] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="LLM timeout between streamed pieces, seconds")] = None,
    first_token_timeout: Annotated[Optional[float], typer.Option("--first-token-timeout", help="LLM timeout for a reply's first piece, seconds")] = None,
    chroma_host: Annotated[Optional[str], typer.Option("--chroma-host", help="use a Chroma server at this host")] = None,
    chroma_port: Annotated[Optional[int], typer.Option("--chroma-port", min=1, max=65535, help="Chroma server port")] = None,
    embedding_model: Annotated[Optional[str], typer.Option("--embedding-model", help="sentence-transformers model name or path")] = None,
):
    overrides: dict[str, dict[str, object]] = {}
    if base_url:  # its password and query values masked on stderr, as the environment's are (a tenth hostile round)
        from assistant.text import add_secret, url_secrets

        for secret in url_secrets(base_url):
            add_secret(secret)
    if any(v is not None for v in (model, base_url, timeout, first_token_timeout)):
        overrides["llm"] = {"model": model, "base_url": base_url, "timeout": timeout, "first_token_timeout": first_token_timeout}
    if chroma_host or chroma_port:
        overrides["store"] = {"host": chroma_host, "port": chroma_port}
    if embedding_model:
        overrides["embedding"] = {"model": embedding_model}
    ctx.obj = GlobalOptions(overrides)


@contextmanager
def embedding_bar():
    """A progress bar for papers being embedded, on stderr when it is a terminal; yields the
    ``on_total`` / ``progress`` / ``on_stage`` callbacks of :func:`vectorstore.ingest.run.ingest`. Each stage
    ("loading the embedding model…", "reading 3 files…") is printed as a line above the bar, so the seconds
    before the first batch is done say what they are spent on (the bar alone sat at ``0/?``)."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    stderr = getattr(sys.stderr, "unsafe", sys.stderr)  # the bar's own cursor codes, not sanitised away
    tty = stderr.isatty()
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(file=stderr), transient=True, disable=not tty) as bar:
        task = bar.add_task("papers", total=None)
        yield {"on_total": lambda n: bar.update(task, total=n), "progress": lambda n: bar.advance(task, n),
               "on_stage": lambda line: bar.console.print(line, markup=False, highlight=False) if tty else None}
