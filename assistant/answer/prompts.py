"""Prompt templates, loaded from the ``prompts/`` folder (plain text files, LangChain f-string templates)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # LangChain's prompts load on first use: an answer without an LLM never needs them
    from langchain_core.prompts import ChatPromptTemplate, PromptTemplate


@lru_cache(maxsize=8)
def _read(folder: str, name: str) -> str:
    path = Path(folder) / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(f"prompt file missing: {path}") from exc


def answer_prompt(folder: Path) -> ChatPromptTemplate:
    """System + user messages; variables ``context`` and ``question``. Raises FileNotFoundError."""
    from langchain_core.prompts import ChatPromptTemplate

    return ChatPromptTemplate.from_messages(
        [("system", _read(str(folder), "answer_system.txt")), ("human", _read(str(folder), "answer_user.txt"))]
    )


def condense_prompt(folder: Path) -> PromptTemplate:
    """Follow-up → standalone question; variables ``history`` and ``question``."""
    from langchain_core.prompts import PromptTemplate

    return PromptTemplate.from_template(_read(str(folder), "condense.txt"))


def related_prompt(folder: Path) -> ChatPromptTemplate:
    """Related work explained: system + user messages; variables ``query``, ``paper`` and ``label``.
    Raises FileNotFoundError."""
    from langchain_core.prompts import ChatPromptTemplate

    return ChatPromptTemplate.from_messages(
        [("system", _read(str(folder), "related_system.txt")), ("human", _read(str(folder), "related_user.txt"))]
    )


def compare_prompt(folder: Path) -> ChatPromptTemplate:
    """Papers compared: system + user messages; variables ``papers`` (each paper's sentences by facet, numbered
    as its source) and ``question``. Raises FileNotFoundError."""
    from langchain_core.prompts import ChatPromptTemplate

    return ChatPromptTemplate.from_messages(
        [("system", _read(str(folder), "compare_system.txt")), ("human", _read(str(folder), "compare_user.txt"))]
    )
