"""The MCP server (`paper-assistant mcp`), driven as a subprocess by the SDK's own client: over stdio
(the way desktop clients launch it) and over streamable HTTP on 127.0.0.1; plus the raw stdio stream,
to prove stdout carries nothing but protocol messages."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import Client, StdioServerParameters

from tests.conftest import ROOT, free_port

OMNIMOE = "000_12a0d7b1c5c902c5#13"
SYPE = "000_12a0d7b1c5c902c5#15"
PERSONALITY = ["000_12a0d7b1c5c902c5#14", "000_12a0d7b1c5c902c5#10"]
TOOLS = {"search", "ask", "related", "list_papers", "get_paper"}


def server_args(index_dir: Path, *extra: str) -> list[str]:
    # `-m assistant` from the checkout: this checkout's code, whatever the venv's editable install points at.
    return ["-m", "assistant", "mcp", "--index", str(index_dir), "--no-ingest", *extra]


@pytest.fixture(scope="module")
def stdio_client(index, index_dir, tmp_path_factory):
    """One server subprocess over stdio for the module, with the SDK client's default (filtered)
    environment: no PYTHONPATH, no HF_HUB_OFFLINE, as a desktop client would start it."""
    errlog = open(tmp_path_factory.mktemp("mcp") / "stderr.log", "w+")
    params = StdioServerParameters(command=sys.executable, args=server_args(index_dir), cwd=str(ROOT))
    with start_blocking_portal() as portal:
        with portal.wrap_async_context_manager(Client(params, read_timeout_seconds=300)) as client:
            yield portal, client, errlog
    errlog.close()


def call(stdio_client, tool: str, args: dict):
    portal, client, _ = stdio_client
    return portal.call(lambda: client.call_tool(tool, args))


def ok(result) -> dict:
    assert not result.is_error, result.content[0].text
    # The same record as JSON text, for clients that read only the content.
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def error_text(result) -> str:
    assert result.is_error
    return result.content[0].text


def test_lists_the_five_tools_with_typed_schemas(stdio_client):
    portal, client, _ = stdio_client
    tools = {t.name: t for t in portal.call(client.list_tools).tools}
    assert set(tools) == TOOLS
    search = tools["search"].input_schema
    assert search["required"] == ["query"]
    assert search["properties"]["k"]["minimum"] == 1 and search["properties"]["k"]["type"] == "integer"
    assert tools["get_paper"].input_schema["required"] == ["paper_id"]
    assert tools["ask"].output_schema["properties"]["verdict"]["enum"] == ["answered", "closest match", "nothing found"]
    assert all(t.annotations.read_only_hint for t in tools.values())


def test_search_ranks_the_paper_first_with_its_best_sentence(stdio_client):
    out = ok(call(stdio_client, "search", {"query": "fine-grained mixture-of-experts layer faster than PEER", "k": 3}))
    assert out["count"] == 3 and [p["rank"] for p in out["papers"]] == [1, 2, 3]
    top = out["papers"][0]
    assert top["paper_id"] == OMNIMOE and top["label"] == "OmniMoE"
    assert top["venue"] == "ICML" and top["year"] == 2026
    assert out["verdict"] == "answered"
    assert out["papers"][0]["score"] > out["papers"][1]["score"]


@pytest.mark.xfail(strict=True, reason="known miss of the learned evidence ranker (v2 and v3): for the search-box query "
                   "'… layer faster than PEER' it quotes OmniMoE's accuracy sentence ('outperforming … PEER "
                   "baselines'), not the 10.9x latency one the hand rules' figure bonus chose")
def test_search_quotes_the_speedup_sentence(stdio_client):
    out = ok(call(stdio_client, "search", {"query": "fine-grained mixture-of-experts layer faster than PEER", "k": 3}))
    assert "6.7ms" in out["papers"][0]["sentence"]


def test_search_filters_and_their_errors(stdio_client):
    out = ok(call(stdio_client, "search", {"query": "mixture of experts", "source": "004_9268713af81d21d3", "k": 5}))
    assert out["papers"] and all(p["paper_id"].startswith("004_9268713af81d21d3#") for p in out["papers"])
    assert ok(call(stdio_client, "search", {"query": "mixture of experts", "venue": "icml", "year": 2026}))["count"] == 5
    msg = error_text(call(stdio_client, "search", {"query": "mixture of experts", "venue": "NeurIPS"}))
    assert "no indexed paper has venue 'NeurIPS'; the index has: ICML" in msg
    msg = error_text(call(stdio_client, "search", {"query": "mixture of experts", "year": 1999}))
    assert "no indexed paper has year 1999" in msg and "2026" in msg


def test_ask_answers_with_citations_and_verdicts(stdio_client):
    out = ok(call(stdio_client, "ask", {"question": "What is SyPE?"}))
    assert out["verdict"] == "answered" and out["mode"] == "extractive"
    assert out["citations"][0]["paper_id"] == SYPE and out["citations"][0]["n"] == 1
    assert "Symplectic Positional Embeddings" in out["citations"][0]["sentence"]
    assert "[1]" in out["answer"] and SYPE not in out["also_retrieved"]
    none = ok(call(stdio_client, "ask", {"question": "Which papers improve protein structure prediction?"}))
    assert none["verdict"] == "nothing found" and none["citations"] == []
    assert out["caveat"] == ""
    detail = ok(call(stdio_client, "ask", {"question": "What learning rate did OmniMoE use?"}))
    # OmniMoE is found and named, but its abstract gives no learning rate: a closest match that says so.
    assert detail["citations"][0]["paper_id"] == OMNIMOE and detail["verdict"] == "closest match"
    assert detail["note"] == "The question names OmniMoE, but its abstract does not appear to give this."
    assert detail["caveat"].startswith("Abstracts rarely give exact hyper-parameters: this answer is limited to")
    assert detail["caveat"].endswith("see the full text of the cited paper: [1] OmniMoE.")


def test_related_by_text_and_by_id(stdio_client):
    text = ("We ask whether the personality that chat models claim on questionnaires predicts how they play "
            "economic games such as the dictator game. We also steer internal activations along trait directions.")
    out = ok(call(stdio_client, "related", {"text": text, "k": 5}))
    assert out["count"] == len(out["papers"]) >= 1 and out["papers"][0]["paper_id"] == PERSONALITY[0]
    assert out["count"] + out["below_bar"] <= 5
    top = out["papers"][0]
    assert top["explanation"] and top["explanation"][0]["query_sentence"] in text
    assert set(top["differs"]) == {"query_only", "paper_only"}
    everything = ok(call(stdio_client, "related", {"text": text, "k": 5, "min_similarity": 0}))
    assert everything["count"] == 5 and everything["below_bar"] == 0
    assert {p["paper_id"] for p in everything["papers"]} > {p["paper_id"] for p in out["papers"]}
    by_id = ok(call(stdio_client, "related", {"paper_id": OMNIMOE, "k": 3}))
    assert by_id["query"] == OMNIMOE and OMNIMOE not in [p["paper_id"] for p in by_id["papers"]]
    assert by_id["nearest_only"] and by_id["count"] == 3  # none clears the bar: the nearest, marked below it
    assert not out["nearest_only"]
    assert "no indexed paper has id 'nope#1'" in error_text(call(stdio_client, "related", {"paper_id": "nope#1"}))
    assert "give either a text or a paper id" in error_text(call(stdio_client, "related", {}))


def test_list_papers_gives_every_match_and_the_count(stdio_client):
    out = ok(call(stdio_client, "list_papers", {"topic": "Which papers study personality in large language models?"}))
    assert out["count"] == 2 and [p["paper_id"] for p in out["papers"]] == PERSONALITY
    assert out["topic"] == "study personality in large language models" and "bar" in out["note"]
    assert all(p["sentence"] for p in out["papers"])


def test_search_and_list_papers_say_a_french_query_is_matched_as_english(stdio_client):
    """Second hostile round (#35, F10): the tools gave no word that questions are matched in English."""
    from assistant.question import FOREIGN_NOTE

    assert FOREIGN_NOTE in ok(call(stdio_client, "search", {"query": "Comment accélérer le mixture-of-experts ?"}))["note"]
    assert FOREIGN_NOTE in ok(call(stdio_client, "list_papers", {"topic": "Quels articles étudient les modèles de diffusion ?"}))["note"]
    assert FOREIGN_NOTE not in ok(call(stdio_client, "search", {"query": "mixture-of-experts speedup"}))["note"]


def test_get_paper_returns_the_full_record(stdio_client):
    out = ok(call(stdio_client, "get_paper", {"paper_id": OMNIMOE}))
    assert out["id"] == OMNIMOE and out["label"] == "OmniMoE" and out["source"] == "000_12a0d7b1c5c902c5.txt"
    assert out["abstract"].endswith(".") and "PEER" in out["abstract"] and len(out["abstract"]) > 500
    msg = error_text(call(stdio_client, "get_paper", {"paper_id": OMNIMOE + "3"}))
    assert f"no indexed paper has id '{OMNIMOE}3'; did you mean {OMNIMOE}" in msg


def test_bad_input_gets_clear_errors(stdio_client):
    assert "the question is empty" in error_text(call(stdio_client, "search", {"query": "   "}))
    assert "the question is empty" in error_text(call(stdio_client, "ask", {"question": ""}))
    assert "greater than or equal to 1" in error_text(call(stdio_client, "search", {"query": "MoE", "k": 0}))
    assert "query" in error_text(call(stdio_client, "search", {}))  # the missing argument is named
    # The server is still answering after the errors.
    assert ok(call(stdio_client, "get_paper", {"paper_id": SYPE}))["label"] == "SyPE"


def test_arguments_that_fail_the_schema_get_one_line_naming_the_field(stdio_client):
    """Second hostile round (#35, F20): the SDK answered pydantic's report, four lines and a link per error."""
    msg = error_text(call(stdio_client, "search", {"query": "moe", "k": 1000}))
    assert msg == "invalid arguments for search: k: input should be less than or equal to 100 (got 1000)"
    msg = error_text(call(stdio_client, "related", {"k": 0, "explain": 99}))
    assert "\n" not in msg and msg.startswith("invalid arguments for related: ") and "k: " in msg and "explain: " in msg
    assert error_text(call(stdio_client, "get_paper", {})) == "invalid arguments for get_paper: paper_id: field required"
    # Fourth hostile round: `k: true` was read as 1.
    assert error_text(call(stdio_client, "search", {"query": "moe", "k": True})).startswith(
        "invalid arguments for search: k: input should be a valid integer")
    # Third hostile round: a 100,000-character venue, source or id came back whole in the error naming it.
    for tool, args in (("search", {"query": "moe", "venue": "v" * 100_000}), ("get_paper", {"paper_id": "p" * 100_000}),
                       ("list_papers", {"topic": "moe", "source": "s" * 100_000})):
        msg = error_text(call(stdio_client, tool, args))
        assert len(msg) < 300 and "should have at most 500 characters" in msg, msg[:300]


def test_index_resource_lists_papers_venues_and_years(stdio_client):
    portal, client, _ = stdio_client
    resources = portal.call(client.list_resources).resources
    assert [str(r.uri) for r in resources] == ["paper-assistant://index"]
    data = json.loads(portal.call(lambda: client.read_resource("paper-assistant://index")).contents[0].text)
    assert data["papers"] == 38 and data["venues"] == {"ICML": 38} and data["years"] == {"2026": 38}
    assert data["sources"] == {"000_12a0d7b1c5c902c5.txt": 19, "004_9268713af81d21d3.txt": 19}
    ids = [p["id"] for p in data["listed"]]
    assert len(ids) == 38 and ids[:3] == ["000_12a0d7b1c5c902c5#1", "000_12a0d7b1c5c902c5#2", "000_12a0d7b1c5c902c5#3"]


def test_streamable_http_on_loopback(index, index_dir, tmp_path):
    port = free_port()
    log = open(tmp_path / "stderr.log", "w+")
    proc = subprocess.Popen([sys.executable, *server_args(index_dir, "--http", "--port", str(port))], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=log, env={**os.environ, "OPENAI_API_KEY": KEY})
    try:
        deadline = time.monotonic() + 120
        while f"127.0.0.1:{port}/mcp" not in (tmp_path / "stderr.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr.log").read_text()
            time.sleep(0.2)

        async def session():
            for _ in range(100):  # the line above is printed just before uvicorn binds
                try:
                    async with Client(f"http://127.0.0.1:{port}/mcp", read_timeout_seconds=300) as client:
                        tools = {t.name for t in (await client.list_tools()).tools}
                        # The configured key typed as a filter or a tool's name is masked in the error (round nine).
                        errors = [await client.call_tool("search", {"query": "MoE", "venue": KEY})]
                        try:
                            errors.append(await client.call_tool(KEY, {}))
                        except Exception as exc:  # noqa: BLE001 - a JSON-RPC error, as the client raises it
                            errors.append(exc)
                        return tools, await client.call_tool("search", {"query": "What is OmniMoE?", "k": 2}), errors

                except Exception:
                    if proc.poll() is not None:
                        raise
                    time.sleep(0.2)
            raise AssertionError("the HTTP server never answered")

        with start_blocking_portal() as portal:
            tools, result, errors = portal.call(session)
        assert tools == TOOLS
        shown = [e.content[0].text if hasattr(e, "content") else str(e) for e in errors]
        assert all(KEY not in text and "***" in text for text in shown), shown
        assert "no indexed paper has venue" in shown[0]
        assert ok(result)["papers"][0]["paper_id"] == OMNIMOE
        # A web page elsewhere cannot reach it through DNS rebinding: a foreign Host header is refused.
        import urllib.error
        import urllib.request

        req = urllib.request.Request(f"http://127.0.0.1:{port}/mcp", data=b"{}", method="POST",
                                     headers={"Host": "attacker.example", "Content-Type": "application/json",
                                              "Accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(req, timeout=30)
        assert refused.value.code == 421
        # A request whose id is no string or integer is answered -32600 with id null, as on stdio (it was
        # read as a notification: 202 and no reply, so the client waited forever).
        for bad in (True, {"a": 1}, 1.5, None):
            req = urllib.request.Request(
                f"http://127.0.0.1:{port}/mcp", method="POST",
                data=json.dumps({"jsonrpc": "2.0", "id": bad, "method": "tools/list"}).encode(),
                headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
            with pytest.raises(urllib.error.HTTPError) as answered:
                urllib.request.urlopen(req, timeout=30)
            assert answered.value.code == 400
            assert json.loads(answered.value.read()) == {"jsonrpc": "2.0", "id": None, "error": {
                "code": -32600, "message": "Invalid request: a request's id must be a string or an integer"}}
        # A batch was answered with pydantic's report of four validation errors (a hostile round): -32600, as stdio.
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp", method="POST",
            data=json.dumps([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as answered:
            urllib.request.urlopen(req, timeout=30)
        assert answered.value.code == 400 and json.loads(answered.value.read())["error"] == {
            "code": -32600, "message": "Invalid request: not a JSON-RPC 2.0 request of this protocol (batches are not "
                                       "supported)"}
        # No message of this protocol: the SDK answered pydantic's report, each value shortened to its first and last
        # 24 characters, so a key glued to other text showed 18 of each (a twelfth hostile round). One line, as stdio.
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/mcp", method="POST",
            data=json.dumps({"jsonrpc": f"aaaaaa{KEY}bbbbb", "id": 7, "method": "ping"}).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json, text/event-stream"})
        with pytest.raises(urllib.error.HTTPError) as answered:
            urllib.request.urlopen(req, timeout=30)
        assert answered.value.code == 400 and json.loads(answered.value.read())["error"] == {
            "code": -32600, "message": "Invalid request: not a JSON-RPC 2.0 request of this protocol"}
        # A second server on the same port: one clear line, not a traceback.
        clash = subprocess.run([sys.executable, *server_args(index_dir, "--http", "--port", str(port))], cwd=ROOT,
                               capture_output=True, text=True, timeout=120)
        assert clash.returncode == 2 and "Traceback" not in clash.stderr
        assert f"error: cannot serve MCP on 127.0.0.1:{port}" in clash.stderr and "--port" in clash.stderr
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
        log.close()
    assert proc.stdout.read() == b""  # HTTP mode: nothing on stdout either


def _rpc(proc, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_raw_stdio_carries_only_protocol_while_it_ingests(tmp_path):
    """The handshake a pre-2026 desktop client does, by hand, on an empty index: `initialize` is answered
    while the bundled-corpus ingest (model load, embedding) runs in the background, a tool call waits
    for it, and every byte on stdout is a JSON-RPC message."""
    corpus = tmp_path / "mini.txt"
    corpus.write_text("ICML 2026\n\nWe introduce FooNet, a network for graph coloring with 3x speed.\n\n"
                      "We study protein folding with diffusion models.\n\nWe present BarBench, a benchmark for graph coloring.\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HF_", "TRANSFORMERS_"))}
    env.update(PAPER_ASSISTANT_CORPUS=str(corpus), PAPER_ASSISTANT_INDEX=str(tmp_path / "idx"))
    stderr = open(tmp_path / "stderr.log", "w+")
    proc = subprocess.Popen([sys.executable, "-m", "assistant", "mcp"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=stderr, env=env)
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "raw-test", "version": "0"}}})
        init = json.loads(proc.stdout.readline())
        assert init["id"] == 1 and init["result"]["serverInfo"]["name"] == "paper-assistant"
        assert "tools" in init["result"]["capabilities"] and "resources" in init["result"]["capabilities"]
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "list_papers", "arguments": {"topic": "Which papers are about graph coloring?"}}})
        _rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "get_paper", "arguments": {"paper_id": "mini#9"}}})
        replies = {}
        while len(replies) < 2:
            line = proc.stdout.readline()
            assert line, (tmp_path / "stderr.log").read_text()[-2000:]
            msg = json.loads(line)  # anything but JSON here would break a client
            assert msg["jsonrpc"] == "2.0"
            if "id" in msg:
                replies[msg["id"]] = msg
        listed = replies[2]["result"]["structuredContent"]
        assert {p["paper_id"] for p in listed["papers"]} == {"mini#1", "mini#3"}
        assert replies[3]["result"]["isError"] is True
        assert "no indexed paper has id 'mini#9'" in replies[3]["result"]["content"][0]["text"]
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
        stderr.close()
    assert proc.returncode == 0
    rest = proc.stdout.read().decode()
    assert all(json.loads(line)["jsonrpc"] == "2.0" for line in rest.splitlines() if line.strip())
    assert "Traceback" not in (tmp_path / "stderr.log").read_text()


BAD_LINES = [  # (line as sent, the error's code, its id)
    (rb'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"query":"moe \ud800 layer"}}}',
     -32602, 1),
    (rb'{"jsonrpc":"2.0","id":"q2","method":"tools/call","params":{"name":"search","arguments":{"qu\udc00ery":"x"}}}',
     -32602, "q2"),
    (rb'{"jsonrpc":"2.0","id":"\ud800","method":"tools/call","params":{"name":"get_paper","arguments":{"paper_id":"x"}}}',
     -32602, None),
    (b'{"jsonrpc":"2.0","id":4,"method":', -32700, None),
    (b'[1, 2', -32700, None),
    (b'42', -32600, None),
    (b'{"id": 7, "method": "tools/list"}', -32600, 7),
    # Eighth break-it run (#117): brackets nested hundreds deep ended the server (RecursionError re-read).
    (b'{"jsonrpc":"2.0","id":9,"method":"tools/list","params":' + b"[" * 600 + b"]" * 600 + b"}", -32700, None),
    (b"[" * 1000 + b"]" * 1000, -32700, None),
]


class RawStdio:
    """A server subprocess over stdio driven by hand (the lines a client may send, byte for byte), its
    replies read from a thread so a missing one fails after ``wait`` seconds instead of hanging."""

    def __init__(self, index_dir: Path, log: Path, env: dict | None = None):
        import queue
        import threading

        self.log = log
        self.proc = subprocess.Popen([sys.executable, *server_args(index_dir)], cwd=ROOT, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=open(log, "w"),
                                     env={**os.environ, **(env or {})})
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=lambda: [self.lines.put(x) for x in iter(self.proc.stdout.readline, b"")],
                         daemon=True).start()

    def send(self, raw: bytes, end: bytes = b"\n") -> None:
        self.proc.stdin.write(raw + end)
        self.proc.stdin.flush()

    def rpc(self, message: dict) -> None:
        _rpc(self.proc, message)

    def reply(self, wait: float = 120) -> dict:
        import queue

        try:
            return json.loads(self.lines.get(timeout=wait))
        except queue.Empty:
            raise AssertionError("no reply: " + self.log.read_text()[-2000:]) from None

    def handshake(self) -> None:
        self.rpc({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                             "clientInfo": {"name": "raw-test", "version": "0"}}})
        assert self.reply()["id"] == 0
        self.rpc({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def get_omnimoe(self, rid) -> None:
        """Asks for OmniMoE's record with id ``rid`` and checks the answer: the server still serves."""
        self.rpc({"jsonrpc": "2.0", "id": rid, "method": "tools/call",
                  "params": {"name": "get_paper", "arguments": {"paper_id": OMNIMOE}}})
        got = self.reply()
        assert got["id"] == rid and got["result"]["structuredContent"]["label"] == "OmniMoE", got

    def close(self) -> None:
        """Ends the session; the server must exit cleanly, with nothing unanswered and no traceback."""
        self.proc.stdin.close()
        self.proc.wait(timeout=60)
        assert self.proc.returncode == 0 and self.lines.empty()
        assert "Traceback" not in self.log.read_text()


@pytest.fixture
def raw_stdio(index, index_dir, tmp_path):
    raw = RawStdio(index_dir, tmp_path / "stderr.log")
    try:
        raw.handshake()
        yield raw
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()


def test_raw_stdio_answers_every_unreadable_line_and_keeps_serving(raw_stdio):
    """Seventh break-it run (#156-#160): a request whose string arguments held a lone surrogate escape
    ("\ud800"), or a line that was no JSON, got no reply at all (the SDK logs what it cannot parse), so a
    client waited forever. Each gets a JSON-RPC error now, with the request's id where it can be read, and
    the server answers the next request; a notification and a blank line get nothing."""
    raw = raw_stdio
    raw.send(rb'{"jsonrpc":"2.0","method":"notifications/\ud800"}')  # no reply due: nothing comes
    raw.send(b"")
    for n, (line, code, pid) in enumerate(BAD_LINES):
        raw.send(line)
        got = raw.reply()
        assert (got["id"], got["error"]["code"]) == (pid, code), (line, got)
        assert code != -32602 or "lone surrogate escape" in got["error"]["message"]
        raw.get_omnimoe(100 + n)
    raw.close()


def test_raw_stdio_answers_a_request_whose_id_is_no_string_or_integer(raw_stdio):
    """Hostile round (#35, 11): a request whose id was null, an object, a list, a fraction or a boolean got no
    reply at all (the SDK read it as a notification), so the client waited forever. JSON-RPC 2.0 allows a
    request a string or an integer id: anything else is an invalid request, answered with id null."""
    raw = raw_stdio
    for n, bad in enumerate([None, {"n": 1}, [1], 1.5, 2.0, True, False]):
        raw.rpc({"jsonrpc": "2.0", "id": bad, "method": "tools/list"})
        got = raw.reply()
        assert got == {"jsonrpc": "2.0", "id": None, "error": {
            "code": -32600, "message": "Invalid request: a request's id must be a string or an integer"}}, (bad, got)
        raw.get_omnimoe(f"ok{n}")
    raw.rpc({"jsonrpc": "2.0", "id": -7, "method": "tools/list"})  # integers and strings stay ids
    assert raw.reply()["id"] == -7
    raw.close()


KEY = "sk-hostile9-Zq7Wm2Xc4Vb8Nk3L"


def test_raw_stdio_masks_the_configured_key_in_every_error_it_sends(index, index_dir, tmp_path):
    """Ninth hostile round: the user's own key typed into a tool's argument, a tool's name or a method came back
    verbatim in the error naming it ("no indexed paper has venue …", "Unknown tool: …", pydantic's report).
    Every error reply is masked as it leaves; the ids a client matches replies by are not."""
    raw = RawStdio(index_dir, tmp_path / "stderr.log", env={"OPENAI_API_KEY": KEY})
    try:
        raw.handshake()
        sent = [
            {"name": "search", "arguments": {"query": "mixture of experts", "venue": KEY}},  # a user error
            {"name": "search", "arguments": {"query": "mixture of experts", "k": KEY}},  # the schema's error
            {"name": KEY, "arguments": {}},  # an unknown tool
            {"name": "get_paper", "arguments": {"paper_id": f"{KEY}#1"}},  # an unknown paper
        ]
        for n, params in enumerate(sent):
            raw.rpc({"jsonrpc": "2.0", "id": f"k{n}", "method": "tools/call", "params": params})
            got = raw.reply()
            assert got["id"] == f"k{n}" and KEY not in json.dumps(got) and "***" in json.dumps(got), got
            assert got.get("error") or got["result"]["isError"] is True, got
        raw.rpc({"jsonrpc": "2.0", "id": KEY, "method": KEY})  # an unknown method: its id is the client's own
        got = raw.reply()
        assert got["id"] == KEY and got["error"]["code"] == -32601 and KEY not in json.dumps(got["error"]), got
        # A tenth hostile round: prompts/get (the server has none) was error code 0 with a 36-line traceback logged.
        raw.rpc({"jsonrpc": "2.0", "id": "p", "method": "prompts/get", "params": {"name": KEY}})
        got = raw.reply()
        assert got["id"] == "p" and got["error"]["code"] == -32602 and got["error"]["message"] == "Unknown prompt: ***"
        raw.get_omnimoe("still-serving")  # answers are not masked: the record comes back whole
        raw.close()
    finally:
        if raw.proc.poll() is None:
            raw.proc.kill()
    logged = (tmp_path / "stderr.log").read_text()
    assert KEY not in logged and "Traceback" not in logged, logged[-2000:]


def _rss_kib(pid: int) -> int:
    return int(re.search(r"VmRSS:\s+(\d+)", Path(f"/proc/{pid}/status").read_text()).group(1))


def test_raw_stdio_answers_a_line_that_never_ends_at_once_and_reads_it_in_bounded_memory(raw_stdio):
    """Hostile round (#35, F3): a line with no newline was read whole (64 MiB sent: the server held it all,
    and more in copies) and answered only when it ended, if ever. Past MAX_LINE_CHARS it is answered -32700
    at once, the rest is dropped as it arrives, and the next line is served."""
    from assistant.mcp.stdio_lines import MAX_LINE_CHARS

    raw = raw_stdio
    raw.get_omnimoe("warm")  # the model and the index are loaded: what follows is the line's memory only
    before = _rss_kib(raw.proc.pid)
    raw.send(b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search","arguments":{"query":"',
             end=b"")
    for _ in range(64):
        raw.send(b"a" * (1 << 20), end=b"")
    got = raw.reply(wait=60)  # before the line ends
    assert got == {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": (
        f"Parse error: the line is over {MAX_LINE_CHARS:,} characters, the most this server reads; "
        "it was dropped unread")}}
    grown = _rss_kib(raw.proc.pid) - before
    assert grown < 32 * 1024, f"the server grew {grown} KiB reading a 64 MiB line"
    raw.send(b'"}}}')  # the line's end: nothing more is answered for it
    raw.get_omnimoe(6)
    raw.close()


def _readme_config() -> dict:
    text = (ROOT / "docs" / "api.md").read_text()
    block = re.search(r"```json\n(\{\s*\"mcpServers\".*?)```", text, re.S)
    assert block, "docs/api.md has no mcpServers JSON block"
    return json.loads(block.group(1))["mcpServers"]["paper-assistant"]


def test_readme_config_works_as_written(index, index_dir):
    """The documented `mcpServers` entry (docs/api.md), with its placeholder replaced by this checkout's path: the
    absolute entry point, no working directory, the client's filtered environment (plus the index)."""
    cfg = _readme_config()
    command = cfg["command"].replace("/ABSOLUTE/PATH/TO/paper-assistant", str(ROOT))
    assert command == str(ROOT / ".venv" / "bin" / "paper-assistant") and cfg["args"] == ["mcp"]
    assert Path(command).exists(), "no .venv in this checkout: `make setup` creates it (the documented config names it)"
    where = subprocess.run([str(ROOT / ".venv" / "bin" / "python"), "-c", "import assistant; print(assistant.__file__)"],
                           capture_output=True, text=True, cwd="/", env={"PATH": os.environ.get("PATH", "")})
    assert where.stdout.strip().startswith(str(ROOT)), f".venv runs another checkout's code ({where.stdout.strip()})"
    params = StdioServerParameters(command=command, args=cfg["args"], env={"PAPER_ASSISTANT_INDEX": str(index_dir)})

    async def session():
        async with Client(params, read_timeout_seconds=300) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            return tools, await client.call_tool("get_paper", {"paper_id": OMNIMOE})

    with start_blocking_portal() as portal:
        tools, result = portal.call(session)
    assert tools == TOOLS and ok(result)["label"] == "OmniMoE"


def test_the_tools_filter_papers_with_code_and_related_names_its_near_misses(stdio_client, index):
    """has_code keeps exactly the listed papers whose abstract links code; "Which papers release code?" cites
    every such paper of the index; related's near misses are the papers just under its bar (within
    NEAR_WITHIN of it, at most NEAR_MISSES, most similar first), none of them among the related papers."""
    from assistant.research.related_list import NEAR_MISSES, NEAR_WITHIN
    from assistant.settings import RelatedCalibration

    papers = index.store.get_papers(sorted(set(index.lexical().paper_ids)))
    with_code = {pid for pid, p in papers.items() if p.links}
    assert len(with_code) == 9 and len(papers) == 38
    topic = "Which papers are about machine unlearning?"
    coded = ok(call(stdio_client, "list_papers", {"topic": topic, "has_code": True}))
    plain = ok(call(stdio_client, "list_papers", {"topic": topic}))
    coded_ids, plain_ids = ({p["paper_id"] for p in r["papers"]} for r in (coded, plain))
    assert coded["count"] == len(coded_ids) >= 1 and plain_ids - with_code  # the filter has something to drop
    assert coded_ids == plain_ids & with_code
    assert {p["paper_id"] for p in coded["near_misses"]} <= with_code
    asked = ok(call(stdio_client, "ask", {"question": "Which papers release code?"}))
    assert asked["count"] == 9 and {c["paper_id"] for c in asked["citations"]} == with_code
    me = "000_12a0d7b1c5c902c5#6"
    related = ok(call(stdio_client, "related", {"paper_id": me, "k": 10}))
    bar = RelatedCalibration().min_similarity
    near = related["near_misses"]
    assert 1 <= len(near) <= NEAR_MISSES and all(set(n) == {"paper_id", "label", "similarity", "similarity_percent"} for n in near)
    shown = {p["paper_id"] for p in related["papers"]}
    assert not shown & {n["paper_id"] for n in near} and me not in shown | {n["paper_id"] for n in near}
    assert all(p["similarity"] >= bar for p in related["papers"]) and not related["nearest_only"]
    assert all(bar - NEAR_WITHIN <= n["similarity"] < bar for n in near)
    assert [n["similarity"] for n in near] == sorted((n["similarity"] for n in near), reverse=True)
    assert all(n["similarity_percent"] == min(round(100 * n["similarity"]), round(100 * bar) - 1) for n in near)
    assert all(n["label"] == papers[n["paper_id"]].display() for n in near)
