"""What kind of answer a question expects, and what kind a sentence can give (classic QA answer typing).

Question side (pure text, used by assistant.question.analysis.analyze): :func:`asking_clause` (the part of a
question that asks), :func:`answer_type` (:data:`ANSWER_TYPES`), and the figures and counts a
quantity answer is made of. The sentence side (the types a sentence can answer) is
:mod:`assistant.evidence.answer_types`.
"""

from __future__ import annotations

import re

from vectorstore.store import NAME

# "What is FlashMoE Lite?": a name followed by capitalized words ("Lite", "XL", "V2") or a version
# ("ZebraNet 2", "v1.5") names, as a whole, a longer name than its first word.
_NAME_RUN = re.compile(rf"{NAME.pattern}(?: (?:[A-Z][A-Za-z0-9_-]*|v?\d+(?:\.\d+)?)(?![A-Za-z0-9_-]|\.\d))+")
# Words that end a name's run: a title-cased question ("Does ZebraNet Use Graphs?") or a year
# ("BERT 2019") goes on past the name.
_RUN_STOP = re.compile(r"(?:19|20)\d\d|(?i:a|an|and|are|as|at|be|by|can|do|does|for|from|has|have|how|i|if|in|"
                       r"is|it|of|on|or|than|that|the|to|use|uses|using|versus|vs|was|were|what|when|where|which|"
                       r"why|with)")


def whole_names(question: str, common=frozenset()) -> list[str]:
    """Several-word names of a question that begin with a name (:data:`NAME`, not one of ``common``)
    and go on with capitalized words or a version: "What is FlashMoE Lite?" → FlashMoE Lite, "ZebraNet
    2" → ZebraNet 2, where assistant.question.analysis.question_names finds FlashMoE, ZebraNet. A paper holding
    the whole name is the one asked about, not one holding its first word. A run ends before a
    function word or a year."""
    out = []
    for m in _NAME_RUN.finditer(question):
        words = m.group(0).split()
        cut = next((i for i, w in enumerate(words[1:], 1) if _RUN_STOP.fullmatch(w)), len(words))
        if cut > 1 and words[0].strip("-") not in common:
            out.append(" ".join(words[:cut]))
    return out


def spelled_name(whole: str) -> re.Pattern:
    """A several-word name as a paper may write it: words joined by a space or a hyphen, any case,
    maybe plural, as a whole ("FlashMoE Lite" finds "FlashMoE-Lite" and "flashmoe lite", not
    "FlashMoE Lite-Plus")."""
    return re.compile(r"(?<![A-Za-z0-9_-])" + r"[ -]".join(map(re.escape, whole.split()))
                      + r"s?(?![A-Za-z0-9_]|-[A-Za-z0-9])", re.I)


# A link or a code-availability pointer states no finding ("Code is at https://github.com/x/y.").
URL = re.compile(r"\b(?:https?://|www\.)\S+|\b\S+\.(?:com|org|io|net)/\S*", re.I)


def names_in(names, text: str, alone: bool = False) -> bool:
    """True when any of ``names`` occurs in ``text`` as a whole token, maybe plural ("PINN" finds
    "PINNs"); a one-word name in any case ("SyPe" finds "SyPE"), a several-word one as capitalized
    ("World Shaper", not the phrase "reinforcement learning" for "Reinforcement Learning"). An
    all-capitals name matches only in capitals: "DROP TABLE papers" names no paper that says "table".
    ``alone``: not as part of a hyphenated name either ("SyPE" is not alone in "SyPE-Lite")."""
    edge = r"(?![A-Za-z0-9_]|-[A-Za-z0-9])" if alone else r"(?![A-Za-z0-9_])"
    start = r"(?<![A-Za-z0-9_])(?<![A-Za-z0-9]-)" if alone else r"(?<![A-Za-z0-9_])"
    return any(re.search(rf"{start}{re.escape(n)}s?{edge}", text, 0 if " " in n or n.isupper() else re.I)
               for n in names)


# "How much faster…", "What share of…", "by how many points": the answer is a figure.
QUANTITY_CUE = re.compile(
    r"\b(how (much|many|fast|large|long|often|big)|what (share|fraction|percentage|proportion|latenc\w*|speed\w*|"
    r"gain|number)|by how|margin|speed-?up|latenc\w*|percent\w*|times faster)\b", re.I)
NUMBER_WORDS = r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozens?|hundreds?|thousands?|millions?|billions?)"
FIGURE = re.compile(rf"\d+(?:\.\d+)?|\b{NUMBER_WORDS}\b", re.I)
# A count ("three abilities", "5 tasks"), not a number inside a modifier or measure ("360-degree", "3-D", "90%", "1.5").
COUNT = re.compile(rf"(?<![\w.-])(\d+|{NUMBER_WORDS})(?![\w°%-]|\.\d)", re.I)
# Cross-references ("Sec. 5", "Table 2", "Eq. (3)") and bracketed citations are not quantities.
XREF = re.compile(r"\b(?:sec(?:tion)?s?|fig(?:ure)?s?|eqs?|equations?|tab(?:le)?s?|appendix|app|thm|theorems?|"
                  r"lemmas?|alg(?:orithm)?s?|chapters?|ch)\.?\s*\(?\d+(?:\.\d+)*\)?|\[\d+(?:[,\u2013-]\s*\d+)*\]", re.I)


def figures(text: str) -> set[str]:
    """Figures in ``text`` (numbers and number words), cross-references left out."""
    return {m.lower() for m in FIGURE.findall(XREF.sub(" ", text))}


def counts(text: str) -> set[str]:
    """Counts ``text`` names ("which three abilities" → {"three"}), lower case."""
    return {c.lower() for c in COUNT.findall(text)}


# --- the asking clause and the answer it expects ---------------------------------------------------
# A lookup often describes its paper first, then asks a detail ("…; how many Atari games was it
# validated on?"): the asking clause is what says which sentence answers.
_ASKS = re.compile(r"\b(?:what|which|how|who|whom|whose|when|where|why)\b", re.I)


def asking_clause(question: str) -> str:
    """The part of ``question`` from its last question word on (the whole question without one):
    "… a separate batch-norm layer per domain. Which benchmarks did it report gains on?" → "Which
    benchmarks did it report gains on?"."""
    starts = [m.start() for m in _ASKS.finditer(question)]
    return question[starts[-1]:] if starts else question


ANSWER_TYPES = ("quantity", "name", "definition", "reason", "manner", "condition", "yes_no", "paper", "other")
"""Kinds of answer a question expects (classic QA answer typing, after Li & Roth 2002, "Learning
question classifiers", coarsened to what an abstract's sentence can show): ``quantity`` a figure,
share or speed-up; ``name`` a named thing (dataset, benchmark, model, method); ``reason`` a cause;
``manner`` how something is done; ``condition`` what happens when/under …; ``yes_no``; ``other``
(an outcome or finding: "what did it conclude?"); ``paper`` the paper itself ("Which work makes …?",
whose quote should show that the paper matches, as a list question's does); ``definition`` what a named thing is ("What is
SyPE?", :func:`assistant.question.analysis.is_definition_question`; set by :func:`assistant.question.analysis.analyze`, which knows the names)."""
# Nouns whose value is a figure: "what top-1 accuracy …", "what compute cost?", "… speedup over X".
_QUANTITY_NOUN = (r"(?:accurac\w*|top-?\d\w*|cost|costs|time|speed-?ups?|gains?|improvements?|reductions?|errors?|scores?|"
                  r"rates?|ratios?|complexity|sizes?|numbers?|fractions?|share|percent\w*|proportions?|margins?|"
                  r"latenc\w*|flops|memory|bounds?|scale|mAP|FID|BLEU|AUROC|AUC|perplexity|sample\s+efficiency)")
_HOW_QUANTITY = re.compile(r"^how\s+(?:much|many|large|big|fast|long|often|rarely|close|far|small|high|low|well|few)\b"
                           r"|^by\s+how\b", re.I)
_REASON = re.compile(r"^(?:why\b|what\s+(?:explains|causes|caused|drives|decides|determines|is\s+the\s+reason|"
                     r"makes|leads?\s+to)\b)", re.I)
_MANNER = re.compile(r"^how\b", re.I)
_CONDITION = re.compile(r"^(?:when|where)\b|^under\s+(?:what|which)\b|^in\s+which\s+(?:setting|case|regime)", re.I)
_AUX = re.compile(r"^(?:is|are|was|were|do|does|did|can|could|will|would|should|has|have|had)\b", re.I)
# "what is that mechanism called?": the answer is a name whatever the verb.
_PAPER_NOUN = re.compile(r"(?:papers?|works?|stud(?:y|ies)|articles?|publications?|research)\b", re.I)
_CALLED = re.compile(r"\b(?:called|named|termed|dubbed|known\s+as)\W*$", re.I)
_NAME_NOUN = re.compile(r"\b(?:datasets?|benchmarks?|corpora|corpus|baselines?|models?|architectures?|algorithms?|"
                        r"methods?|tasks?|domains?|games?|environments?|networks?|languages?|metrics?|theorems?|"
                        r"problems?|distributions?|functions?|systems?|tools?|techniques?)\b", re.I)


def answer_type(text: str) -> str:
    """The kind of answer (:data:`ANSWER_TYPES`) the asking clause (:func:`asking_clause`) of ``text``
    expects: "How many Atari games …?" → quantity, "Which datasets did REDO use?" → name, "what
    explains …?" → reason, "How does E3T construct …?" → manner, "when batches are small?" →
    condition, "Is it faster?" → yes_no, "what did it conclude?" → other. A search-box question
    without a question word ("AGVM training time and COCO mAP") is typed by its nouns."""
    ask = asking_clause(text).strip()
    lead = ask.lstrip("\"'(").strip()
    if _REASON.match(lead):
        return "reason"
    if _HOW_QUANTITY.match(lead) or QUANTITY_CUE.match(lead):
        return "quantity"
    if _MANNER.match(lead):
        return "manner"
    if _CONDITION.match(lead):
        return "condition"
    head = re.match(r"^(?:what|which|whose)(?:\s+(?:kind|sort|type|class)s?\s+of)?((?:\s+[\w'-]+){1,5})", lead, re.I)
    if head:
        words = head.group(1).split()
        # "which datasets did …": the noun before the verb; "what was the biggest dataset?": the subject after it.
        first_verb = next((i for i, w in enumerate(words) if _AUX.match(w)), len(words))
        noun = " ".join(words[:min(first_verb, 3)] if first_verb else words[1:5])
        if noun and re.search(rf"\b{_QUANTITY_NOUN}\b", noun, re.I):
            return "quantity"
        if _PAPER_NOUN.match(noun):  # "Which work makes …?" asks for the paper, not a detail of it
            return "paper"
        if _CALLED.search(ask) or (noun and lead[:5].lower() == "which") or _NAME_NOUN.search(noun):
            return "name"
        return "other"
    if re.match(r"^who", lead, re.I):
        return "name"
    if _AUX.match(lead) and not _ASKS.search(text):
        return "yes_no"
    # No question word: a search-box question ("GenSDF zero-shot reconstruction number of unseen classes").
    if QUANTITY_CUE.search(ask) or re.search(rf"\b{_QUANTITY_NOUN}\b", ask, re.I):
        return "quantity"
    return "name" if _NAME_NOUN.search(ask) else "other"


# "release code", "have a GitHub repository", "make their code publicly available", "with code":
# what a list question asks when it asks for papers with code. What follows ("… for diffusion
# models") is the topic, if any.
_CODE_ASK = re.compile(
    r"^(?:papers?\s+)?(?:that\s+|which\s+|who\s+)?(?:also\s+)?"
    r"(?:release[sd]?|publish(?:es|ed)?|share[sd]?|provide[sd]?|offer(?:s|ed)?|open[- ]sources?|make|makes|made|"
    r"have|has|include[sd]?|come\s+with|link(?:s)?(?:\s+to)?|with)\s+"
    r"(?:(?:a|an|the|their|its|public(?:ly)?|open[- ]source|source|available|released)\s+)*"
    r"(?:code(?:\s?bases?)?|implementations?|repositor(?:y|ies)|repos?|github(?:\s+(?:repositor(?:y|ies)|repos?|links?))?)"
    r"(?:\s+(?:publicly|public|available|online|released|open[- ]source|too))*"
    r"(?:\s+(?:for|on|about|in|of)\s+(?P<rest>.+?))?\W*$", re.I)


def code_request(topic: str) -> tuple[bool, str]:
    """``(asks for papers with code, the rest of the topic)``: "release code" → (True, ""), "release
    code for diffusion models" → (True, "diffusion models"), "study diffusion" → (False, "")."""
    m = _CODE_ASK.match(" ".join(topic.split()))
    return (True, (m.group("rest") or "").strip()) if m else (False, "")
