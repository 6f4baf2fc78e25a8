"""Abstention: does any retrieved paper answer the question?

Three outcomes (``Verdict``): ``answered``; ``weak`` ("closest match, may not answer"); ``none``
("no relevant abstract found"). The evidence for the decision is plain numbers about the best
paper, so the rule is inspectable and the eval can sweep its thresholds:

- ``dense``: best chunk cosine similarity of the top paper (MiniLM, in [-1, 1]);
- ``sentence``: best single-sentence cosine similarity within the top paper (the contextual sentence
  vectors stored at ingest); for a list question ("Which papers …") measured against the topic alone,
  without the lead-in;
- ``named_hit``: the question names something (an acronym, a CamelCase or digit-bearing token) that
  occurs verbatim in the top paper. A named thing is strong evidence even when the dense score is
  near zero, as it is for bare acronym questions ("What is DAAM?").

- ``coverage``: the idf-weighted share of the question's content terms (stemmed; framing words such
  as "which", "papers", "is there work" left out, see ``FRAMING_TERMS``) that occur in the top paper.

Rule: named_hit → answered. Else ``none`` when dense < ``none_dense`` and sentence < ``none_sentence``,
unless coverage ≥ ``covered`` (then ``weak``); ``weak`` when dense + sentence < ``weak_sum``; otherwise
answered. The coverage guard is for short questions: MiniLM scores "How are LLM judges evaluated?"
low against an abstract about "LLM-as-a-judge" evaluation (0.25), below the ``none`` thresholds,
though every content term is in it. It only lifts "nothing found" to "closest match", since short
questions of common words ("language models in different languages") are covered by chance.

Thresholds were calibrated on ``shared/eval/dev.jsonl`` (58 answerable vs 10 ``none`` questions,
onnx-int8 embeddings): the ``none`` thresholds are the largest that abstain on no answerable question
(20% of ``none`` abstained), ``weak_sum`` the largest that flags at most 10% of answerable ones (8.6%).
No ``none`` question of the dev set has coverage ≥ 0.8 (the highest is 0.77, answered anyway), so the
guard changes none of its verdicts. ``paper-assistant eval`` prints the trade-off across thresholds.
The ``none`` questions of the dev set name concepts close to the corpus, so the three numbers overlap
heavily between the classes.
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
    """Numbers the abstention rule looks at, for the top retrieved paper."""

    dense: float
    sentence: float
    bm25: float
    named_hit: bool
    coverage: float = 0.0


@dataclass(frozen=True)
class AbstentionRule:
    """Thresholds of the abstention rule (see module docstring)."""

    none_dense: float = 0.28
    none_sentence: float = 0.335
    weak_sum: float = 0.72
    covered: float = 0.8

    def decide(self, ev: RelevanceEvidence | None) -> Verdict:
        """The verdict for the top paper's evidence; None (nothing retrieved) → Verdict.none."""
        if ev is None:
            return Verdict.none
        if ev.named_hit:
            return Verdict.answered
        if ev.dense < self.none_dense and ev.sentence < self.none_sentence:
            return Verdict.weak if ev.coverage >= self.covered else Verdict.none
        if ev.dense + ev.sentence < self.weak_sum:
            return Verdict.weak
        return Verdict.answered


def content_weights(weights: dict[str, float]) -> dict[str, float]:
    """``weights`` (stemmed term → weight, as assistant.evidence.term_weights) without framing words."""
    return {t: w for t, w in weights.items() if t not in FRAMING_TERMS}


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
