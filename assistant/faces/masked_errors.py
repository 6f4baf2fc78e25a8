"""Error replies of the page and the MCP server leave with the configured secrets masked.

A key or password the user typed into an input (a filter, a tool's argument, a tool's name) came back in the
error naming it: Gradio's "Value: … is not in the list of choices", MCP's "Unknown tool: …" and its argument
reports (a ninth hostile round). Each error reply is masked as it leaves the HTTP server
(:class:`MaskedErrorBodies`) or the MCP stdio stream (:func:`masked_reply`, :mod:`assistant.mcp.masked`) with
:func:`assistant.text.masked_strings`. Replies that are no error (answers, paper lists, the page's chat) pass as
they are: a password that is a word ("research") would otherwise be cut out of abstracts.
"""

from __future__ import annotations

import json
import re

_KEPT = ("id", "jsonrpc", "event_id", "msg")
"""Members of an error message left as they are: what a client matches replies by, and the message's kind."""


def is_error(message) -> bool:
    """True for a parsed JSON message that reports an error: JSON-RPC's (an ``error`` member), an MCP tool's (a
    ``result`` with ``isError``), Gradio's (``"success": false``, or an ``error`` member)."""
    if not isinstance(message, dict):
        return False
    result = message.get("result")
    return (message.get("error") is not None or message.get("success") is False
            or isinstance(result, dict) and result.get("isError") is True)


def masked_reply(message, whole: bool = False):
    """``message`` (parsed JSON; a batch is a list) with every string of an error message (:func:`is_error`) masked,
    but for the members :data:`_KEPT`; all of it when ``whole`` (an error event, or a response of status 400 or
    more). Anything else is returned as it is."""
    from assistant.text import configured_secrets, masked_strings

    if not configured_secrets():
        return message
    if isinstance(message, list) and not whole:
        return [masked_reply(m) for m in message]
    if whole and not isinstance(message, dict):
        return masked_strings(message)
    if not (whole or is_error(message)):
        return message
    return {k: v if k in _KEPT else masked_strings(v) for k, v in message.items()}


_LINE = re.compile(r"(\r\n|\r|\n)")


def masked_body(body: bytes, content_type: str, status: int = 200) -> bytes:
    """A response body with its error replies masked (:func:`masked_reply`): a JSON body (``application/json``)
    whole, or each ``data:`` line of server-sent events (``text/event-stream``) that holds JSON (all of it in an
    ``event: error``). Text that is no JSON is returned as it came."""
    if content_type.startswith("application/json"):
        try:
            message = json.loads(body)
        except (ValueError, RecursionError):
            return body
        masked = masked_reply(message, whole=status >= 400)
        return body if masked == message else json.dumps(masked, ensure_ascii=False).encode()
    if not content_type.startswith("text/event-stream"):
        return body
    parts, event, changed = _LINE.split(body.decode("utf-8", "replace")), "", False
    for i, part in enumerate(parts):
        if part.startswith("event:"):
            event = part[6:].strip()
        elif part.startswith("data:"):
            try:
                message = json.loads(part[5:])
            except (ValueError, RecursionError):
                continue
            masked = masked_reply(message, whole=event == "error")
            if masked != message:
                parts[i], changed = "data: " + json.dumps(masked, ensure_ascii=False), True
        elif not part.strip("\r\n") and i % 2 == 0:  # a blank line ends an event
            event = ""
    return "".join(parts).encode() if changed else body


MAX_HELD_JSON = 8 * 2**20
"""Bytes of one JSON response held to be masked whole; a longer one passes as it came."""


class MaskedErrorBodies:
    """ASGI middleware: each response body passes :func:`masked_body` (a JSON body is held until it is whole, up
    to :data:`MAX_HELD_JSON`, and its ``content-length`` set again). With no secret configured, or for a
    websocket, everything passes untouched."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        from assistant.text import configured_secrets

        if scope["type"] != "http" or not configured_secrets():
            return await self.app(scope, receive, send)
        state = {"type": "", "status": 200, "start": None, "held": []}

        async def masked_send(message) -> None:
            if message["type"] == "http.response.start":
                headers = {k.lower(): v for k, v in message.get("headers", [])}
                state["type"] = headers.get(b"content-type", b"").decode("latin-1").lower()
                state["status"] = message.get("status", 200)
                if state["type"].startswith("application/json"):
                    state["start"] = message  # sent with the body, once its length is known
                    return None
                return await send(message)
            if message["type"] != "http.response.body":
                return await send(message)
            if state["start"] is None:
                return await send({**message, "body": masked_body(message.get("body", b""), state["type"],
                                                                   state["status"])})
            state["held"].append(message.get("body", b""))
            if message.get("more_body") and sum(map(len, state["held"])) <= MAX_HELD_JSON:
                return None
            start, body = state["start"], b"".join(state["held"])
            state["start"], state["held"] = None, []
            if not message.get("more_body"):  # whole: masked, with its length as it is now
                body = masked_body(body, state["type"], state["status"])
                start = {**start, "headers": [(k, v) for k, v in start.get("headers", [])
                                              if k.lower() != b"content-length"]
                         + [(b"content-length", str(len(body)).encode())]}
            else:
                state["type"] = ""  # too long to hold: the rest passes as it comes
            await send(start)
            return await send({**message, "body": body})

        return await self.app(scope, receive, masked_send)
