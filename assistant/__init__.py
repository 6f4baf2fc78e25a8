"""Paper Assistant: questions, related work and a chat page over paper abstracts.

The answer path is one package per stage, in the order a question moves through them (:data:`STAGES`).
A package imports from the packages before it (and from :mod:`vectorstore`, ``settings``, ``types`` and
``trace`` here), never from one after it; from another package it imports only the names that package's
``__init__`` exports, never one of its modules."""

from __future__ import annotations

import importlib

import vectorstore.offline  # noqa: F401  first: switches every library's telemetry off (see that module)

STAGES = ("text", "question", "retrieval", "evidence", "relevance", "answer", "research", "learning",
          "evaluation", "faces", "mcp", "page", "cli")
"""The stage packages, in the order data moves: the one place the order is declared (tests/unit/test_layering.py
reads it)."""


def public_face(package: str, exports: dict[str, tuple[str, ...]]):
    """``(__getattr__, __dir__, __all__)`` for a stage package's ``__init__``: ``exports`` maps each of its
    modules to the names it offers other packages (a module's own name offers the module itself, as a
    namespace). A name loads its module on first use, so importing a package costs nothing until a name
    is used (the CLI starts without the answer path: tests/unit/test_startup.py). Raises AttributeError for
    any other name, as a module does."""
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
