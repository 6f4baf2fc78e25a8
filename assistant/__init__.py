"""Paper Assistant: questions, related work and a chat page over paper abstracts.

The answer path is one package per stage, in the order a question moves through them (:data:`STAGES`).
A package imports from the packages before it (and from :mod:`vectorstore`, ``settings``, ``types`` and
``trace`` here), never from one after it; from another package it imports only the names that package's
``__init__`` exports, never one of its modules."""

from __future__ import annotations

import vectorstore.offline  # noqa: F401  first: switches every library's telemetry off (see that module)
from vectorstore import public_face  # noqa: F401  every stage package's __init__ declares its face with it

STAGES = ("text", "question", "retrieval", "evidence", "relevance", "answer", "research", "learning",
          "evaluation", "faces", "mcp", "page", "cli")
"""The stage packages, in the order data moves: the one place the order is declared (tests/unit/test_layering.py
reads it)."""
