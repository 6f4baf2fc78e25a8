"""Load, chunk, embed and store paper abstracts (Chroma + BM25)."""

from vectorstore import offline  # noqa: F401  first: switches every library's telemetry off (see that module)
