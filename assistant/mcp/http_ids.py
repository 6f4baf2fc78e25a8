"""MCP over streamable HTTP: a request whose id is no string or integer gets an answer.

The SDK's HTTP transport reads a request whose ``id`` is a boolean, an object, a list, a fraction or null as a
notification, answers ``202 Accepted`` and nothing else, so the client waits forever for its reply (a third
hostile round; stdio answers it through :func:`assistant.mcp.stdio_lines.without_bad_id`). Here the app is
wrapped: such a POST is answered ``400`` with the JSON-RPC error -32600 and id null, as on stdio; every other
request reaches the SDK unchanged.
"""

from __future__ import annotations

import json

MAX_SESSIONS = 64
"""MCP-over-HTTP sessions held at once; a new one past it is refused by the SDK until one closes or idles out."""
SESSION_IDLE_SECONDS = 600
"""Seconds after which an idle MCP-over-HTTP session is closed (a client then starts a new one)."""


def bad_id_request(body: bytes) -> bool:
    """True when ``body`` (a POST body, UTF-8 JSON) is one request, or a batch holding one, whose ``id`` JSON-RPC
    2.0 does not allow a request (anything but a string or an integer). False for anything else, unreadable
    JSON included (the SDK answers that itself, -32700)."""
    from assistant.mcp.stdio_lines import _id_type

    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return False
    messages = message if isinstance(message, list) else [message]
    return any(isinstance(m, dict) and "method" in m and "id" in m and not _id_type(m["id"]) for m in messages)


def _refused(body: bytes) -> str | None:
    """The -32600 message for a POST body answered here, or None: a request with a bad id
    (:func:`bad_id_request`), or a batch (a JSON array), which this protocol version has no place for: the SDK
    answered it with pydantic's report of four validation errors (a hostile round); stdio answers -32600."""
    if bad_id_request(body):
        return "Invalid request: a request's id must be a string or an integer"
    if body.lstrip()[:1] == b"[":
        try:
            if isinstance(json.loads(body), list):
                return "Invalid request: not a JSON-RPC 2.0 request of this protocol (batches are not supported)"
        except (ValueError, RecursionError):
            return None
    return None


def _no_message(body: bytes) -> str | None:
    """The -32600 message for JSON that is no JSON-RPC message of this protocol, or None (a message, or no JSON:
    the SDK answers those). The SDK answered pydantic's whole report, which quotes each value shortened to its first
    and last 24 characters: a key glued to other text showed 18 of each (a twelfth hostile round); stdio answers
    one line."""
    import pydantic_core
    from mcp.types import jsonrpc_message_adapter
    from pydantic import ValidationError

    try:
        raw = pydantic_core.from_json(body)
    except ValueError:
        return None
    try:
        jsonrpc_message_adapter.validate_python(raw, by_name=False)
    except ValidationError:
        return "Invalid request: not a JSON-RPC 2.0 request of this protocol"
    return None


class AnswerBadIds:
    """ASGI middleware over the SDK's Starlette app. A POST body is read (at most ``limit`` bytes, the
    SDK's own body limit; a longer one is handed on as it came, for the SDK's 413), checked with
    :func:`_refused` (a bad id, a batch: answered here), and replayed to the app; for JSON that is no message of this
    protocol (:func:`_no_message`) the SDK's 400 is replaced by one line."""

    def __init__(self, app, limit: int):
        self.app, self.limit = app, limit

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            return await self.app(scope, receive, send)
        read, size = [], 0
        while True:
            message = await receive()
            read.append(message)
            size += len(message.get("body", b""))
            if message["type"] != "http.request" or not message.get("more_body") or size > self.limit:
                break
        whole = read[-1]["type"] == "http.request" and not read[-1].get("more_body")
        raw = b"".join(m.get("body", b"") for m in read)
        message = _refused(raw) if whole else None
        if message:
            return await _answer_400(send, message)

        async def replay():
            return read.pop(0) if read else await receive()

        no_message = _no_message(raw) if whole else None
        if not no_message:
            return await self.app(scope, replay, send)
        state = {"replaced": False}

        async def one_line(event) -> None:  # the SDK checks the Host and Origin first (421, 403): its 400 is replaced
            if event["type"] == "http.response.start" and event.get("status") == 400:
                state["replaced"] = True
                return await _answer_400(send, no_message)
            if not state["replaced"]:
                await send(event)

        return await self.app(scope, replay, one_line)


async def _answer_400(send, message: str) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": message}}).encode()
    await send({"type": "http.response.start", "status": 400,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


async def serve_http(server, host: str, port: int) -> None:
    """``server.run("streamable-http", host=host, port=port)`` (mcp 2.3's ``run_streamable_http_async``), its
    Starlette app wrapped in :class:`AnswerBadIds`."""
    import uvicorn
    from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE

    # Sessions bounded in number and idle time: the SDK's 10,000 for 30 minutes let a local process hold 6,000 of
    # them (230 MB, a seventh hostile round); one assistant serves a few clients.
    from assistant.faces import MaskedErrorBodies

    app = AnswerBadIds(server.streamable_http_app(host=host, max_sessions=MAX_SESSIONS,
                                                  session_idle_timeout=SESSION_IDLE_SECONDS),
                       DEFAULT_MAX_REQUEST_BODY_SIZE)
    app = MaskedErrorBodies(app)  # errors leave with the configured secrets masked
    await uvicorn.Server(uvicorn.Config(app, host=host, port=port,
                                        log_level=server.settings.log_level.lower())).serve()
