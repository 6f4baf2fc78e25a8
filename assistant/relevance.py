"""Relevance: does any retrieved paper answer the question? Verdicts, and the name rules retrieval shares.

Three outcomes (``Verdict``): ``answered``; ``weak`` ("closest match, may not answer"); ``none``
("no relevant abstract found"). The verdict is the learned relevance judge's
(:mod:`assistant.learned`, fitted by ``paper-assistant train`` on the training questions, never on
dev.jsonl) over the features of :func:`assistant.features.judge_features`; :class:`RelevanceEvidence`
carries, per retrieved paper, the numbers shown and used downstream (lists, runner-up citations)
and that paper's own verdict.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import Enum

from vectorstore.lexical import NAME

# ASCII boundaries, not \w: CJK characters are word characters, and "什么是SyPE？" names SyPE.
_WORD = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z][A-Za-z0-9_-]*[A-Za-z0-9](?![A-Za-z0-9_-])")
_COMMON_NAMES = {"LLM", "LLMs", "AI", "RL", "ML", "NLP", "GPU", "GPUs", "CPU", "API", "QA", "MoE", "VLM", "VLMs",
                 "LoRA", "ASR", "RAG", "3D", "2D", "CNN", "CNNs", "GAN", "GANs", "I", "II"}


FRAMING_TERMS = frozenset({
    "how", "what", "which", "why", "when", "where", "who", "whose", "doe", "do", "did", "is", "ar", "wa", "were",
    "has", "have", "can", "could", "would", "should", "there", "anyon", "ani", "use", "paper", "work", "research",
    "studi", "articl", "literatur", "exist", "stand",
})
"""Stemmed words that frame a question ("Is there work on …", "Has anyone studied …", "Which papers …")
rather than say what it is about; the BM25 tokenizer's stop list keeps them."""


class Verdict(str, Enum):
    answered = "answered"
    weak = "weak"
    none = "none"


VERDICT_TEXT = {
    Verdict.answered: "",
    Verdict.weak: "Closest match, may not answer the question.",
    Verdict.none: "No relevant abstract found in the indexed papers.",
}


@dataclass(frozen=True)
class RelevanceEvidence:
    """What is known about one retrieved paper's relevance (see assistant.features.PaperSignals)."""

    dense: float
    """Best chunk cosine to the question (MiniLM, in [-1, 1])."""
    sentence: float
    """Best sentence cosine to the question (to a list question's topic)."""
    bm25: float
    named_hit: bool
    """The question names something (acronym, CamelCase, digit-bearing token) that the paper holds."""
    coverage: float = 0.0
    """idf-weighted share of the question's content terms in the paper's title and abstract."""
    verdict: Verdict = Verdict.answered
    """The judge's verdict were this paper the best match."""
    p_answer: float = 1.0
    """The judge's probability that this paper answers (the verdict's input; cutoffs in the model file)."""


def spell_names(question: str, names: dict[str, str]) -> str:
    """``question`` with each word that is one of the corpus' names (``names``, lower case → spelling,
    from vectorstore.lexical.corpus_names) spelled as the corpus spells it: "what is omnimoe?" →
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


_TITLE_RUN = re.compile(r"(?<![\w-])(?:[A-Z][a-z]+ )+[A-Z][a-z]+(?![\w-])")
_OPENERS = {"What", "Which", "How", "Why", "When", "Where", "Who", "Is", "Are", "Do", "Does", "Can", "Could", "Compare",
            "Explain", "Describe", "List", "Find", "Show", "Tell", "Give", "Please", "In", "For", "The", "A", "An"}


def question_names(question: str) -> list[str]:
    """Name-like tokens of a question (acronyms, CamelCase, digit-bearing), generic ones dropped, and
    runs of capitalized words inside it ("Compare CacheEdit and World Shaper" → CacheEdit, World Shaper)."""
    found = [n.strip("-") for n in NAME.findall(question) if n.strip("-") not in _COMMON_NAMES and len(n) > 1]
    for run in _TITLE_RUN.findall(question):
        words = run.split()
        while words and words[0] in _OPENERS:  # "Compare World Shaper" → World Shaper
            words = words[1:]
        if len(words) >= 2:
            found.append(" ".join(words))
    return found


def names_in(names: list[str], text: str) -> bool:
    """True when any of ``names`` occurs in ``text`` as a whole token, maybe plural ("PINN" finds
    "PINNs"); a one-word name in any case ("SyPe" finds "SyPE"), a several-word one as capitalized
    ("World Shaper", not the phrase "reinforcement learning" for "Reinforcement Learning")."""
    return any(re.search(rf"(?<![A-Za-z0-9_]){re.escape(n)}s?(?![A-Za-z0-9_])", text, 0 if " " in n else re.I)
               for n in names)
