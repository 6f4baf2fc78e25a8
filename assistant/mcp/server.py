"""MCP server: search, ask, related work, "all papers that…" lists and paper records as tools for agents.

A thin adapter at the edge, built on the official Python SDK (``mcp`` 2.x, :class:`MCPServer`): it
registers the tools of :mod:`assistant.mcp.tools` (each calling what the matching CLI command
calls, returning a typed record) with typed input schemas, and turns user errors (empty query,
unknown id, a filter value no paper has, no index) into tool errors with the CLI's one-line message.

Transports: stdio (the default; what desktop clients launch) or streamable HTTP on 127.0.0.1
(``--http``). On stdio, stdout is the protocol: the SDK moves file descriptor 1 to stderr while it
serves (so a stray print or a native library's output cannot corrupt a message), and our logs go
to stderr. A stdio line the SDK cannot read (no JSON, no JSON-RPC message, a lone surrogate escape)
is answered with a JSON-RPC error (:func:`unreadable_reply`; the SDK answers nothing, and the client
waited forever), and so is a request whose id is no string or integer (:class:`_CheckedLines`). The model and the index load in a background thread started once the first message
(the handshake) is answered; a tool called before they are ready waits for them.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import Annotated

from pydantic import Field

from assistant.mcp.tools import (AskResult, Backend, Category, HasCode, IndexedPaper, K, ListResult, Query,
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


# --- the server ----------------------------------------------------------------------------------
INSTRUCTIONS = (
    "Search and question a local index of conference paper abstracts. Answers cite abstracts as [n] and "
    "come from abstracts only (not full papers). Paper ids look like '000_12a0d7b1c5c902c5#13'. "
    f"The resource {INDEX_URI} lists the indexed papers, venues and years."
)


def build_server(backend: Backend):
    """The :class:`MCPServer` with the five tools and the index resource, over ``backend``."""

    from mcp.server.mcpserver import MCPServer
    from mcp.types import ToolAnnotations

    async def warm_after_first_message(ctx, call_next):
        # The handshake (`initialize`, or `server/discover`) is answered before the model and index
        # start loading: a loading thread would compete with it for the GIL and the CPU.
        try:
            return await call_next(ctx)
        finally:
            backend.warm_up()

    server = MCPServer(SERVER_NAME, instructions=INSTRUCTIONS, log_level="WARNING",
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
    def ask(question: Query, k: Annotated[int | None, Field(ge=1, le=100, description="papers to retrieve (default 5)")] = None,
            venue: Venue = None, year: Year = None, source: Source = None, has_code: HasCode = False,
            category: Category = None) -> AskResult:
        """Answer a question from the indexed abstracts, with [n] citations and the supporting sentence of
        each. verdict: 'answered', 'closest match' (may not answer) or 'nothing found'."""
        return ask_question(backend, question, k, venue, year, source, has_code, category)

    @server.tool(annotations=read_only)
    @_user_errors
    def related(text: Annotated[str | None, Field(description="a draft abstract or paragraph (its first 8,000 characters are read)", max_length=50_000)] = None,
                paper_id: Annotated[str | None, Field(description="an indexed paper id (instead of text)")] = None,
                k: Annotated[int, Field(ge=1, le=100, description="how many papers")] = 10,
                explain: Annotated[int, Field(ge=0, le=10, description="with an LLM configured: a cited paragraph for the top N")] = 0,
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
    def get_paper(paper_id: Annotated[str, Field(description="a paper id, e.g. '000_12a0d7b1c5c902c5#13'")]) -> IndexedPaper:
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


# --- stdio: every line gets an answer ---------------------------------------------------------------
def unreadable_reply(exc: Exception):
    """The JSON-RPC error (``mcp.types.JSONRPCError``) for a stdio line the SDK could not read as a message,
    or None when none is due. The SDK hands such a line on as the exception its parser raised (a pydantic
    ValidationError) and answers nothing, so a client waits forever for the reply to that request.

    Not JSON: -32700 (parse error), id null. JSON that is no JSON-RPC message: -32600 (invalid request),
    with its id when it has a readable one; id null when the id is no string or integer. JSON holding a lone surrogate escape ("\\ud800", which
    Python reads but no UTF-8 text can hold, so the SDK's parser refuses the line): -32602 (invalid
    params) with its id. JSON nested too deeply to read back (hundreds of brackets): -32700, id null.
    A notification (no id), a reply of the client's and a blank line get nothing."""
    from mcp.types import PARSE_ERROR, ErrorData, JSONRPCError

    try:
        return _reply_to(exc)
    except RecursionError:  # raised out of the reader, it ended the server (an ExceptionGroup)
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
            code=PARSE_ERROR, message="Parse error: the line is nested too deeply to read"))


def _reply_to(exc: Exception):
    from mcp.types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError

    errors = exc.errors() if hasattr(exc, "errors") else []
    line = next((e["input"] for e in errors if e.get("type") == "json_invalid"), None)
    if isinstance(line, str):
        if not line.strip():
            return None
        try:
            message = json.loads(line)
        except ValueError:
            return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
                code=PARSE_ERROR, message="Parse error: the line is not a JSON text"))
    else:  # parsed, but no message: the whole object is an error's input (a field the message lacks)
        message = next((e["input"] for e in errors if isinstance(e.get("input"), dict)),
                       errors[0]["input"] if errors else None)
    if isinstance(message, dict) and "method" not in message and ("result" in message or "error" in message):
        return None  # the client's reply to a request of ours: answering it would be a reply to a reply
    if isinstance(message, dict) and "id" not in message and "method" in message:
        return None  # a notification is never answered
    pid = message.get("id") if isinstance(message, dict) else None
    if not (_id_type(pid) and _unicode(pid)):
        pid = None
    if isinstance(message, dict) and "id" in message and not _id_type(message["id"]):
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
            code=INVALID_REQUEST, message="Invalid request: a request's id must be a string or an integer"))
    if isinstance(line, str) and not _unicode(message):
        return JSONRPCError(jsonrpc="2.0", id=pid, error=ErrorData(
            code=INVALID_PARAMS, message="Invalid params: the request holds a lone surrogate escape (such as "
                                         "\\ud800), which is no Unicode text; send text as valid UTF-16 pairs"))
    return JSONRPCError(jsonrpc="2.0", id=pid, error=ErrorData(
        code=INVALID_REQUEST, message="Invalid request: not a JSON-RPC 2.0 request of this protocol"))


def _id_type(value) -> bool:
    """True for an id JSON-RPC 2.0 allows a request (a string or an integer; null only in replies)."""
    return isinstance(value, str) or isinstance(value, int) and not isinstance(value, bool)


def _unicode(value) -> bool:
    """True when every string in ``value`` (a parsed JSON value) is valid Unicode (no lone surrogate)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return False
        return True
    if isinstance(value, dict):
        return all(_unicode(k) and _unicode(v) for k, v in value.items())
    if isinstance(value, list):
        return all(map(_unicode, value))
    return True


class _Answering:
    """The SDK's stdio read stream, answering every line it could not read (:func:`unreadable_reply`) on
    the write stream instead of passing the parser's exception on (which the SDK only logs). The rest of
    the stream's interface is the inner one's."""

    def __init__(self, inner, write_stream):
        self._inner, self._write = inner, write_stream

    @property
    def last_context(self):  # the sender's context, which the SDK's loop reads off its stream
        return getattr(self._inner, "last_context", None)

    async def receive(self):
        import anyio
        from mcp.shared.message import SessionMessage

        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            reply = unreadable_reply(item)
            if reply is not None:
                try:
                    await self._write.send(SessionMessage(reply))
                except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                    pass  # the client is gone

    def __aiter__(self):
        return self

    async def __anext__(self):
        import anyio

        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc) -> None:
        await self.aclose()


def without_bad_id(line: str) -> str:
    """``line`` as the SDK should read it: a request whose ``id`` is no string or integer (null, an object, a
    list, a fraction, a boolean) without its ``"jsonrpc"`` member, so that the SDK refuses it and
    :func:`unreadable_reply` answers -32600 with id null. The SDK reads such a line as a notification (it
    drops the id) and answers nothing: the client waited forever. Any other line is returned as is."""
    if '"id"' not in line:
        return line
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return line  # the SDK refuses it too, and the reply is unreadable_reply's
    if not isinstance(message, dict) or "method" not in message or "id" not in message or _id_type(message["id"]):
        return line
    return json.dumps({k: v for k, v in message.items() if k != "jsonrpc"}) + "\n"


async def _serve_stdio(server) -> None:
    """``server.run("stdio")`` (:class:`MCPServer`'s ``run_stdio_async``: the SDK's stdio transport, which
    claims fd 0 and 1), its read stream wrapped in :class:`_Answering` and each line it reads passed through
    :func:`without_bad_id`. The SDK gives no hook for either, so this reaches its low-level server
    (``_lowlevel_server``) and claims fd 0 with its own ``_claim_fd`` (fd 0 then reads the null device, as the
    SDK leaves it), giving the transport the wire as text lines (mcp 2.3)."""
    import anyio
    from mcp.server import stdio

    class CheckedLines(stdio._UnownedTextWrapper):
        def readline(self, size: int = -1) -> str:
            return without_bad_id(super().readline(size))

    lowlevel = server._lowlevel_server
    buffer, release = stdio._claim_fd(0, sys.stdin, "rb", stdio._open_stdin_diversion)
    try:
        lines = anyio.wrap_file(CheckedLines(buffer, encoding="utf-8", errors="replace"))
        async with stdio.stdio_server(stdin=lines) as (read_stream, write_stream):
            await lowlevel.run(_Answering(read_stream, write_stream), write_stream,
                               lowlevel.create_initialization_options())
    finally:
        if release is not None:
            release()


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
    backend = Backend(settings, ingest_default)
    server = build_server(backend)
    if http:
        backend.warm_up()  # no handshake to wait for: a client may come much later
        print(f"Paper Assistant MCP server on http://{host}:{port}/mcp (streamable HTTP)", file=sys.stderr, flush=True)
        server.run("streamable-http", host=host, port=port)
    else:
        # The protocol is bytes on file descriptors 0 and 1: the SDK takes over the streams' binary
        # buffers. A text wrapper over them (a terminal filter of the CLI's, say) has none: use the
        # process' own streams, which the wrapper only filtered (JSON escapes every control character).
        for name in ("stdin", "stdout"):
            if not hasattr(getattr(sys, name), "buffer"):
                setattr(sys, name, getattr(sys, f"__{name}__"))
        import anyio

        anyio.run(_serve_stdio, server)
