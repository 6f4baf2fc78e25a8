"""Prompt templates, loaded from the ``prompts/`` folder (plain text files, LangChain f-string templates)."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from langchain_core.prompts import ChatPromptTemplate, PromptTemplate


@lru_cache(maxsize=8)
def _read(folder: str, name: str) -> str:
    path = Path(folder) / name
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise FileNotFoundError(f"prompt file missing: {path}") from exc


def chat_prompt(system: str, user: str, fold_system: bool = False) -> ChatPromptTemplate:
    """A system and a user message, or with ``fold_system`` one user message holding both (the
    system text first): some chat templates have no system role and silently drop a system message
    (llama.cpp's ``gemma`` format), which would lose every rule in it."""
    if fold_system:
        return ChatPromptTemplate.from_messages([("human", f"{system.rstrip()}\n\n{user}")])
    return ChatPromptTemplate.from_messages([("system", system), ("human", user)])


def answer_prompt(folder: Path, fold_system: bool = False) -> ChatPromptTemplate:
    """System + user messages (one user message with ``fold_system``); variables ``context`` and
    ``question``. Raises FileNotFoundError."""
    return chat_prompt(_read(str(folder), "answer_system.txt"), _read(str(folder), "answer_user.txt"), fold_system)


def condense_prompt(folder: Path) -> PromptTemplate:
    """Follow-up → standalone question; variables ``history`` and ``question``."""
    return PromptTemplate.from_template(_read(str(folder), "condense.txt"))
