"""Chroma server mode: a real `chroma run` on 127.0.0.1, used through ``StoreSettings.host/port``.

Ingest, ask (in-process and through the CLI), related work, eval and the Gradio UI run against the
server exactly as against the embedded store; the BM25 index cached in the local index folder is
rebuilt from the server when another writer changes it; a client/server version mismatch and an
unreachable server are reported in one clear line.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.conftest import CORPUS, DEV, ROOT, free_port, needs_shared

pytestmark = pytest.mark.server

OMNIMOE_Q = "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?"
OMNIMOE = "000_12a0d7b1c5c902c5#13"


@pytest.fixture(scope="session")
def server_settings(chroma_server, tmp_path_factory):
    from assistant.settings import load_settings

    host, port = chroma_server
    return load_settings(index=tmp_path_factory.mktemp("server-local"), corpus=[CORPUS],
                         store={"host": host, "port": port, "collection": "srv_abstracts"})


@pytest.fixture(scope="session")
def server_index(server_settings, encoder):
    from assistant.answer.service import get_index
    from vectorstore.ingest import ingest

    idx = get_index(server_settings, create=True)
    report = ingest([CORPUS], idx)
    assert report.added == 38
    return idx


@pytest.fixture(scope="session")
def server_assistant(server_settings, server_index):
    from assistant.answer.service import get_assistant

    return get_assistant(server_settings)


def test_ingest_lands_on_the_server_not_on_disk(chroma_server, server_index, server_settings):
    import chromadb
    from chromadb.config import Settings as CS

    host, port = chroma_server
    direct = chromadb.HttpClient(host=host, port=port, settings=CS(anonymized_telemetry=False))
    assert direct.get_collection("srv_abstracts_papers").count() == 38
    assert direct.get_collection("srv_abstracts_chunks").count() == server_index.store.counts()[1]
    assert not (server_settings.index / "chroma").exists()  # nothing embedded on local disk
    from vectorstore.ingest import ingest

    again = ingest([CORPUS], server_index)
    assert (again.added, again.unchanged) == (0, 38)


def test_ask_and_related_against_the_server(server_assistant):
    from assistant.research.related import related_work

    ans = server_assistant.ask(OMNIMOE_Q)
    assert ans.sources[0].paper_id == OMNIMOE and "6.7ms" in ans.sources[0].sentence
    items = related_work(server_assistant.retriever, server_assistant.sentences, paper_id=OMNIMOE, k=5, bar=0.0)
    assert len(items) == 5 and OMNIMOE not in [i.paper.id for i in items]


def test_cli_ask_with_server_settings_from_the_environment(chroma_server, server_index, server_settings):
    host, port = chroma_server
    env = dict(os.environ, PAPER_ASSISTANT_STORE__HOST=host, PAPER_ASSISTANT_STORE__PORT=str(port),
               PAPER_ASSISTANT_STORE__COLLECTION="srv_abstracts")
    out = subprocess.run([sys.executable, "-m", "assistant", "ask", OMNIMOE_Q, "--json", "--index", str(server_settings.index)],
                         capture_output=True, text=True, cwd=ROOT, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["citations"][0]["paper_id"] == OMNIMOE


def test_eval_matches_the_embedded_store(server_settings, server_index, settings, index, tmp_path):
    from assistant.evaluation.harness import run_eval

    needs_shared(DEV)
    rows = [line for line in DEV.read_text().splitlines() if line.strip()]
    subset = tmp_path / "dev-subset.jsonl"  # every 6th question, all kinds: the full file is eval's job
    subset.write_text("\n".join(rows[::6]) + "\n")
    on_server = run_eval(server_settings, subset)
    embedded = run_eval(settings, subset)
    assert on_server.papers == embedded.papers == 38
    for mode in ("bm25", "dense", "hybrid"):
        assert on_server.ranking[mode]["overall"]["MRR"] == pytest.approx(embedded.ranking[mode]["overall"]["MRR"], abs=1e-6)
    assert on_server.ranking["hybrid"]["overall"]["MRR"] >= 0.8


def test_ui_against_the_server(server_settings, server_assistant):
    import assistant.page as web
    from gradio_client import Client

    cfg = server_settings.model_copy(update={"ui": server_settings.ui.model_copy(update={"port": free_port()})})
    demo = web.build_app(cfg, server_assistant)
    demo.launch(server_name="127.0.0.1", server_port=cfg.ui.port, prevent_thread_lock=True, share=False)
    try:
        data = Client(f"http://127.0.0.1:{cfg.ui.port}/", verbose=False).predict(OMNIMOE_Q, api_name="/ask")
        assert data["citations"][0]["paper_id"] == OMNIMOE
    finally:
        demo.close()


def test_bm25_cache_is_local_and_rebuilt_when_the_server_changes(chroma_server, server_settings, server_index, encoder, tmp_path):
    """A second machine (its own local folder) builds BM25 from the server, and rebuilds it after another writer's ingest."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    host, port = chroma_server
    other = open_index(tmp_path / "other-machine", encoder, collection="srv_abstracts", create=False, host=host, port=port)
    lex = other.lexical()
    assert len(lex.chunk_ids) == server_index.store.counts()[1]
    assert (other.lexical_dir / "ids.json").exists()
    extra = tmp_path / "extra.txt"
    extra.write_text("ICML 2026\n\nWe introduce Zorblax, a quokka-inspired optimizer for sparse transformers.\n")
    ingest([extra], server_index)  # the first machine writes
    time.sleep(1.1)  # a reader re-reads the store's state at most once a second
    hits = other.lexical().search("quokka zorblax", 3)
    assert hits and other.lexical().paper_ids[hits[0][0]] == "extra#1"
    server_index.store.delete_papers(["extra#1"])
    server_index.store.bump_generation()


class _OldChroma(BaseHTTPRequestHandler):
    """Speaks like a chromadb 0.4 server: only /api/v1."""

    def do_GET(self):  # noqa: N802
        if self.path == "/api/v1/version":
            body = b'"0.4.24"'
            self.send_response(200)
        else:
            body = b'{"detail":"Not Found"}'
            self.send_response(404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def test_client_server_version_mismatch_is_reported_clearly(tmp_path):
    from vectorstore.store import StoreError, make_client

    server = ThreadingHTTPServer(("127.0.0.1", 0), _OldChroma)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(StoreError) as err:
            make_client(tmp_path, host="127.0.0.1", port=server.server_address[1])
    finally:
        server.shutdown()
    msg = str(err.value)
    assert "version mismatch" in msg and "0.4.24" in msg and "chromadb 1." in msg


def test_unreachable_server_is_one_clear_error(tmp_path):
    from vectorstore.store import StoreError, make_client

    port = free_port()
    with pytest.raises(StoreError, match=f"cannot reach Chroma server at 127.0.0.1:{port}"):
        make_client(tmp_path, host="127.0.0.1", port=port)
