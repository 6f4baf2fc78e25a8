"""The servers: ``serve`` (the chat UI, :mod:`assistant.page`) and ``mcp`` (the MCP server, :mod:`assistant.mcp.server`)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from assistant.cli.common import IndexOpt, settings_for

MCP_HTTP_PORT = 8765
"""``mcp --http``'s default port: :data:`assistant.mcp.server.DEFAULT_HTTP_PORT`, not imported from there
because that module loads the MCP SDK and the answer path (a unit test keeps the two equal)."""

IngestOpt = Annotated[bool, typer.Option("--ingest/--no-ingest", help="ingest the bundled corpus first if needed")]


def serve(
    ctx: typer.Context,
    index: IndexOpt = None,
    host: Annotated[Optional[str], typer.Option(help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[Optional[int], typer.Option(help="port (default 7860)")] = None,
    auth: Annotated[Optional[str], typer.Option(help="user:pass, required off loopback")] = None,
    ingest_default: IngestOpt = True,
):
    """Start the chat UI (ingests the bundled corpus first when the index is missing or stale)."""
    from assistant.page import launch
    from assistant.text import add_secret

    if auth:  # masked on stderr from here on, as the environment's password is (round nine saw --auth's echoed)
        add_secret(auth.partition(":")[2] or auth)
    settings = settings_for(ctx, index, ui={"host": host, "port": port, "auth": auth})
    launch(settings, ingest_default=ingest_default)


def mcp(
    ctx: typer.Context,
    index: IndexOpt = None,
    http: Annotated[bool, typer.Option("--http", help="serve streamable HTTP on 127.0.0.1 instead of stdio")] = False,
    port: Annotated[int, typer.Option(min=1, max=65535, help="port for --http")] = MCP_HTTP_PORT,
    ingest_default: IngestOpt = True,
):
    """Serve search, ask, related, list_papers and get_paper to MCP clients (stdio; --http for 127.0.0.1)."""
    from assistant.mcp import serve as serve_mcp

    serve_mcp(settings_for(ctx, index), http=http, port=port, ingest_default=ingest_default)
