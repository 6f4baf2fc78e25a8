"""What kind of answer a sentence can give a question: the sentence side of answer typing (the question
side, :func:`assistant.question.answer_types.answer_type`, is the question stage's). The evidence ranker weighs the match
of the two, and the relevance judge may ask whether a paper has any sentence of the asked type."""

from __future__ import annotations

import re

from assistant.question import Question, URL, figures, names_in
from vectorstore.store import NAME

# What a sentence can answer, per answer type (assistant.question.analysis.ANSWER_TYPES).
# A share, ratio or speed-up ("4.75$\\times$", "10x", "60%").
SHARE = re.compile(r"%|×|\\times|\b\d+(?:\.\d+)?\s*x\b|\btimes\b|\bfold\b|percent", re.I)
_THING_WORDS = re.compile(r"\b(?:datasets?|benchmarks?|corpus|corpora|suites?|tasks?|games|environments?|domains?|"
                          r"baselines?|models?|architectures?|algorithms?|networks?)\b", re.I)
_REASON_WORDS = re.compile(r"\b(?:because|due to|since|owing to|caused? by|stems? from|attribut\w+|explain\w*|"
                           r"reason\w*|leads? to|results? in|as a result)\b", re.I)
_MANNER_WORDS = re.compile(r"\b(?:by|via|through|using|uses?|employs?|relies|based on|leverag\w+|consists? of|"
                           r"combin\w+|construct\w*|comput\w+)\b", re.I)
_CONDITION_WORDS = re.compile(r"\b(?:when|whenever|if|unless|under|once|after|provided)\b", re.I)
_INTRO_WORDS = re.compile(r"\b(?:we (?:\w+ )?(?:propose|introduce|present|develop|design|build)|stands? for|called|"
                          r"named|termed|dubbed|is an?|refers? to)\b", re.I)


def new_names(text: str, question: Question) -> list[str]:
    """Name-like tokens of ``text`` (an acronym, CamelCase or digit-bearing token, or a capitalized
    word after its first) that ``question`` does not hold: candidate answers to a "which …?" question."""
    asked = {t.lower() for t in re.findall(r"[\w-]+", question.text)}
    words = re.findall(r"(?<![\w-])[A-Za-z][\w-]*", URL.sub(" ", text))
    return [w for i, w in enumerate(words)
            if w.lower() not in asked and (NAME.fullmatch(w) or (i > 0 and w[0].isupper() and len(w) > 2))]


def sentence_answer_types(text: str, question: Question) -> frozenset[str]:
    """The answer types (assistant.question.analysis.ANSWER_TYPES) ``text`` could answer for ``question``: a
    figure, share or speed-up the question does not state → ``quantity``; a name the question does
    not hold, or a dataset/benchmark word → ``name``; a name the question holds, introduced or spelled
    out → ``definition``; a causal connective → ``reason``; a means ("by", "via", "using") →
    ``manner``; a condition ("when", "if", "under") → ``condition``; ``yes_no`` and ``other`` always
    (any statement answers them). The judge asks whether the top paper has a sentence of
    ``question.answer_type`` at all; the evidence ranker weighs the match per type."""
    out = {"yes_no", "other"}
    if (figures(text) - question.figures) or SHARE.search(text):
        out.add("quantity")
    if new_names(text, question) or _THING_WORDS.search(text):
        out.add("name")
    if question.names and names_in(question.names, URL.sub(" ", text)) and _INTRO_WORDS.search(text):
        out.add("definition")
    if _REASON_WORDS.search(text):
        out.add("reason")
    if _MANNER_WORDS.search(text):
        out.add("manner")
    if _CONDITION_WORDS.search(text):
        out.add("condition")
    return frozenset(out)
