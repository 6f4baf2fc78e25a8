"""The `paper-assistant` commands, thin over the library; an error is one line on stderr (exit 2; 1: partial ingest).

The commands by group: :mod:`.indexing` (ingest, remove), :mod:`.query` (ask, related, list, map), :mod:`.chat`,
:mod:`.tools` (eval, train, doctor), :mod:`.serving` (serve, mcp); the app, its global options and
what the commands share: :mod:`.common`. Importing the package loads typer and no more: each command
imports what it runs.

Imports: every stage before it (the page, ``assistant.page``, included), through their packages' public names."""

from __future__ import annotations

from assistant.cli import chat, indexing, query, serving, tools
from assistant.cli.common import app, _Command

COMMANDS = {"ingest": indexing.ingest, "remove": indexing.remove, "ask": query.ask, "chat": chat.chat, "list": query.list_cmd,
            "related": query.related, "map": query.map_cmd, "serve": serving.serve, "mcp": serving.mcp,
            "doctor": tools.doctor, "eval": tools.evaluate, "train": tools.train}
"""Each command's function by name, in the order `--help` lists them: a user's order (build the index,
query it, serve it), then the operator's and developer's tools."""
for _name, _command in COMMANDS.items():
    app.command(_name, cls=_Command)(_command)


def main() -> None:
    """Console entry point (assistant.faces.console.run: terminal-safe output, one-line errors)."""
    from assistant.faces import run

    run(app)


__all__ = ["app", "main"]
