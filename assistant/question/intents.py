"""What a question asks beyond one lookup: a comparison of papers and which papers it means (``compare``), a paper
not discussed yet ("another …", ``wants_another``), a synthesis an abstract's sentences can only be quoted for
without an LLM ("summarise it", "what are its components", ``synthesis``), and a pronoun that points at the paper
in focus even in a question with many words of its own ("how do they check …", ``pointer``).

Rules on the question's words alone (no model, no index), read by :func:`assistant.question.analysis.analyze`;
which papers the references mean is decided from the conversation (assistant.answer.followup)."""

from __future__ import annotations

import re
from dataclasses import dataclass

# "compare it with the first one", "Compare CacheEdit and World Shaper", "how does KITE differ from SyPE?",
# "what is the difference between X and Y?", "X vs Y": an imperative or a question about how papers differ.
# "compared to prior methods, how fast is X?" is a detail, not a comparison: "compare" counts only as a verb
# opening a clause.
_COMPARE = re.compile(
    r"(?:^|[.?!;:]\s*|\band\s+|\b(?:can|could|would|will) you\s+|\bplease\s+)(?:please\s+)?(?:compare|contrast)\b"
    r"|\bhow (?:does|do|did|is|are|was|were)\b.{1,80}?\b(?:differ|compare|different|contrast)\b"
    r"|\bwhat (?:is|are) the (?:main |key )?differences?\b|^\W*(?:the )?differences? between\b", re.I)
# Where the comparison's clause starts in a turn that first asks something else ("is there another
# forecasting paper? compare it with KITE"): the clause the answer's own question is.
_CLAUSE = re.compile(r"(?<=[.?!;])\s+(?=\S)|,?\s+and\s+(?=(?:please\s+)?(?:compare|contrast|how (?:does|do|is|are))\b)",
                     re.I)
# What a comparison points at, in the order said: "it", "this paper", "the method" (the paper in focus); "the
# first one", "[2]" (a source of the latest list); "these", "them", "both", "they" (all the latest answer's papers).
_FOCUS = r"\b(?:it|its|this(?: one)?|that one|(?:this|that|the) (?:paper|work|method|model|approach|framework))\b"
_ALL = r"\b(?:these|those|them|they|both|the two|all of them|the papers)\b"
_ORDINAL = (r"\bthe (?:first|second|third|fourth|fifth|last)(?: (?:one|paper|work|source|result)\b|(?=\s*[?.!,]|\s*$))"
            r"|\[\d+\]|#\d+\b")
_TARGET = re.compile(rf"(?P<ordinal>{_ORDINAL})|(?P<all>{_ALL})|(?P<focus>{_FOCUS})", re.I)

_ANOTHER = re.compile(
    r"(?<!inside )(?<!into )(?<!within )(?<!after )(?<!-)\b(?:another|any other|some other|a different)\s+(?:[\w-]+\s+){0,3}?"
    r"(?:papers?|works?|ones?|stud(?:y|ies)|approach(?:es)?|methods?|articles?)\b"
    r"|\bother (?:papers|works|ones|studies|articles)\b|\b(?:anything|what) else\b"
    r"|\b(?:other than|apart from|besides|except)\s+(?:it|this|that|these|those|them)\b", re.I)

# The syntheses an abstract's own sentences can answer when no LLM writes: a summary (one sentence per facet),
# its components (its method sentences), its contributions (method and results).
SYNTHESES: list[tuple[str, re.Pattern]] = [
    ("summary", re.compile(r"\bsummari[sz]e\b|\bsum (?:it |them |this )?up\b|\btl;?dr\b|^\W*(?:summary|overview|gist)\b"
                           r"|\b(?:give|write|provide|what is|what's)\b.{0,20}\b(?:summary|overview|gist)\b", re.I)),
    ("components", re.compile(r"\b(?:what|which) (?:are|were|is) (?:the |its |their )?(?:[\w'’-]+ ){0,3}(?:components|modules|"
                              r"building blocks|parts)\b|\b(?:what|which) (?:components|modules|building blocks) (?:does|do|did|are)\b"
                              r"|\bwhat does\b.{0,30}\bconsist of\b", re.I)),
    ("contributions", re.compile(r"\b(?:what|which|list|name) (?:(?:are|were) )?(?:the |its |their )?(?:[\w'’-]+ ){0,2}contributions\b"
                                 r"|\bwhat does (?:it|the paper|this paper|the work) (?:contribute|propose)\b", re.I)),
]

# A pronoun that refers back even in a question with words of its own ("how do they check that the personality
# actually changed?", "which base model did the authors use?"): the subject of the question's opening ("how …
# do they", "does it"), not an expletive "it" ("Is it possible to …") nor a subject the question describes
# itself ("In the work that …, how does it …", "does the method that …").
_SUBJECT = r"(?:they|it|the authors|(?:the|this|that) (?:paper|work|study|method|model|approach|framework|system))"
_POINTER = re.compile(
    rf"^\W*(?:(?:how|what|which|why|when|where|who)\b(?:\s+[\w'’-]+){{0,3}}?\s+)?"
    rf"(?:do|does|did|is|are|was|were|can|could|would|will|have|has|had)\s+{_SUBJECT}\b"
    r"(?!\s+(?:possible|true|known|likely|necessary|feasible|worth|better|enough|common|hard|easy|take|takes|took|"
    r"cost|matter)\b)"
    r"(?!\s+(?:that|which|where|who|whose|on|of|for|about|in|with)\b)", re.I)


@dataclass(frozen=True)
class Target:
    """One thing a comparison points at: ``kind`` ``"name"`` (``words`` is the name), ``"ordinal"`` (``n``,
    1-based, -1 for the last), ``"focus"`` ("it", the paper in focus) or ``"all"`` ("these", the latest answer's
    papers); ``at``: where it is said, so targets keep the order the user gave."""

    kind: str
    words: str
    n: int | None = None
    at: int = 0


@dataclass(frozen=True)
class Compare:
    """A comparison asked: what it points at, in order, and the question asked before it in the same turn
    (``lead``: "is there another forecasting paper?" of "… compare it with KITE"), or ""."""

    targets: tuple[Target, ...]
    lead: str = ""
    clause: str = ""
    """The clause that asks for the comparison."""


_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}


def compare_request(text: str, names: list[str] | tuple[str, ...] = ()) -> Compare | None:
    """The comparison ``text`` asks for, or None. ``names``: the question's names (assistant.question.analysis
    finds them), each a target where it is said."""
    m = _COMPARE.search(text)
    if m is None:
        return None
    # The clause holding the request runs to the end; what was asked before it in the turn is its lead.
    cuts = [c for c in _CLAUSE.finditer(text) if c.end() < m.end()]
    offset = cuts[-1].end() if cuts else 0
    lead, clause = (text[: cuts[-1].start()].strip() if cuts else ""), text[offset:]
    targets = [Target("name", n, at=clause.find(n) + offset) for n in names if n in clause]
    taken = [(t.at, t.at + len(t.words)) for t in targets]
    for t in _TARGET.finditer(clause):
        start = t.start() + offset
        if any(a <= start < b for a, b in taken):
            continue
        word = t.group(0)
        if t.lastgroup == "ordinal":
            digits = re.sub(r"\D", "", word)
            n = int(digits) if digits else _ORDINALS[word.split()[1].lower()]
            targets.append(Target("ordinal", word, n, start))
        else:
            targets.append(Target(t.lastgroup, word, at=start))
    return Compare(tuple(sorted(targets, key=lambda t: t.at)), lead, clause.strip())


def wants_another(text: str) -> bool:
    """True when ``text`` asks for a paper not discussed yet ("is there another forecasting paper?", "any other
    work on this?", "what else …?")."""
    return bool(_ANOTHER.search(text))


def synthesis(text: str) -> str:
    """The synthesis ``text`` asks for (one of :data:`SYNTHESES`' kinds), ``"comparison"`` for a comparison, or ""."""
    if _COMPARE.search(text):
        return "comparison"
    return next((kind for kind, pattern in SYNTHESES if pattern.search(text)), "")


def pointer(text: str) -> str:
    """The opening words of ``text`` that point at an earlier answer's paper ("do they", "did it"), or ""."""
    m = _POINTER.search(text)
    return " ".join(m.group(0).split()[-2:]) if m else ""


ABOUT_A_PAPER = ("summary", "components", "contributions")
"""Syntheses a paper's abstract states, as it states what the paper is."""


def what_it_is(question) -> bool:
    """True when ``question`` (a :class:`assistant.question.analysis.Question`) asks what a named thing is ("What
    is SyPE?") or for a synthesis its abstract states ("summarise it", "what are its components?"): the paper named
    or pointed at answers it (assistant.relevance.judge, "named, asked what it is")."""
    return question.definition or question.synthesis in ABOUT_A_PAPER
