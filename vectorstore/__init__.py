"""Load, chunk, embed and store paper abstracts (Chroma + BM25): everything the answer path reads an index
through, in sub-packages by concern, in the order a paper moves through them:

- :mod:`vectorstore.papers`: paper records and the paper files they are loaded from (one loader per format,
  the checks every loader makes of a file's text).
- :mod:`vectorstore.chunks`: sentence-aligned chunks of an abstract, and the sentence embeddings stored with them.
- :mod:`vectorstore.encoding`: the sentence encoder contract, its ONNX and PyTorch backends, the ONNX export.
- :mod:`vectorstore.store`: Chroma (client, chunk store, its reads and queries, the exact-search matrix), the
  BM25 index beside it, the writer's lease and the caches' all-or-nothing folders.
- :mod:`vectorstore.integrity`: cheap looks at an index's own files (SQLite, HNSW, lock file) before Chroma reads them.
- :mod:`vectorstore.ingest`: load → chunk → embed → store runs, their batches, guards and the removal of files.

Modules here: :mod:`~vectorstore.offline` (no library reaches the network), :mod:`~vectorstore.index` (one
opened index: store, BM25, encoder and lock together) and :mod:`~vectorstore.jsonl` (JSONL reading, shared with
question files). Another package imports a sub-package only through the names its ``__init__`` exports
(tests/unit/test_layering.py)."""

from __future__ import annotations

import importlib

from vectorstore import offline  # noqa: F401  first: switches every library's telemetry off (see that module)


def public_face(package: str, exports: dict[str, tuple[str, ...]]):
    """``(__getattr__, __dir__, __all__)`` for a package's ``__init__``: ``exports`` maps each of its
    modules to the names it offers other packages (a module's own name offers the module itself, as a
    namespace). A name loads its module on first use, so importing a package costs nothing until a name
    is used (the CLI starts without the answer path: tests/unit/test_startup.py). Raises AttributeError for
    any other name, as a module does. Used by every package of ``vectorstore`` and ``assistant``."""
    where = {name: module for module, names in exports.items() for name in names}

    def __getattr__(name: str):
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        loaded = importlib.import_module(f"{package}.{module}")
        # Not cached on the package: the module stays the one place a name lives, so replacing it there
        # (a test's monkeypatch, a plugin) is what every later import sees.
        return loaded if name == module else getattr(loaded, name)

    def __dir__() -> list[str]:
        return sorted(where)

    return __getattr__, __dir__, sorted(where)
