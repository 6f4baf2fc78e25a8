"""Former home of the answer pipeline, kept so existing imports work. New code imports from the
modules that own each name: assistant.pipeline (Assistant), assistant.types (CitedAnswer, Source,
Claim), assistant.question (QuestionError), assistant.generate (notes, as_data), assistant.prepared."""

from assistant.generate import CUT_NOTE, FALLBACK_NOTE, INCOMPLETE_MARK, UNCITED_NOTE, Run, as_data  # noqa: F401
from assistant.pipeline import Assistant  # noqa: F401
from assistant.prepared import Prepared  # noqa: F401
from assistant.question import MAX_QUESTION_CHARS, QuestionError, validate_question  # noqa: F401
from assistant.types import CitedAnswer, Claim, Source  # noqa: F401

_Run = Run
