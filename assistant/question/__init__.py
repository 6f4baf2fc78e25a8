"""The question, analysed once: its shape (list, with its topic: ``lists``; definition, follow-up reference, beyond
the abstracts), the names and figures it holds, the answer type it expects (``answer_types``), whether it reads as English
(``language``), what it asks beyond a lookup (a comparison, another paper, a synthesis: ``intents``) and its weighted terms (``terms``).

Imports: ``text``, ``settings`` and :mod:`vectorstore`."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "analysis": ("COMMON_NAMES", "FRAMING_TERMS", "MAX_QUESTION_CHARS", "Question", "REFERENCE_WORDS", "analyze",
        "has_name_or_number", "validate_question"),
    "answer_types": ("URL", "asking_clause", "code_request", "counts", "figures", "names_in", "spelled_name"),
    "intents": ("ABOUT_A_PAPER", "Compare", "Target", "what_it_is"),
    "language": ("FOREIGN_NOTE", "reads_as_english"),
    "terms": ("content_weights", "coverage", "lexical_coverage", "question_weights", "term_weights", "text_terms"),
})
