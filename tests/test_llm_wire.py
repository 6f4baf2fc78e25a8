"""An endpoint that never stops sending, against the real client (langchain-openai over httpx), on a real
HTTP server on loopback: a stream line that never ends and a non-streamed reply that never ends are both
cut at the byte budget (:func:`assistant.answer.wire.reply_byte_limit`), and the connection is dropped.

Before the budget both were read whole: the SSE reader held the unfinished line, and a non-streamed reply
is read before it is parsed, so memory grew until the first-token deadline (120 s by default)."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from langchain_core.messages import HumanMessage
from pydantic import SecretStr

from assistant.answer.llm import LLMReplyOverBudget, OpenAIChat, explain_llm_error
from assistant.answer.wire import reply_byte_limit
from assistant.settings import LLMSettings

PIECE = b"a" * 65536


class Endless(BaseHTTPRequestHandler):
    """Answers every POST with headers, then an opening that never closes: ``data: {"choices": "aaa…``
    when the request asks for a stream, ``{"choices": "aaa…`` otherwise. Counts the bytes it got out and
    sets ``dropped`` when the client closed the connection."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if body.get("stream") else "application/json")
        self.send_header("Connection", "close")  # no length: the body ends when the connection does
        self.end_headers()
        try:
            self.wfile.write(b'data: {"choices": "' if body.get("stream") else b'{"choices": "')
            while not self.server.stop.is_set():
                self.wfile.write(PIECE)
                self.server.sent += len(PIECE)
        except (BrokenPipeError, ConnectionResetError):
            self.server.dropped.set()


@pytest.fixture
def endless():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    server.sent, server.stop, server.dropped = 0, threading.Event(), threading.Event()
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.stop.set()
    server.shutdown()
    server.server_close()


def chat_on(server) -> tuple[OpenAIChat, LLMSettings]:
    cfg = LLMSettings(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", api_key=SecretStr("sk-test"),
                      model="test-model", max_tokens=64, max_retries=0, timeout=20, first_token_timeout=20)
    return OpenAIChat(cfg), cfg


def test_a_stream_line_that_never_ends_is_cut_at_the_byte_budget(endless):
    chat, cfg = chat_on(endless)
    with pytest.raises(LLMReplyOverBudget) as cut:
        list(chat.stream([HumanMessage("What is KITE?")]))
    assert cut.value.limit == reply_byte_limit(cfg) == 6 * 64 * 8 + 2048 * 144
    assert endless.dropped.wait(10), "the client kept the connection open after the cut"
    line = explain_llm_error(cut.value, cfg, mid_answer=False)
    assert f"cut at {reply_byte_limit(cfg):,} bytes" in line and "does not stop at max_tokens" in line


def test_a_non_streamed_reply_that_never_ends_is_cut_at_the_byte_budget(endless):
    chat, cfg = chat_on(endless)
    with pytest.raises(LLMReplyOverBudget) as cut:
        chat.complete([HumanMessage("Explain the overlap.")])
    assert cut.value.limit == reply_byte_limit(cfg)
    assert endless.dropped.wait(10), "the client kept the connection open after the cut"
    assert "reply budget of 64 tokens" in explain_llm_error(cut.value, cfg)
