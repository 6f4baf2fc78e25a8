"""The question, analysed once: every rule about the shape of a question lives here.

:func:`analyze` turns the text of a question into a :class:`Question` (its names, whether it asks for a list, its
topic, whether it asks what a named thing is or for a quantity, the counts and figures it states, and what it points
back at in an earlier turn). Downstream code reads these fields and never parses the question again. Pure: no model,
no index (the corpus' names are an argument), so ``tests/unit/test_question.py`` checks questions in milliseconds.

A *name* has one definition, :data:`vectorstore.store.lexical.NAME` (an acronym, CamelCase or digit-bearing token),
plus runs of capitalized words inside a question ("World Shaper").
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from assistant.question.answer_types import QUANTITY_CUE, answer_type, asking_clause, counts, figures, whole_names
from assistant.question.intents import Compare, compare_request, pointer, synthesis, wants_another
from assistant.question.lists import LIST_LEAD, LIST_QUESTION, question_topic
from assistant.settings import QuestionCalibration
from assistant.text import valid_text, without_pictographs
from vectorstore.store import NAME, tokenize

MAX_QUESTION_CHARS = 4000


class QuestionError(ValueError):
    """The question cannot be asked (empty, or too long)."""


def validate_question(question: str) -> str:
    """The question, whitespace-normalised. Raises QuestionError if empty or over the length limit."""
    if question is None or not str(question).strip():
        raise QuestionError("the question is empty: type a question about the papers")
    # Invalid UTF-8 ("caf\udce9" from argv) becomes U+FFFD; emoji (unknown tokens to the model: off topic) are dropped.
    q = " ".join(without_pictographs(valid_text(str(question))).split())
    if not q:
        raise QuestionError("the question has no words (emoji are left out): type a question about the papers")
    # Control and format characters (zero-width spaces, joiners, C0/C1) are no words: a question of only those was
    # answered as a "closest match" (a third hostile round, #35); one of only punctuation ("...") as a follow-up (11th).
    if not any(c.isalnum() for c in q):
        empty = not "".join(c for c in q if unicodedata.category(c) not in ("Cc", "Cf", "Zs"))
        raise QuestionError("the question is empty: type a question about the papers" if empty else
                            "the question has no words (only punctuation): type a question about the papers")
    if len(q) > MAX_QUESTION_CHARS:
        raise QuestionError(f"the question is {len(q):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. "
                            "To find papers related to a long text, use related work (the Related work tab, "
                            "or `paper-assistant related`)")
    return q


# --- names ------------------------------------------------------------------------------------
# ASCII boundaries, not \w: CJK characters are word characters, and "什么是SyPE？" names SyPE.
_WORD = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9](?![A-Za-z0-9_-])")
COMMON_NAMES = frozenset({"LLM", "LLMs", "AI", "RL", "ML", "NLP", "GPU", "GPUs", "CPU", "API", "QA", "MoE", "VLM",
                          "VLMs", "LoRA", "ASR", "RAG", "3D", "2D", "CNN", "CNNs", "GAN", "GANs", "I", "II"})
"""Name-like tokens too common in the field to say which paper is meant ("LLM", "MoE")."""
_CAPITALIZED = re.compile(r"(?<![A-Za-z0-9_-])[A-Z][a-z][A-Za-z0-9+]*(?![A-Za-z0-9_-])")
_HYPHENATED = re.compile(r"(?<![A-Za-z0-9_-])[A-Z][a-z0-9]+(?:-[A-Za-z0-9]+)+(?![A-Za-z0-9_-])")
# "Compare CacheEdit and World Shaper": a run of capitalized words is a several-word name.
_TITLE_RUN = re.compile(r"(?<![\w-])(?:[A-Z][a-z]+ )+[A-Z][a-z]+(?![\w-])")
_OPENERS = {"What", "Which", "How", "Why", "When", "Where", "Who", "Is", "Are", "Do", "Does", "Can", "Could", "Compare",
            "Explain", "Describe", "List", "Find", "Show", "Tell", "Give", "Please", "In", "For", "The", "A", "An"}
# A token carrying a digit ("73ms", "3DGS", "2024"): weighted like a name when matching terms.
NUMBER_TOKEN = re.compile(r"\w*\d\w*")


def spell_names(question: str, names: dict[str, str]) -> str:
    """``question`` with each word that is one of the corpus' names (``names``, lower case → spelling,
    from vectorstore.store.lexical.corpus_names) spelled as the corpus spells it: "what is omnimoe?" →
    "what is OmniMoE?", so the name rules apply to questions typed in any case. An all-capitals name
    is recognized in lower case only when it holds a digit ("u2a"), since "peer" or "cabs" typed in
    lower case are more often words; "Cabs" or "Peer" capitalized are taken for the names."""
    shouted = not any(c.islower() for c in question)  # "WHAT IS OMNIMOE": every word looks like an acronym

    def spelled(m: re.Match) -> str:
        word = m.group(0)
        name = names.get(word.lower())
        if shouted:
            return name or word.lower()
        # An all-capitals name typed in lower case may be a plain word ("peer" is not PEER, the
        # baseline); a mixed-case or digit-bearing one ("omnimoe", "u2a") is not.
        if name is None or (word.islower() and not any(c.islower() or c.isdigit() for c in name)):
            return word
        return name

    return _WORD.sub(spelled, question)


def question_names(question: str, title_names: frozenset[str] = frozenset()) -> list[str]:
    """Name-like tokens of a question (:data:`NAME`), generic ones dropped, and runs of capitalized
    words inside it ("Compare CacheEdit and World Shaper" → CacheEdit, World Shaper). ``title_names``:
    the names indexed titles lead with, lower case ("falcon" for "Falcon: Fast Spectral Inference …"): a
    capitalized word of the question that is one of them is a name too ("What is Falcon?")."""
    found = [n.strip("-") for n in NAME.findall(question) if n.strip("-") not in COMMON_NAMES and len(n) > 1]
    if title_names:
        found += [w for w in _CAPITALIZED.findall(question)
                  if w.lower() in title_names and w not in _OPENERS and w not in found]
    # "Romberg-ZOGE": a capitalized word hyphenated to a name is one name (NAME alone finds neither part).
    found += [h for h in _HYPHENATED.findall(question)
              if h not in found and any(NAME.fullmatch(part) for part in h.split("-")[1:])]
    for run in _TITLE_RUN.findall(question):
        words = run.split()
        while words and words[0] in _OPENERS:  # "Compare World Shaper" → World Shaper
            words = words[1:]
        if len(words) >= 2:
            found.append(" ".join(words))
    return found


def has_name_or_number(text: str) -> bool:
    """True when ``text`` holds a name (:data:`NAME`) or a digit-bearing token."""
    return bool(NAME.search(text) or NUMBER_TOKEN.search(text))


# --- framing ----------------------------------------------------------------------------------
FRAMING_TERMS = frozenset({
    "how", "what", "which", "why", "when", "where", "who", "whose", "doe", "do", "did", "is", "ar", "wa", "were",
    "has", "have", "can", "could", "would", "should", "there", "anyon", "ani", "use", "paper", "work", "research",
    "studi", "articl", "literatur", "exist", "stand",
})
"""Stemmed words that frame a question ("Is there work on …", "Has anyone studied …", "Which papers …")
rather than say what it is about; the BM25 tokenizer's stop list keeps them."""


# --- definitions, quantities, counts ------------------------------------------------------------
# "What is SyPE?", "What does CABS stand for?", "How does U2A work?": the question asks what a named
# thing is (its words, once the names are taken out, are only these); the answer is the sentence
# that introduces the name, not a result sentence. "What is the baseline model in TMD-Bench?" asks a detail.
DEFINITION_FRAME = re.compile(
    r"\W*(?:what(?:'s| is| are)(?: the| an?)?(?: (?:main|key|core) (?:idea|contribution|point) of(?: the)?)?|"
    r"what does(?: the)?|how do(?:es)?(?: the)?|(?:explain|describe|define)(?: the)?|tell me about(?: the)?)"
    r" \W*N(?:,? (?:and |or )?\W*N)*(?: (?:stand for|mean|do|work))?\W*", re.I)
def is_definition_question(question: str, names: list[str]) -> bool:
    """True when ``question`` asks what the named things are ("What is SyPE?", "What does CABS stand
    for?", "How does U2A work?", "What is the main contribution of OmniMoE?"), not a detail about them."""
    if not names:
        return False
    masked = re.sub("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)), "N", question)
    return bool(DEFINITION_FRAME.fullmatch(" ".join(masked.split())))


# --- references to earlier turns ------------------------------------------------------------------
# Words that point back at an earlier turn. Bare "this"/"that" are left out: they open too many
# standalone questions ("Is there work that …").
FOLLOW_UP = re.compile(r"\b(it|its|they|their|them|these|those|(this|that|the) (paper|work|method|model|approach|"
                       r"study|technique|dataset|benchmark|system|framework)|the authors|the same)\b", re.I)
# "the second one", "the last paper", "[2]", "#2": one source of an earlier answer.
ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "last": -1}
ORDINAL = re.compile(r"\bthe (first|second|third|fourth|fifth|last)(?: (one|paper|work|source|result)\b|(?=\s*[?.!,]|\s*$))"
                     r"|\[(\d+)\]|#(\d+)\b", re.I)
MORE = re.compile(r"\b(tell me more|more (about|on|details?)|elaborate|explain (it )?(more|further))\b", re.I)
# "and what dataset?", "what about the speedup?", "also its limits?": an elliptic follow-up names
# nothing and leans on the previous answer for its subject.
ELLIPSIS = re.compile(r"^\W*(?:and|also|plus|what about|how about|and what about|and how about)\b", re.I)
REFERENCE_WORDS = frozenset({"one", "ones", "paper", "papers", "work", "source", "result", "tell", "me", "more",
                             "about", "detail", "details", "elabor", "explain", "further", "what", "how", "and", "it",
                             "they", "them", "last", "first", "second", "third", "fourth", "fifth"})
"""Stemmed words of a bare reference ("and the second one?", "tell me more about it")."""
MAX_OWN_TERMS = QuestionCalibration().max_own_terms
"""A question with a pronoun ("how does it work?") is a follow-up only if it names nothing itself and
has at most this many content terms of its own (``Settings.calibration.question.max_own_terms``);
"Is it possible to make mixture-of-experts layers faster?" is a new question that happens to say "it"."""


@dataclass(frozen=True)
class Reference:
    """What a question points back at.

    ``kind``: ``"ordinal"`` (one source: "the second one", "[2]", "#2", "the last paper"; ``n`` is
    1-based, -1 for the last), ``"bare"`` (only points back: "tell me more"), ``"pronoun"`` ("how
    does it work?": names nothing, few words of its own), ``"ellipsis"`` ("and what dataset?", "what
    about the speedup?": the same, opened by "and" / "what about"). ``words`` is the matched reference.
    """

    kind: str
    n: int | None = None
    words: str = ""


def _reference(text: str, terms: list[str], names: list[str], bare: bool, max_own_terms: int) -> Reference | None:
    ordinal = ORDINAL.search(text)
    if ordinal is not None and (ordinal.group(3) or ordinal.group(4) or ordinal.group(2) in ("one", None) or bare):
        word, _, bracket, hashed = ordinal.groups()
        return Reference("ordinal", ORDINALS[word.lower()] if word else int(bracket or hashed), ordinal.group(0))
    if bare:
        return Reference("bare")
    pointer = FOLLOW_UP.search(text) or MORE.search(text)
    ellipsis = ELLIPSIS.search(text)
    if not (pointer or ellipsis):
        return None
    own = [t for t in terms if t not in REFERENCE_WORDS and t not in FRAMING_TERMS]
    if names or len(own) > max_own_terms:
        return None
    return Reference("pronoun", words=pointer.group(0)) if pointer else Reference("ellipsis", words=text.strip())


# --- what abstracts rarely state ------------------------------------------------------------------
# An abstract gives a paper's problem, method and headline result; it seldom gives exact
# hyper-parameters, training details, proofs, table values or implementation details. A question
# asking for one is answered from the abstracts with a caveat (assistant.answer.generate.caveat_text). Hand-listed cues,
# one pattern per kind: no training question is labelled so (the dev and training questions are all
# answerable from abstracts, and none of them fires: tests/unit/test_caveat.py). "Learning rate" as a
# topic ("the learning-rate schedule paper …") does not fire; asking for one ("what learning rate …") does.
BEYOND_ABSTRACTS: list[tuple[str, re.Pattern]] = [
    ("exact hyper-parameters", re.compile(
        # "What is dropout?" asks what it is, which abstracts say: a present-tense "is/are" counts only
        # before "the"/"exact"/"specific" ("What is the learning rate?", "What are the exact settings?").
        r"\b(?:what|which)\s+(?:(?:were|was)\s+|(?:are|is)\s+(?=the\b|exact\b|specific\b))?(?:the\s+)?(?:exact\s+|specific\s+)?"
        r"(?:hyper-?\s?parameters?|learning[- ]rates?|batch[- ]sizes?|weight[- ]decay|warm-?up\s+(?:steps|schedule|ratio)"
        r"|dropout(?:\s+rate)?|optimi[sz]er(?:\s+settings)?|random\s+seeds?|(?:adam|sgd)\s+(?:betas?|momentum))\b"
        r"|\bhyper-?\s?parameter\s+(?:settings|values|choices|configurations?|config)\b"
        r"|\b(?:how\s+many|number\s+of)\s+(?:training\s+)?epochs\b"
        r"|\b(?:learning[- ]rate|batch[- ]size|optimi[sz]er)s?\s+(?:did|does|do|was|were)\b"
        r"|\bvalues?\s+of\s+(?:the\s+)?(?:learning\s+rate|batch\s+size|hyper-?\s?parameters?)\b", re.I)),
    ("exact training details", re.compile(
        r"\btraining\s+(?:details|setup|set-up|configuration|config)\b"
        r"|\b(?:how\s+many|number\s+of|which|what)\s+(?:gpus?|tpus?|accelerators)\b|\bgpu[- ]hours?\b"
        r"|\bhow\s+long\s+(?:did|does|do|was|were)\b.{0,40}\bto\s+train\b|\bwhat\s+hardware\b"
        r"|\b(?:exact|full)\s+(?:experimental|training)\s+(?:setup|details|settings)\b|\bimplementation\s+details\b", re.I)),
    ("proofs", re.compile(
        r"\bproofs?\b(?![- ]of[- ]concept)(?!\s+(?:search|assistants?|generation|systems?|automation))|\bhow (do|does|did) (they|the authors|it|\w+) prove\b|\bderivations?\b"
        r"|\bderive[sd]?\b.{0,30}\b(bound|theorem|lemma|result|formula|equation)\b|\blemma\s*\d|\btheorem\s*\d"
        r"|\bstep[- ]by[- ]step (derivation|proof)\b", re.I)),
    ("table values", re.compile(
        r"\btables?\s*\d+\b|\b(in|from) (the|their|its) tables?\b|\btable values?\b|\bper[- ](dataset|task|benchmark|language|class) (results?|scores?|numbers|accuracy)\b"
        r"|\bexact (numbers?|values?|scores?|figures?|results?|accuracy|numbers)\b|\bfull (results?|table|numbers)\b"
        r"|\b(ablation|results?) tables?\b|\bfigure\s*\d+\b|\bappendix\b", re.I)),
    ("the method's own limitations", re.compile(
        # Not "which limitation of existing methods does X address?": abstracts state those.
        r"\b(?:its|their|the\s+(?:method|paper|model|approach)'s)\s+(?:own\s+|main\s+|key\s+)?(?:limitations?|weakness(?:es)?|drawbacks?"
        r"|shortcomings?|failure\s+(?:cases|modes))\b|\b(?:what|which)\s+(?:are|were|is)\s+(?:the\s+)?(?:main\s+|key\s+)?"
        r"(?:limitations?|weakness(?:es)?|drawbacks?|shortcomings?)\s+of\s+(?!prior|previous|existing|current|earlier|standard"
        r"|conventional|traditional|other)", re.I)),
    ("author names", re.compile(
        r"\bwho\s+(?:are|were|is|was)\s+(?:the\s+)?(?:authors?|researchers|people)\b|\bwho\s+(?:wrote|authored|co-?authored)\b"
        r"|\b(?:which|what|list\s+the|name\s+the)\s+(?:authors?|labs?|institutions?|universit(?:y|ies)|affiliations?)\b"
        r"|\bauthors?(?:'s?)?\s+(?:names?|affiliations?|institutions?)\b", re.I)),
    ("code details", re.compile(
        r"\bpseudo-?\s?code\b|\bsource code\b|\bcode (snippet|example|listing|details|structure)\b"
        r"|\b(which|what) (library|libraries|framework|frameworks|programming language)\b"
        r"|\bhow (is|was|are|were) (it|they|\w+) implemented\b|\bimplemented in (pytorch|jax|tensorflow|which|what)\b"
        r"|\b(function|class|api) (names?|signatures?)\b|\bgithub (repo|repository)? ?(structure|files?)\b", re.I)),
]


def beyond_abstracts(text: str, is_list: bool = False) -> str | None:
    """What ``text`` asks for that abstracts rarely state ("exact hyper-parameters", "exact training
    details", "proofs", "table values", "code details"), or None. A list question ("Which papers …")
    asks which papers, which abstracts do say: None."""
    if not text or is_list:
        return None
    return next((kind for kind, pattern in BEYOND_ABSTRACTS if pattern.search(text)), None)


# --- the analysis ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    """One question, analysed (see :func:`analyze`). ``text`` is what is embedded and searched."""

    text: str
    names: tuple[str, ...] = ()
    whole_names: tuple[str, ...] = ()
    """Names of several words that begin with one of ``names`` ("FlashMoE Lite"; :func:`whole_names`)."""
    terms: tuple[str, ...] = ()
    """Stemmed BM25 terms of ``text`` (vectorstore.store.lexical.tokenize), in order, repeats kept."""
    name_terms: frozenset[str] = frozenset()
    """Terms that come from names or digit-bearing tokens ("PEER", "73ms"): weighted double."""
    is_list: bool = False
    list_cue: str = ""
    """What made it a list question: ``"words"`` ("which … papers"), ``"lead-in"`` (only its opening,
    "Show me articles about …"), or ``""``."""
    topic: str = ""
    """``text`` without a list question's lead-in; ``text`` itself for any other question."""
    topic_terms: tuple[str, ...] = ()
    names_terms: frozenset[str] = frozenset()
    """Terms of ``names``: what every sentence of a named paper is about, so features also read the rest."""
    ask: str = ""
    """The clause that asks (:func:`asking_clause`); ``text`` itself when it has none."""
    ask_terms: tuple[str, ...] = ()
    """Terms of ``ask`` (``terms`` when it is the whole question)."""
    described_terms: frozenset[str] = frozenset()
    """Terms of the text before ``ask`` (a question often describes its paper, then asks a detail)."""
    definition: bool = False
    quantity: bool = False
    figures: frozenset[str] = frozenset()
    counts: frozenset[str] = frozenset()
    bare: bool = False
    """Only points back ("and the second one?", "tell me more about it")."""
    reference: Reference | None = None
    own_terms: tuple[str, ...] = field(default=())
    """Content terms of its own: neither reference nor framing words."""
    beyond_abstracts: str | None = None
    """What it asks for that abstracts rarely state (:func:`beyond_abstracts`), e.g. "proofs"; the
    answer then carries the abstract-only caveat."""
    answer_type: str = "other"
    """The kind of answer it expects (:func:`answer_type`, one of :data:`assistant.question.answer_types.ANSWER_TYPES`)."""
    compare: Compare | None = None
    """A comparison it asks for and what it points at (assistant.question.intents, as are the three below)."""
    another: bool = False
    """It asks for a paper not discussed yet ("is there another forecasting paper?")."""
    synthesis: str = ""
    """The synthesis it asks for: "summary", "components", "contributions", "comparison" or ""."""
    pointer: str = ""
    """A pronoun pointing at an earlier paper even past ``max_own_terms`` ("how do they check …")."""

    @property
    def kind(self) -> str:
        """``list`` | ``definition`` | ``quantity`` | ``follow-up`` | ``lookup``."""
        if self.is_list:
            return "list"
        if self.definition:
            return "definition"
        if self.quantity:
            return "quantity"
        if self.reference is not None:
            return "follow-up"
        return "lookup"


def analyze(text: str, corpus_names: dict[str, str] | None = None, max_own_terms: int = MAX_OWN_TERMS,
            title_names: frozenset[str] = frozenset()) -> Question:
    """The :class:`Question` for ``text``. With ``corpus_names`` (lower case → spelling), names typed
    in any case are first spelled as the corpus spells them (:func:`spell_names`); ``title_names``: see
    :func:`question_names`. No validation: see :func:`validate_question`."""
    if corpus_names is not None:
        text = spell_names(text, corpus_names)
    names = question_names(text, title_names)
    terms = tokenize(text)
    list_cue = "words" if LIST_QUESTION.search(text) else "lead-in" if LIST_LEAD.match(text) else ""
    is_list = bool(list_cue)
    topic = question_topic(text) if is_list else text
    bare = all(t in REFERENCE_WORDS or t.isdigit() for t in terms)
    ask = asking_clause(text)
    return Question(
        text=text, names=tuple(names), whole_names=tuple(whole_names(text, COMMON_NAMES)), terms=tuple(terms),
        name_terms=frozenset(tokenize(" ".join(NAME.findall(text) + NUMBER_TOKEN.findall(text)))),
        is_list=is_list, list_cue=list_cue, topic=topic, topic_terms=tuple(tokenize(topic)) if topic != text else tuple(terms),
        names_terms=frozenset(tokenize(" ".join(names))) if names else frozenset(), ask=ask,
        ask_terms=tuple(tokenize(ask)) if ask != text else tuple(terms),
        described_terms=frozenset(tokenize(text[: len(text) - len(ask)])) if ask != text else frozenset(),
        definition=is_definition_question(text, names), quantity=bool(QUANTITY_CUE.search(text)),
        figures=frozenset(figures(text)), counts=frozenset(counts(text)), bare=bare,
        reference=_reference(text, terms, names, bare, max_own_terms),
        own_terms=tuple(t for t in terms if t not in REFERENCE_WORDS and t not in FRAMING_TERMS),
        beyond_abstracts=beyond_abstracts(text, is_list),
        answer_type="definition" if is_definition_question(text, names) else answer_type(text),
        compare=compare_request(text, names), another=wants_another(text), synthesis=synthesis(text), pointer=pointer(text),
    )
