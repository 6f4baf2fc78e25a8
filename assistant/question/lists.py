"""List questions: those that ask for every paper with a property ("Which papers study X?"), and their topic, the
question without its lead-in. Read by :func:`assistant.question.analysis.analyze` (``Question.is_list``,
``Question.topic``)."""

from __future__ import annotations

import re

# One list of the words that name the things a list question asks for.
_WORKS = r"(?:papers|works|studies|approaches|methods|articles|abstracts)"
# The lead-in of a list question, which carries no content: "Which papers study X?" → "study X",
# "Show me articles about X" → "X", "Papers on X?" → "X".
LIST_LEAD = re.compile(
    r"^\s*(?:(?:please\s+)?(?:which|what|list|find|show(?:\s+me)?|give\s+me|are\s+there(?:\s+any)?|is\s+there(?:\s+any)?|all)\s+"
    rf"(?:of\s+)?(?:all\s+|the\s+|any\s+|other\s+)?{_WORKS}\s+"
    r"(?:that\s+|which\s+|who\s+|in\s+the\s+index\s+)?(?:(?:are|is)\s+(?:about|on)\s+)?(?:about\s+|on\s+)?"
    rf"|(?:any\s+(?:other\s+)?|other\s+)?{_WORKS}\s+(?:about|on)\s+)", re.I)
# "Which papers study X?", "List all works on Y", "papers about Z": every paper with a property;
# any question with a list lead-in is one too.
# "works" is also a verb ("What learning rate schedule works best …?"): in the words test it names
# papers only right after a word that introduces a noun ("which works", "prior works").
_WORKS_NOUN = (r"(?:papers|studies|approaches|methods|articles|abstracts|(?:(?<=which )|(?<=what )|(?<=all )|"
               r"(?<=any )|(?<=the )|(?<=other )|(?<=prior )|(?<=related )|(?<=recent )|(?<=previous )|(?<=existing ))works)")
LIST_QUESTION = re.compile(rf"\b(which|what|list|all|any|find)\b[^?]*\b{_WORKS_NOUN}\b|"
                           r"\bpapers\b[^?]*\b(that|which|on|about)\b", re.I)


def is_multi_question(question: str) -> bool:
    """True for questions that ask for every paper with a property ("Which papers study X?")."""
    return bool(LIST_QUESTION.search(question) or LIST_LEAD.match(question))


def question_topic(question: str) -> str:
    """The question without a "Which papers …" lead-in and the final '?' (the whole question if none)."""
    q = " ".join(question.split())
    topic = LIST_LEAD.sub("", q).strip().rstrip("?").strip()
    return topic or q.rstrip("?").strip()
