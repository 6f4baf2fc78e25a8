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
    when the request asks for a stream, ``{"choices": "aaa…`` otherwise (with ``gzip_layers`` set: a compressed
    reply instead); every GET with a model list that never ends. Counts the bytes it got out and sets
    ``dropped`` when the client closed the connection."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802 - stdlib naming: GET /v1/models, a model list that never ends
        if self.server.models_ok:  # a sound list, so that doctor goes on to its streamed answer
            body = b'{"object": "list", "data": [{"id": "test-model", "object": "model"}]}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        self._endless(b'{"object": "list", "data": [', "application/json", b'{"id": "m", "object": "model"}, ' * 2048)

    def _endless(self, opening: bytes, kind: str, piece: bytes) -> None:
        if self.server.trickle:  # a byte every 0.2 s: every per-read timeout is kept, forever
            opening, piece = opening[:1], b" "
        self.send_response(self.server.status)
        self.send_header("Content-Type", kind)
        self.send_header("Connection", "close")  # no length: the body ends when the connection does
        self.end_headers()
        try:
            self.wfile.write(opening)
            while not self.server.stop.is_set():
                self.wfile.write(piece)
                self.server.sent += len(piece)
                if self.server.trickle:
                    self.wfile.flush()
                    self.server.stop.wait(0.2)
        except (BrokenPipeError, ConnectionResetError):
            self.server.dropped.set()

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.server.gzip_layers:
            self._gzipped(body)
            return
        if body.get("stream"):
            self._endless(b'data: {"choices": "', "text/event-stream", PIECE)
        else:
            self._endless(b'{"choices": "', "application/json", PIECE)

    def _gzipped(self, body: dict) -> None:
        """A reply of ``self.server.gzip_layers`` gzip layers around 64 MiB of one byte (a few kB on the wire)."""
        import gzip

        data = b"a" * (64 << 20)
        for _ in range(self.server.gzip_layers):
            data = gzip.compress(data, compresslevel=9)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream" if body.get("stream") else "application/json")
        self.send_header("Content-Encoding", ", ".join(["gzip"] * self.server.gzip_layers))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)
        self.server.encodings.append(self.headers.get("Accept-Encoding"))


@pytest.fixture
def endless():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Endless)
    server.sent, server.stop, server.dropped = 0, threading.Event(), threading.Event()
    server.gzip_layers, server.encodings, server.trickle, server.models_ok, server.status = 0, [], False, False, 200
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


def test_an_error_status_with_an_endless_body_is_named_as_an_error_not_a_long_answer(endless):
    """A hostile round: HTTP 500 with a body that never ends was "the LLM's answer ran past the reply budget"."""
    endless.status = 500
    chat, cfg = chat_on(endless)
    with pytest.raises(LLMReplyOverBudget) as cut:
        list(chat.stream([HumanMessage("What is KITE?")]))
    assert explain_llm_error(cut.value, cfg) == (f"The LLM endpoint {cfg.base_url} answered HTTP 500 with an error body "
                                                 f"over {reply_byte_limit(cfg):,} bytes (read no further); its log may "
                                                 "say why.")


def test_a_compressed_reply_is_refused_unread(endless):
    """Third hostile round (#35): the byte budget counted compressed bytes, and the client decoded any number of
    gzip layers: 2 kB of two layers became 1 GiB (5 GB of memory). The client asks for plain replies and refuses a
    compressed one before reading it, streamed or not."""
    from assistant.answer.wire import CompressedReply

    endless.gzip_layers = 2
    chat, cfg = chat_on(endless)
    for call in (lambda: list(chat.stream([HumanMessage("What is KITE?")])),
                 lambda: chat.complete([HumanMessage("Explain the overlap.")])):
        with pytest.raises(Exception) as err:
            call()
        line = explain_llm_error(err.value, cfg)
        assert line == (f"The LLM endpoint {cfg.base_url} sent a compressed reply (Content-Encoding: gzip, gzip) though "
                        "none was asked for; this client reads plain replies only, so it was not read."), line
        assert isinstance(err.value, CompressedReply) or isinstance(err.value.__cause__, CompressedReply)
    assert endless.encodings and set(endless.encodings) == {"identity"}


def test_doctor_reads_an_endless_model_list_within_the_budget(endless):
    """Third hostile round (#35): doctor read GET /v1/models with a plain client: an endless list grew it to 22 GB."""
    from assistant.faces.doctor import _check_llm

    _, cfg = chat_on(endless)
    ok, line = next(_check_llm(cfg, None))
    # Named as the model list it is (it said "the LLM's answer ran past the reply budget").
    assert not ok and line.endswith(f"sent a model list over {reply_byte_limit(cfg):,} bytes: it was cut unread "
                                    "(an endless or broken /models reply)")
    assert endless.dropped.wait(10)


def test_doctor_names_a_streamed_answer_cut_at_the_byte_budget(endless):
    """Fourth hostile round: doctor said "streamed an empty reply" for a stream line that never ended."""
    from assistant.faces.doctor import _check_llm
    from assistant.settings import load_settings

    endless.models_ok = True
    _, cfg = chat_on(endless)
    checks = _check_llm(cfg, load_settings())
    assert next(checks)[0] is True  # the model list
    ok, line = next(checks)
    assert not ok and line.startswith("The LLM's answer ran past the reply budget of") and "empty" not in line


def test_the_system_role_probe_reads_within_the_budget(endless):
    """Third hostile round (#35): the system-role probe (SYSTEM_ROLE=auto, and doctor) read its non-streamed
    replies with a plain client: an endless one reached 5 GB."""
    from assistant.answer import system_role_kept
    from assistant.answer.wire import over_budget

    _, cfg = chat_on(endless)
    with pytest.raises(Exception) as err:
        system_role_kept(cfg)
    assert over_budget(err.value) is not None and over_budget(err.value).limit == reply_byte_limit(cfg)
    assert endless.dropped.wait(10)


def test_a_trickled_model_list_or_probe_reply_is_cut_at_its_timeout_in_all(endless):
    """Fourth hostile round (#35): a model list or a system-role probe reply sent a byte a second kept every
    per-read timeout; doctor and every answer (waiting on the probe's lock) were still waiting past 100 s."""
    import time

    from assistant.answer.llm import LLMDeadlineError
    from assistant.answer.system_role import _system_kept, fold_system
    from assistant.faces.doctor import _check_llm

    endless.trickle = True
    _, cfg = chat_on(endless)
    cfg = cfg.model_copy(update={"timeout": 1.0, "first_token_timeout": 2.0, "system_role": "auto"})
    start = time.monotonic()
    ok, line = next(_check_llm(cfg, None))
    assert not ok and line.endswith("sent no whole model list within 1 s (the timeout, PAPER_ASSISTANT_LLM__TIMEOUT)")
    assert time.monotonic() - start < 10
    start = time.monotonic()
    assert fold_system(cfg) is False  # the system message is kept (the answer goes on)
    assert _system_kept[(cfg.base_url, cfg.model)] is None and time.monotonic() - start < 10
    start = time.monotonic()
    assert fold_system(cfg) is False and time.monotonic() - start < 0.1  # not asked again: no wait
    _system_kept.pop((cfg.base_url, cfg.model))
    from assistant.answer.wire import call_within

    with pytest.raises(LLMDeadlineError):
        call_within(0.5, lambda: time.sleep(5))


def test_a_reply_past_its_deadline_is_dropped_not_read_on(endless):
    """Fifth hostile round (#35): a stream trickled a byte a second was given up at the first-token deadline, but its
    reader thread read on, its connection open, until the byte budget (about 24 days): 36 questions, 36 connections."""
    from assistant.answer.llm import LLMDeadlineError

    endless.trickle = True
    chat, cfg = chat_on(endless)
    chat = OpenAIChat(cfg.model_copy(update={"first_token_timeout": 1.0, "timeout": 1.0}))
    with pytest.raises(LLMDeadlineError):
        list(chat.stream([HumanMessage("What is KITE?")]))
    assert endless.dropped.wait(10)  # the client closed the connection within a few pieces


def test_the_numbers_the_byte_budget_grows_with_are_bounded():
    """Third hostile round (#35): reply_chars_per_token had no upper bound; at 1e9 the byte budget was about 3 TB."""
    from pydantic import ValidationError

    for bad in ({"reply_chars_per_token": 1e9}, {"max_tokens": 10**7}):
        with pytest.raises(ValidationError):
            LLMSettings(model="m", **bad)
    most = LLMSettings(model="m", max_tokens=65_536, reply_chars_per_token=32)
    assert reply_byte_limit(most) < 300 * 2**20  # the largest budget the settings allow: under 300 MiB


class Redirecting(BaseHTTPRequestHandler):
    """``/v1/…`` answers 307 to ``self.server.target`` + the same path; ``/same/v1/…`` 307 to ``/v1/…`` on this
    server; anything else (the target of a same-origin redirect) a one-piece stream. Records each path."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _answer(self) -> None:
        self.server.paths.append(self.path)
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path.startswith(("/v1/", "/same/")):
            to = self.path.replace("/same/v1/", "/ok/v1/") if self.path.startswith("/same/") else \
                self.server.target + self.path
            self.send_response(307)
            self.send_header("Location", to)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        body = (b'data: {"choices": [{"index": 0, "delta": {"content": "Fine [1]."}, "finish_reason": "stop"}]}\n\n'
                b"data: [DONE]\n\n")
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer


def test_a_redirect_to_another_origin_is_not_followed_and_one_within_the_endpoint_is():
    """Fourth hostile round (#35): a 307 to another host was followed and the question with its abstracts
    POSTed there (twice); doctor showed that host's model list as the endpoint's."""
    from assistant.faces.doctor import _check_llm

    elsewhere = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    elsewhere.paths, elsewhere.target = [], ""
    home = ThreadingHTTPServer(("127.0.0.1", 0), Redirecting)
    home.paths, home.target = [], f"http://127.0.0.1:{elsewhere.server_address[1]}/landed"
    for server in (elsewhere, home):
        threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        chat, cfg = chat_on(home)
        with pytest.raises(Exception) as err:
            list(chat.stream([HumanMessage("What is KITE?")]))
        line = explain_llm_error(err.value, cfg)
        assert line == (f"The LLM endpoint {cfg.base_url} redirected the request to another address "
                        f"(http://127.0.0.1:{elsewhere.server_address[1]}); it was not followed, and nothing was "
                        "sent there: if that is the server meant, set OPENAI_BASE_URL to it.")
        ok, line = next(_check_llm(cfg, None))
        assert not ok and "redirected the request to another address" in line
        assert elsewhere.paths == [] and home.paths == ["/v1/chat/completions", "/v1/models"]
        home.target = "http://[::ffff:127.0.0.1]:9/landed"  # an IPv6 address: named in brackets, a URL that parses
        with pytest.raises(Exception) as err:
            list(chat.stream([HumanMessage("What is KITE?")]))
        assert "another address (http://[::ffff:127.0.0.1]:9);" in explain_llm_error(err.value, cfg)
        del home.paths[-1]
        same = OpenAIChat(cfg.model_copy(update={"base_url": f"http://127.0.0.1:{home.server_address[1]}/same/v1"}))
        assert "".join(same.stream([HumanMessage("What is KITE?")])) == "Fine [1]."
        assert home.paths[-2:] == ["/same/v1/chat/completions", "/ok/v1/chat/completions"]
    finally:
        for server in (elsewhere, home):
            server.shutdown()
            server.server_close()


class HugeHeaders(BaseHTTPRequestHandler):
    """Answers every request with a 200 whose one header is 1 MiB long (h11 refuses headers past 64 KiB)."""

    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 - stdlib naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("X-Pad", "a" * (1 << 20))
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_a_running_server_whose_reply_cannot_be_read_is_not_called_unreachable():
    """Fourth hostile round: oversized headers (and a redirect loop) said "Cannot connect … is the server
    running?" while it ran."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), HugeHeaders)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        chat, cfg = chat_on(server)
        with pytest.raises(Exception) as err:
            list(chat.stream([HumanMessage("What is KITE?")]))
        assert explain_llm_error(err.value, cfg) == (f"The LLM endpoint {cfg.base_url} sent a reply this client "
                                                     "could not read (RemoteProtocolError).")
    finally:
        server.shutdown()
        server.server_close()


def test_a_host_name_with_an_over_long_label_is_named_before_anything_is_sent():
    """An eleventh hostile round: a base URL whose host had a 70-character label was "sent a reply this client could
    not read (UnicodeError)", though nothing was sent (the name cannot be encoded, so no lookup is made)."""
    cfg = LLMSettings(base_url=f"http://{'a' * 70}.example:9/v1", model="m", max_retries=0, timeout=5,
                      first_token_timeout=5)
    with pytest.raises(UnicodeError) as err:
        list(OpenAIChat(cfg).stream([HumanMessage("What is KITE?")]))
    assert explain_llm_error(err.value, cfg) == (
        f"The LLM endpoint's host name in {cfg.base_url} is no valid host name (each part between dots must be 1 to "
        "63 characters): check OPENAI_BASE_URL.")
