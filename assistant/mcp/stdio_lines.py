"""The MCP stdio transport's lines: every line the client sends gets an answer, and none is read unbounded.

The SDK's stdio transport (``mcp.server.stdio``) answers nothing to a line it cannot read (it logs the parser's
exception), reads a request whose id is no string or integer as a notification (no answer either), and reads a
line whole however long it is. Here its read stream is wrapped (:class:`_Answering`, :func:`unreadable_reply`)
and each line passes a bounded reader first (:func:`serve_stdio`).
"""

from __future__ import annotations

import json
import sys

# The longest stdio line read (characters). The largest request a tool takes (related's 50,000-character
# draft, every character escaped) is about 300,000; a longer line is dropped unread and answered -32700.
MAX_LINE_CHARS = 1 << 20
OVERLONG = "\x00overlong"  # stands in for a dropped line; no JSON text starts with NUL


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
        if line.startswith(OVERLONG):
            return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(
                code=PARSE_ERROR, message=f"Parse error: the line is over {MAX_LINE_CHARS:,} characters, the "
                                          "most this server reads; it was dropped unread"))
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


async def serve_stdio(server) -> None:
    """``server.run("stdio")`` (:class:`MCPServer`'s ``run_stdio_async``: the SDK's stdio transport, which
    claims fd 0 and 1), its read stream wrapped in :class:`_Answering` and each line it reads passed through
    :func:`without_bad_id`, and each read bounded to ``MAX_LINE_CHARS`` (a longer line is answered -32700 as soon
    as it passes the bound, and the rest of it dropped as it arrives). The SDK gives no hook for either, so this reaches its low-level server
    (``_lowlevel_server``) and claims fd 0 with its own ``_claim_fd`` (fd 0 then reads the null device, as the
    SDK leaves it), giving the transport the wire as text lines (mcp 2.3)."""
    import anyio
    from mcp.server import stdio

    from assistant.mcp.masked import MaskedWrites

    class CheckedLines(stdio._UnownedTextWrapper):
        skipping = False  # inside a line over MAX_LINE_CHARS, already answered: read on to its end, dropping it

        def readline(self, size: int = -1) -> str:
            # Read in bounded pieces: a line that never ends held the whole stream in memory (a hostile round).
            while self.skipping:
                piece = super().readline(MAX_LINE_CHARS)
                if not piece:
                    return ""
                self.skipping = not piece.endswith("\n")
            line = super().readline(MAX_LINE_CHARS)
            if len(line) >= MAX_LINE_CHARS and not line.endswith("\n"):
                self.skipping = True
                return OVERLONG + "\n"  # answered at once, not when (if ever) the line ends
            return without_bad_id(line)

    lowlevel = server._lowlevel_server
    buffer, release = stdio._claim_fd(0, sys.stdin, "rb", stdio._open_stdin_diversion)
    try:
        lines = anyio.wrap_file(CheckedLines(buffer, encoding="utf-8", errors="replace"))
        async with stdio.stdio_server(stdin=lines) as (read_stream, write_stream):
            write_stream = MaskedWrites(write_stream)  # errors leave with the configured secrets masked
            await lowlevel.run(_Answering(read_stream, write_stream), write_stream,
                               lowlevel.create_initialization_options())
    finally:
        if release is not None:
            release()


