"""MCP server: search, ask, related work, "all papers that…" lists and paper records as tools for agents.

A thin adapter at the edge, built on the official Python SDK (``mcp`` 2.x, :class:`MCPServer`): it
registers the tools of :mod:`assistant.mcp.tools` (each calling what the matching CLI command
calls, returning a typed record) with typed input schemas, and turns user errors (empty query,
unknown id, a filter value no paper has, no index) into tool errors with the CLI's one-line message.

Transports: stdio (the default; what desktop clients launch) or streamable HTTP on 127.0.0.1
(``--http``). On stdio, stdout is the protocol: the SDK moves file descriptor 1 to stderr while it
serves (so a stray print or a native library's output cannot corrupt a message), and our logs go
to stderr. A stdio line the SDK cannot read (no JSON, no JSON-RPC message, a lone surrogate escape)
is answered with a JSON-RPC error (:mod:`assistant.mcp.stdio_lines`; the SDK answers nothing, and the client
waited forever), and so is a request whose id is no string or integer, and a line over ``MAX_LINE_CHARS``. The model and the index load in a background thread started once the first message
(the handshake) is answered; a tool called before they are ready waits for them.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import Annotated

from pydantic import Field

from assistant.mcp.tools import (NAME_CHARS, AskResult, Backend, Category, HasCode, IndexedPaper, K, ListResult, Query,
                                 RelatedResult, SearchResult, Source, Venue, Year, ask_question, index_summary,
                                 list_matching, paper_record, related_papers, search_papers)
from assistant.settings import Settings

SERVER_NAME = "paper-assistant"
INDEX_URI = "paper-assistant://index"
DEFAULT_HTTP_PORT = 8765


def _user_errors(fn):
    """Run a tool body; a user error becomes a ToolError with the CLI's one-line message."""
    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        from assistant.faces import one_line, user_errors

        try:
            return fn(*args, **kwargs)
        except user_errors() as exc:
            raise ToolError(one_line(exc)) from None
    return wrapper


def arguments_error(tool: str, exc) -> str:
    """One line for arguments that fail a tool's input schema (``exc``: pydantic's ValidationError): each field,
    what it must be, and the value given, cut to 40 characters (with "…"), the configured secrets masked first. The
    SDK's own text is pydantic's report, over several lines with a documentation link per error (a hostile round,
    #35 F20)."""
    from assistant.text import mask_secrets

    parts = []
    for err in exc.errors():
        field = ".".join(str(p) for p in err["loc"]) or "arguments"
        # Masked before it is cut: a long key cut to 40 characters was too short a piece to be known (round 11).
        shown = mask_secrets(repr(err.get("input"))[:4000])  # 4,000: far past any key, and a bounded cost
        shown = shown if len(shown) <= 40 else f"{shown[:39]}…"
        given = "" if err["type"] == "missing" else f" (got {shown})"
        parts.append(f"{field}: {err['msg'].lower()}{given}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


def server_class():
    """The SDK's :class:`MCPServer` with one-line argument errors (made when a server is built: the SDK is
    imported only then)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
    from pydantic import ValidationError

    class OneLineErrors(MCPServer):
        """:class:`MCPServer` whose argument errors are one line (:func:`arguments_error`)."""

        async def call_tool(self, name, arguments, context=None):
            try:
                return await super().call_tool(name, arguments, context)
            except ToolError as exc:
                if isinstance(exc, UnexpectedToolError) or not isinstance(exc.__cause__, ValidationError):
                    raise
                raise ToolError(arguments_error(name, exc.__cause__)) from exc.__cause__

        async def get_prompt(self, name, arguments=None, context=None):
            # The server has no prompts: the SDK answered any prompts/get with error code 0 and logged a 36-line
            # traceback (a tenth hostile round); an unknown resource gets -32602, and so does this now.
            from mcp.shared.exceptions import MCPError
            from mcp.types import INVALID_PARAMS

            if not any(p.name == name for p in await self.list_prompts()):
                raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}", data={"name": name})
            return await super().get_prompt(name, arguments, context)

    return OneLineErrors


# --- the server ----------------------------------------------------------------------------------
INSTRUCTIONS = (
    "Search and question a local index of conference paper abstracts. Answers cite abstracts as [n] and "
    "come from abstracts only (not full papers). Paper ids look like '000_12a0d7b1c5c902c5#13'. "
    f"The resource {INDEX_URI} lists the indexed papers, venues and years."
)


def build_server(backend: Backend):
    """The :class:`MCPServer` with the five tools and the index resource, over ``backend``."""

    from mcp.types import ToolAnnotations

    async def warm_after_first_message(ctx, call_next):
        # The handshake (`initialize`, or `server/discover`) is answered before the model and index
        # start loading: a loading thread would compete with it for the GIL and the CPU.
        try:
            return await call_next(ctx)
        finally:
            backend.warm_up()

    server = server_class()(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING",
                            middleware=[warm_after_first_message])
    read_only = ToolAnnotations(read_only_hint=True, open_world_hint=False)

    @server.tool(annotations=read_only)
    @_user_errors
    def search(query: Query, k: K = 5, venue: Venue = None, year: Year = None, source: Source = None,
               has_code: HasCode = False, category: Category = None) -> SearchResult:
        """Rank indexed papers for a query (hybrid BM25 + embedding retrieval). Returns paper ids, labels,
        scores and the sentence of each abstract that best matches. Filters: venue, year, source file, category."""
        return search_papers(backend, query, k, venue, year, source, has_code, category)

    @server.tool(annotations=read_only)
    @_user_errors
    def ask(question: Query, k: Annotated[int | None, Field(ge=1, le=100, strict=True, description="papers to retrieve (default 5)")] = None,
            venue: Venue = None, year: Year = None, source: Source = None, has_code: HasCode = False,
            category: Category = None) -> AskResult:
        """Answer a question from the indexed abstracts, with [n] citations and the supporting sentence of
        each. verdict: 'answered', 'closest match' (may not answer) or 'nothing found'."""
        return ask_question(backend, question, k, venue, year, source, has_code, category)

    @server.tool(annotations=read_only)
    @_user_errors
    def related(text: Annotated[str | None, Field(description="a draft abstract or paragraph (its first 8,000 characters are read)", max_length=50_000)] = None,
                paper_id: Annotated[str | None, Field(description="an indexed paper id (instead of text)",
                                                      max_length=NAME_CHARS)] = None,
                k: Annotated[int, Field(ge=1, le=100, strict=True, description="how many papers")] = 10,
                explain: Annotated[int, Field(ge=0, le=10, strict=True, description="with an LLM configured: a cited paragraph for the top N")] = 0,
                min_similarity: Annotated[float | None, Field(ge=0, le=1, description="list only papers at least this "
                                                              "similar (the relevance; default: the calibrated bar; 0: all k)")] = None,
                ) -> RelatedResult:
        """Papers related to a text or to an indexed paper (give one of them), best first, each with the
        sentence pairs the two share and the sentences of either side with no good match."""
        return related_papers(backend, text, paper_id, k, explain, min_similarity)

    @server.tool(annotations=read_only)
    @_user_errors
    def list_papers(topic: Annotated[str, Field(description="a topic or an 'all papers that…' question", max_length=4000)],
                    venue: Venue = None, year: Year = None, source: Source = None,
                    has_code: HasCode = False, category: Category = None) -> ListResult:
        """Every indexed paper on a topic (above a relevance bar), best first, with the count, one evidence
        sentence each, and the near misses just below the bar."""
        return list_matching(backend, topic, venue, year, source, has_code, category)

    @server.tool(annotations=read_only)
    @_user_errors
    def get_paper(paper_id: Annotated[str, Field(description="a paper id, e.g. '000_12a0d7b1c5c902c5#13'",
                                                 max_length=NAME_CHARS)]) -> IndexedPaper:
        """The full record of one indexed paper: title, label, abstract, authors, venue, year, url, source, categories."""
        return paper_record(backend, paper_id)

    @server.resource(INDEX_URI, name="index", title="Indexed papers", mime_type="application/json",
                     description="Counts of papers and chunks; papers per venue, year and source file; the papers.")
    def index_resource() -> str:
        from mcp.server.mcpserver.exceptions import ResourceError

        from assistant.faces import one_line, user_errors

        try:
            return json.dumps(index_summary(backend), ensure_ascii=False, indent=1)
        except user_errors() as exc:
            raise ResourceError(one_line(exc)) from None

    return server


def port_in_use(host: str, port: int) -> str | None:
    """Why ``host:port`` cannot be bound, or None when it can."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError as exc:
            return exc.strerror or str(exc)
    return None


def serve(settings: Settings, http: bool = False, port: int = DEFAULT_HTTP_PORT, ingest_default: bool = True) -> None:
    """Serve until the client disconnects (stdio) or the process is stopped (HTTP on 127.0.0.1:``port``).
    Raises ValueError when the port cannot be bound."""
    # Warnings and errors only, on stderr; a handler-level filter, since some libraries set their own
    # loggers to DEBUG (bm25s). Set before the SDK's own logging.basicConfig, which then does nothing.
    handler = logging.StreamHandler(sys.stderr)
    handler.setLevel(logging.WARNING)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=logging.WARNING, handlers=[handler])
    host = "127.0.0.1"
    if http:
        why = port_in_use(host, port)
        if why:
            raise ValueError(f"cannot serve MCP on {host}:{port} ({why}): choose another port with --port")
    if not http and (sys.stdin is None or sys.__stdin__ is None):  # `<&-`: "unexpected AttributeError" (round 13)
        raise ValueError("MCP over stdio reads its standard input, which is closed: start it from an MCP client, or "
                         "serve it with --http")
    backend = Backend(settings, ingest_default)
    server = build_server(backend)
    if http:
        backend.warm_up()  # no handshake to wait for: a client may come much later
        print(f"Paper Assistant MCP server on http://{host}:{port}/mcp (streamable HTTP)", file=sys.stderr, flush=True)
        import anyio

        from assistant.mcp.http_ids import serve_http

        anyio.run(serve_http, server, host, port)  # the SDK's streamable HTTP app, every request answered
    else:
        # The protocol is bytes on file descriptors 0 and 1: the SDK takes over the streams' binary
        # buffers. A text wrapper over them (a terminal filter of the CLI's, say) has none: use the
        # process' own streams, which the wrapper only filtered (JSON escapes every control character).
        for name in ("stdin", "stdout"):
            if not hasattr(getattr(sys, name), "buffer"):
                setattr(sys, name, getattr(sys, f"__{name}__"))
        import anyio

        from assistant.mcp.stdio_lines import serve_stdio

        anyio.run(serve_stdio, server)
