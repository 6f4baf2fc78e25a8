"""A real HTTP server on 127.0.0.1 that speaks the OpenAI chat-completions protocol.

Standard library only. Tests point ``ChatOpenAI(base_url=fake.base_url, ...)`` or
``openai.OpenAI(base_url=fake.base_url, ...)`` at it and script what each request gets::

    with FakeOpenAI(models=["test-model"]) as fake:
        fake.script(Reply(text="first"), Reply(status=429), "third")   # one per request
        fake.default = Reply(text="after the script runs out")
        ...
        assert fake.requests[0]["messages"][-1]["content"] == "question"
        assert fake.requests[0].headers["authorization"] == "Bearer sk-test"

Endpoints:

- ``GET /v1/models`` -> ``{"object": "list", "data": [{"id", "object": "model", "owned_by": "test"}]}``
- ``POST /v1/chat/completions`` -> unknown model: 404 ``model_not_found`` (the queued
  behaviour is not consumed); otherwise the next queued :class:`Reply` (or ``default``).
  ``"stream": true`` answers ``text/event-stream``, anything else a ``chat.completion`` JSON.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import socket
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable

__all__ = ["FakeOpenAI", "RecordedRequest", "Reply", "free_port"]

HOST = "127.0.0.1"

# OpenAI-style (type, code, message) per status, for error replies without error_message.
_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Bad request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided: sk-test."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "not_found", "Not found."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    502: ("server_error", None, "Bad gateway."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
}


@dataclasses.dataclass(frozen=True)
class Reply:
    """How the fake answers one chat-completions request.

    - ``text``: assistant content (for error statuses it is ignored; see ``error_message``).
    - ``status``: 200 answers normally; anything else answers an OpenAI-style error JSON
      ``{"error": {"message", "type", "param", "code"}}`` with that status (stream or not).
    - ``delay``: seconds to wait before answering (to trip client timeouts).
    - ``cut_after``: streaming only - send the role chunk and this many content chunks,
      then drop the connection mid-body (no finish chunk, no ``[DONE]``).
    - ``reject_stream_options``: a request whose body has ``stream_options`` gets 400
      "Unrecognized request argument supplied: stream_options"; without it, answers normally.
    - ``usage``: False omits the ``usage`` object from JSON and SSE entirely.
    - ``chunk_size``: characters of ``text`` per SSE content delta.
    - ``chunk_delay``: seconds to sleep between SSE chunks (slow-stream tests).
    - ``error_message``: overrides the default message of an error reply.
    - ``headers``: extra response headers, e.g. ``{"retry-after-ms": "10"}`` for fast retries.
    - ``repeat``: the reply is ``text`` this many times over (streamed piece by piece, never built whole): an
      endpoint that ignores ``max_tokens`` and sends megabytes.
    - ``finish_reason``: of the last SSE chunk (``"length"``: the budget ran out); None sends no
      finish chunk. ``done``: False leaves out ``data: [DONE]`` (the body still ends cleanly).
    """

    text: str = "This is the fake assistant's reply."
    status: int = 200
    delay: float = 0.0
    cut_after: int | None = None
    reject_stream_options: bool = False
    usage: bool = True
    chunk_size: int = 8
    chunk_delay: float = 0.0
    error_message: str | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    finish_reason: str | None = "stop"
    done: bool = True
    repeat: int = 1

    def __post_init__(self) -> None:
        if self.chunk_size < 1:
            raise ValueError("chunk_size must be >= 1")


class RecordedRequest(dict):
    """The parsed JSON body of one chat-completions request (a dict), plus ``.headers``
    (lower-cased names) and ``.path``."""

    def __init__(self, body: dict[str, Any], headers: dict[str, str], path: str) -> None:
        super().__init__(body)
        self.headers = headers
        self.path = path


def free_port() -> int:
    """A loopback port nothing listens on right now (bind to port 0, read it, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def _count_tokens(text: str) -> int:
    # Whitespace words: deterministic, so tests can predict usage numbers exactly.
    return len(text.split())


def _prompt_tokens(body: dict[str, Any]) -> int:
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, str):
            total += _count_tokens(content)
        elif isinstance(content, list):  # content parts: [{"type": "text", "text": ...}]
            total += sum(_count_tokens(p.get("text", "")) for p in content if isinstance(p, dict))
    return total


class _Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 so the client can keep JSON connections alive; every JSON answer has a
    # Content-Length and every stream ends the connection.
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        pass  # keep pytest output clean

    def setup(self) -> None:
        super().setup()
        self.server.fake._track(self.connection, add=True)

    def finish(self) -> None:
        try:
            super().finish()
        finally:
            self.server.fake._track(self.connection, add=False)

    # -- plumbing -------------------------------------------------------------------

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_error_json(
        self,
        status: int,
        message: str | None = None,
        *,
        type_: str | None = None,
        code: str | None = None,
        param: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        default_type, default_code, default_message = _ERRORS.get(
            status, ("server_error" if status >= 500 else "invalid_request_error", None, f"HTTP {status}")
        )
        error = {
            "message": message or default_message,
            "type": type_ or default_type,
            "param": param,
            "code": code if code is not None else default_code,
        }
        self._send_json(status, {"error": error}, headers)

    def _read_body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    # -- routes ---------------------------------------------------------------------

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming
        if self.path.rstrip("/") in ("/v1/models", "/models"):
            data = [{"id": m, "object": "model", "created": 0, "owned_by": "test"} for m in self.server.fake.models]
            self._send_json(200, {"object": "list", "data": data})
        else:
            self._send_error_json(404, f"Unknown path {self.path}", code="unknown_url")

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        raw = self._read_body()
        if self.path.split("?")[0].rstrip("/") not in ("/v1/chat/completions", "/chat/completions"):
            self._send_error_json(404, f"Unknown path {self.path}", code="unknown_url")
            return
        try:
            body = json.loads(raw or b"{}")
            if not isinstance(body, dict):
                raise ValueError("body is not a JSON object")
        except ValueError as exc:
            self._send_error_json(400, f"Invalid JSON body: {exc}")
            return

        fake = self.server.fake
        headers = {k.lower(): v for k, v in self.headers.items()}
        fake._record(RecordedRequest(body, headers, self.path))

        model = body.get("model")
        if model not in fake.models:
            self._send_error_json(404, f"The model `{model}` does not exist", code="model_not_found")
            return

        reply = fake._next_behaviour()
        if reply.delay > 0 and fake._stopping.wait(reply.delay):
            return  # the fake is shutting down; don't answer a request nobody waits for
        if reply.status != 200:
            self._send_error_json(reply.status, reply.error_message, headers=reply.headers)
            return
        if reply.reject_stream_options and "stream_options" in body:
            # The wording Azure / older OpenAI-compatible servers use for this.
            self._send_error_json(
                400,
                reply.error_message or "Unrecognized request argument supplied: stream_options",
                param="stream_options",
                headers=reply.headers,
            )
            return
        if body.get("stream"):
            self._stream(body, reply)
        else:
            self._complete(body, reply)

    # -- answers --------------------------------------------------------------------

    def _usage(self, body: dict[str, Any], reply: Reply) -> dict[str, int]:
        prompt, completion = _prompt_tokens(body), _count_tokens(reply.text) * reply.repeat
        return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}

    def _complete(self, body: dict[str, Any], reply: Reply) -> None:
        payload: dict[str, Any] = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": reply.text * reply.repeat, "refusal": None},
                    "logprobs": None,
                    "finish_reason": reply.finish_reason,
                }
            ],
        }
        if reply.usage:
            payload["usage"] = self._usage(body, reply)
        self._send_json(200, payload, reply.headers)

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))

    def _stream(self, body: dict[str, Any], reply: Reply) -> None:
        # Chunked transfer encoding rather than a close-delimited body: with close-delimited
        # bodies an abrupt close looks exactly like a normal end, so a cut_after stream would
        # end "successfully". With chunked encoding the client's HTTP parser (h11) sees the
        # missing terminating chunk and raises, like a real dropped connection.
        self.close_connection = True
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream; charset=utf-8")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.end_headers()

        base = {
            "id": f"chatcmpl-{uuid.uuid4().hex[:24]}",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": body["model"],
            "system_fingerprint": None,
        }

        def event(choices: list[dict[str, Any]], **extra: Any) -> None:
            if reply.chunk_delay > 0:
                time.sleep(reply.chunk_delay)
            self._write_chunk(b"data: " + json.dumps({**base, "choices": choices, **extra}).encode() + b"\n\n")

        def choice(delta: dict[str, Any], finish_reason: str | None = None) -> list[dict[str, Any]]:
            return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]

        event(choice({"role": "assistant", "content": "", "refusal": None}))
        pieces = [reply.text[i : i + reply.chunk_size] for i in range(0, len(reply.text), reply.chunk_size)]
        for n, piece in enumerate(p for _ in range(reply.repeat) for p in pieces):
            if reply.cut_after is not None and n >= reply.cut_after:
                break
            event(choice({"content": piece}))
        if reply.cut_after is not None:
            # Drop the connection without the terminating 0-chunk (nor finish chunk / [DONE]).
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            return
        if reply.finish_reason is not None:
            event(choice({}, reply.finish_reason))
        stream_options = body.get("stream_options") or {}
        if reply.usage and stream_options.get("include_usage"):
            event([], usage=self._usage(body, reply))
        if reply.done:
            self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")


class _Server(ThreadingHTTPServer):
    daemon_threads = True  # a handler sleeping in `delay` must not block stop()
    fake: FakeOpenAI

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients that time out or stop reading hang up on us; that is expected here.
        import sys

        if isinstance(sys.exc_info()[1], OSError):  # reset, broken pipe, timeout
            return
        super().handle_error(request, client_address)


class FakeOpenAI:
    """The server. Starts listening on ``127.0.0.1:<free port>`` on construction.

    Attributes: ``base_url`` ("http://127.0.0.1:PORT/v1"), ``models`` (known model ids),
    ``default`` (the :class:`Reply` used when the script is empty), ``requests`` (list of
    :class:`RecordedRequest`, one per chat-completions POST, unknown models included).
    """

    def __init__(self, models: Iterable[str] = ("test-model",), default: Reply | None = None) -> None:
        self.models: list[str] = list(models)
        self.default: Reply = default or Reply()
        self.requests: list[RecordedRequest] = []
        self._queue: collections.deque[Reply] = collections.deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._connections: set[socket.socket] = set()
        self._server = _Server((HOST, 0), _Handler)
        self._server.fake = self
        self.port: int = self._server.server_address[1]
        self.base_url = f"http://{HOST}:{self.port}/v1"
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="fake-openai", daemon=True
        )
        self._thread.start()

    # -- public API -----------------------------------------------------------------

    def script(self, *behaviours: Reply | str) -> FakeOpenAI:
        """Queue behaviours, consumed one per chat-completions request (a str means ``Reply(text=s)``)."""
        with self._lock:
            self._queue.extend(Reply(text=b) if isinstance(b, str) else b for b in behaviours)
        return self

    @property
    def pending(self) -> int:
        """Number of scripted behaviours not yet consumed."""
        with self._lock:
            return len(self._queue)

    def stop(self) -> None:
        """Stop serving, drop open connections, close the socket. Idempotent."""
        if self._stopping.is_set():
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        with self._lock:
            connections = list(self._connections)
        for conn in connections:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAI:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"FakeOpenAI({self.base_url!r}, models={self.models!r}, pending={self.pending})"

    # -- used by the handler ----------------------------------------------------------

    def _next_behaviour(self) -> Reply:
        with self._lock:
            return self._queue.popleft() if self._queue else self.default

    def _record(self, request: RecordedRequest) -> None:
        with self._lock:
            self.requests.append(request)

    def _track(self, conn: socket.socket, *, add: bool) -> None:
        with self._lock:
            (self._connections.add if add else self._connections.discard)(conn)
