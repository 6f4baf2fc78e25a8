"""The errors a user can cause or fix, shown as one line by every face (CLI, UI)."""

from __future__ import annotations

from pydantic import ValidationError

from assistant.answer import QuestionError
from assistant.related import UnknownPaperError
from vectorstore.embedding import EmbeddingModelError
from vectorstore.papers import CorpusError
from vectorstore.store import StoreError

USER_ERRORS: tuple[type[BaseException], ...] = (
    QuestionError, UnknownPaperError, CorpusError, StoreError, EmbeddingModelError, ValidationError,
    FileNotFoundError, ValueError,
)
