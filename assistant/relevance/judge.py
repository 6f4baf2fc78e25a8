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

Rule (:class:`AbstentionRule`, one implementation of the :class:`Judge` protocol): named_hit → answered. Else ``none`` when dense < ``none_dense`` and sentence < ``none_sentence``,
unless coverage ≥ ``covered`` (then ``weak``); ``weak`` when dense + sentence < ``weak_sum``; otherwise
answered. The coverage guard is for short questions: MiniLM scores "How are LLM judges evaluated?"
low against an abstract about "LLM-as-a-judge" evaluation (0.25), below the ``none`` thresholds,
though every content term is in it. It only lifts "nothing found" to "closest match", since short
questions of common words ("language models in different languages") are covered by chance.

:class:`LearnedJudge` is the other implementation (``calibration.abstention.learned = "v2"``): the
fitted judge (assistant.relevance.learned.BoostedJudge: logistic regression and boosted trees over
assistant.relevance.features.JUDGE_FEATURES), fitted by ``paper-assistant train`` on eval/train/train.jsonl
(never on dev.jsonl), with two cutoffs on its probability chosen by cross-validation, the same
follow-up and list rules around it, and one rule for what training lacks: a "What is X?" question
whose paper holds X is answered. Its cutoffs hold the refusal budget on the 2,000-paper index and on
simulated indexes of 40 and 300 papers alike (assistant.learning.train.choose_cutoffs). It is not the default:
on dev.jsonl (38 papers; questions paraphrased far from their abstracts, mean best dense 0.43, below
the training set's unanswerable mean 0.47) it refuses 19% of the answerable questions (11/58), and no
cutoff on its probability (nor on the rules' dense + sentence) refuses any ``none`` question while
refusing at most 3.4% of the answerable ones: the lowest-scored answerable questions score below every
``none`` question, on features that only a model reading question and abstract together (a
cross-encoder) or training questions written like dev's could tell apart.

Thresholds were calibrated on ``shared/eval/dev.jsonl`` (58 answerable vs 10 ``none`` questions,
onnx-int8 embeddings): the ``none`` thresholds are the largest that abstain on no answerable question
(20% of ``none`` abstained), ``weak_sum`` the largest that flags at most 10% of answerable ones (8.6%).
No ``none`` question of the dev set has coverage ≥ 0.8 (the highest is 0.77, answered anyway), so the
guard changes none of its verdicts. ``paper-assistant eval`` prints the trade-off across thresholds.
The ``none`` questions of the dev set name concepts close to the corpus, so the three numbers overlap
heavily between the classes.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Protocol


from assistant.evidence import RelevanceEvidence
from assistant.settings import AbstentionCalibration
from assistant.types import Verdict


def verdict_for(p: float, cutoffs: dict) -> Verdict:
    """The verdict of P(answers) ``p`` under a judge's two cutoffs (``none_below`` ≤ ``weak_below``)."""
    if p < cutoffs["none_below"]:
        return Verdict.none
    return Verdict.weak if p < cutoffs["weak_below"] else Verdict.answered


class Judge(Protocol):
    """Decides relevance from one evidence record. Nothing downstream amends its verdict."""

    def decide(self, ev: RelevanceEvidence | None) -> Verdict:
        """``answered`` | ``weak`` | ``none`` for one paper; None (nothing retrieved) → ``none``."""

    def named(self, ev: RelevanceEvidence) -> bool:
        """True when the question names something the paper holds (and, for a follow-up, the paper
        holds the user's own words): the paper is what the question is about."""


_ORDER = [Verdict.none, Verdict.weak, Verdict.answered]
_DEFAULTS = AbstentionCalibration()


class _FollowUpAndListRules:
    """The deterministic part every judge shares: nothing retrieved, a bare reference, the list bar,
    and a paper the user points at. A subclass gives :meth:`_score` (the relevance decision proper)
    and the field ``follow_up_coverage``."""

    follow_up_coverage: float

    def named(self, ev: RelevanceEvidence) -> bool:
        return ev.named_hit and (ev.own_coverage is None or ev.own_coverage >= self.follow_up_coverage)

    def decide(self, ev: RelevanceEvidence | None) -> Verdict:
        return self.explain(ev)[0]

    def explain(self, ev: RelevanceEvidence | None) -> tuple[Verdict, str]:
        """``(verdict, the rule that decided it)``; the rule names are :data:`JUDGE_RULES`."""
        if ev is None:
            return Verdict.none, "nothing retrieved"
        if ev.pointed_at and ev.bare_reference:
            return Verdict.answered, "bare reference"  # "tell me more about the second one": that paper alone
        if ev.list_share is not None and ev.list_share < ev.list_bar and not self.named(ev):
            # A paper holding a name the question names ("Which papers use GRPO?") is listed whatever
            # its share: it mentions the named thing once, the best paper throughout.
            return Verdict.none, "below the list bar"
        verdict, rule = self._score(ev)
        # The user points at a paper of an earlier answer: never "nothing found" for it.
        if ev.pointed_at and verdict == Verdict.none:
            return Verdict.weak, "pointed at"
        return verdict, rule

    def _score(self, ev: RelevanceEvidence) -> tuple[Verdict, str]:
        raise NotImplementedError


@dataclass(frozen=True)
class AbstentionRule(_FollowUpAndListRules):
    """The rule-based judge (see the module docstring); thresholds from ``Settings.calibration``."""

    none_dense: float = _DEFAULTS.none_dense
    none_sentence: float = _DEFAULTS.none_sentence
    weak_sum: float = _DEFAULTS.weak_sum
    covered: float = _DEFAULTS.covered
    follow_up_coverage: float = _DEFAULTS.follow_up_coverage

    def _score(self, ev: RelevanceEvidence) -> tuple[Verdict, str]:
        if self.named(ev):
            return Verdict.answered, "named" if ev.own_coverage is None else "named, own words held"
        if ev.dense < self.none_dense and ev.sentence < self.none_sentence:
            return (Verdict.weak, "coverage guard") if ev.coverage >= self.covered else (Verdict.none, "none thresholds")
        if ev.dense + ev.sentence < self.weak_sum:
            return Verdict.weak, "weak sum"
        return Verdict.answered, "above thresholds"


@dataclass(frozen=True)
class LearnedJudge(_FollowUpAndListRules):
    """The judge: the fitted relevance model (assistant.relevance.learned.LinearModel with cutoffs) and the
    deterministic follow-up and list rules (see the module docstring)."""

    model: object
    follow_up_coverage: float = _DEFAULTS.follow_up_coverage

    def probability(self, ev: RelevanceEvidence) -> float:
        """P(this paper answers the question), the model's; 0 without features (no sentences)."""
        return float(self.model.probability(ev.features)) if ev.features is not None else 0.0

    def _score(self, ev: RelevanceEvidence) -> tuple[Verdict, str]:
        # The training questions hold no "What is X?" question: the model reads its few words as a weak
        # match. A paper holding the name asked about is what the question is about.
        if ev.definition and (self.named(ev) or ev.pointed_at):  # "summarise it": the paper pointed at, as one named
            return Verdict.answered, "named, asked what it is"
        if ev.features is None:
            return Verdict.none, "no sentences"
        verdict = verdict_for(float(self.model.probability(ev.features)), self.model.cutoffs)
        return verdict, f"model: {verdict.value}"


@dataclass(frozen=True)
class CrossEncoderJudge(_FollowUpAndListRules):
    """The relevance-model judge (``calibration.relevance.model = "v2"``; opt-in, see docs/settings.md): the relevance
    model's calibrated probability (assistant.relevance.crossencoder) against two cutoffs fitted with it (``answered``;
    ``weak``, below which nothing is found), and the follow-up rules every judge shares. A list keeps the
    papers that reach the relative list bar and ``weak`` on their own probability, or with ``listed`` set,
    each paper whose own probability reaches it (:meth:`listed_paper`), nothing relative to the best."""

    answered: float
    weak: float
    listed: float | None = None
    """An absolute list cutoff on each paper's probability; None: a list keeps the papers that reach the
    relative list bar and whose own probability reaches ``weak`` (see docs/limitations.md: the list
    calibration on weakly labelled title-phrase lists reached only P 0.61 / R 0.59 in CV)."""
    veto: float = 0.0
    """Below ``weak``, a paper whose bi-encoder evidence ((dense + sentence cosine) / 2) reaches this is a
    closest match, not nothing found: the cross-encoder misreads questions worded far from their abstract,
    the embeddings less so (assistant.relevance.calibration.choose_cutoffs)."""
    follow_up_coverage: float = _DEFAULTS.follow_up_coverage

    def probability(self, ev: RelevanceEvidence) -> float:
        """The model's P(answers); 0 for a paper it did not read."""
        return float(ev.probability or 0.0)

    def listed_paper(self, ev: RelevanceEvidence) -> bool:
        """Whether a list lists this paper by the absolute cutoff: its own probability clears ``listed``."""
        return self.listed is not None and self.probability(ev) >= self.listed

    def _score(self, ev: RelevanceEvidence) -> tuple[Verdict, str]:
        # "What is Falcon?" with the Falcon paper found: it says what Falcon is (no calibration question asks so);
        # a follow-up naming its paper whose abstract holds the user's own words stays on it, answered.
        if ev.definition and (self.named(ev) or ev.pointed_at):  # "summarise it": the paper pointed at, as one named
            return Verdict.answered, "named, asked what it is"
        if ev.own_coverage is not None and self.named(ev):
            return Verdict.answered, "named, own words held"
        p = self.probability(ev)
        if p >= self.answered:
            return Verdict.answered, "cross-encoder: answered"
        if p >= self.weak:
            return Verdict.weak, "cross-encoder: weak"
        if self.named(ev):  # the paper the question names is found: on topic, whether or not it answers
            return Verdict.weak, "cross-encoder: none, paper named"
        if self.veto > 0 and (ev.dense + ev.sentence) / 2 >= self.veto:
            return Verdict.weak, "cross-encoder: none, embeddings close"
        return Verdict.none, "cross-encoder: none"


def list_judges(judge: Judge, topic: float | None, rules: Judge | None = None) -> tuple[Judge, Judge]:
    """``(members, topic)``: the judge of a list's papers and the one of whether its topic is present at all.
    With the relevance model's judge, the topic is present only when the best paper's P reaches ``topic`` (the
    calibration file's ``topic``: 90 % of the absent-topic list questions it was calibrated on list nothing; no
    veto, which would keep the near papers of an absent topic), and the papers are those the relative list bar
    and the ``rules`` judge (:class:`AbstentionRule`) admit, as without the model: a floor on each paper's own P
    instead cut dev's list recall from 0.93 to 0.71. Any other judge serves both."""
    if not isinstance(judge, CrossEncoderJudge):
        return judge, judge
    return rules or AbstentionRule(), dataclasses.replace(judge, veto=0.0, weak=max(judge.weak, topic or 0.0))


JUDGE_RULES = ("nothing retrieved", "cross-encoder: answered", "cross-encoder: weak", "cross-encoder: none",
               "cross-encoder: none, embeddings close", "cross-encoder: none, paper named",
 "bare reference", "below the list bar", "pointed at", "no sentences",
               "model: answered", "model: weak", "model: none", "named, asked what it is", "named",
               "named, own words held", "coverage guard", "none thresholds", "weak sum", "above thresholds")
"""Every rule :meth:`AbstentionRule.explain` or :meth:`LearnedJudge.explain` names (``paper-assistant eval`` counts how often each decides)."""
