"""Relevance: does any retrieved paper answer the question? One judge, one verdict.

Three outcomes (``Verdict``): ``answered``; ``weak`` ("closest match, may not answer"); ``none``
("no relevant abstract found"). The judge (:class:`LearnedJudge`, the :class:`Judge` protocol) reads
one :class:`RelevanceEvidence` record per retrieved paper. Its core is a learned classifier
(assistant.learned: logistic regression over assistant.features.JUDGE_FEATURES — cosines, BM25,
term coverage of the question and of its asking clause, names held, margins to the runner-up) fitted
by ``paper-assistant train`` on eval/train/train.jsonl over 2,000 abstracts, never on dev.jsonl, with
two cutoffs on its probability chosen by cross-validation (≤ 2 % of answerable training questions
refused, ≤ 8 % flagged). ``paper-assistant eval`` prints the trade-off across cutoffs.

Around it stay the deterministic rules no training question decides, each an input of the record,
never a later override: a follow-up that points at a paper of an earlier answer (``pointed_at``) is
never "nothing found" for it, and a bare reference ("tell me more about the second one") is answered;
a list candidate below the list's relative bar (``list_share`` < ``list_bar``) is not listed unless it
holds a name the question names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from assistant.question import FRAMING_TERMS
from assistant.settings import AbstentionCalibration
from assistant.types import VERDICT_TEXT, Verdict  # noqa: F401  (VERDICT_TEXT: re-exported)


@dataclass(frozen=True)
class RelevanceEvidence:
    """Everything the judge looks at for one retrieved paper: one record, one verdict.

    The first five are measured on the paper: best chunk cosine, best sentence cosine (to a list
    question's topic), BM25, whether it holds a name the question names, idf-weighted coverage of the
    question's content terms; ``features`` are what the learned judge reads. The rest say how the
    question relates to it, set by the step that knows (None / False when they do not apply):

    - ``own_coverage``: for a follow-up, the idf-weighted share of the user's own content terms
      (reference and framing words left out) the paper holds; the label appended to a follow-up
      ("… (OmniMoE)") is no name match unless the paper also holds the user's words;
    - ``pointed_at``: the follow-up resolves to this paper (the top of the ranking conditioned on an
      earlier answer, and cited by it); ``bare_reference``: and it only points back ("tell me more
      about the second one");
    - ``list_share`` / ``list_bar``: for a candidate of a list, its evidence relative to the pool's
      best (assistant.listing.bar_scores) and the share it must reach (``ListBar.relative_bar``).
    """

    dense: float
    sentence: float
    bm25: float
    named_hit: bool
    coverage: float = 0.0
    features: np.ndarray | None = None
    """The judge's features (assistant.features.judge_features) with this paper as the best match."""
    own_coverage: float | None = None
    pointed_at: bool = False
    bare_reference: bool = False
    list_share: float | None = None
    list_bar: float | None = None


class Judge(Protocol):
    """Decides relevance from one evidence record. Nothing downstream amends its verdict."""

    def decide(self, ev: RelevanceEvidence | None) -> Verdict:
        """``answered`` | ``weak`` | ``none`` for one paper; None (nothing retrieved) → ``none``."""

    def named(self, ev: RelevanceEvidence) -> bool:
        """True when the question names something the paper holds (and, for a follow-up, the paper
        holds the user's own words): the paper is what the question is about."""


@dataclass(frozen=True)
class LearnedJudge:
    """The judge: the fitted relevance model (assistant.learned.LinearModel with cutoffs) and the
    deterministic follow-up and list rules (see the module docstring)."""

    model: object
    follow_up_coverage: float = AbstentionCalibration().follow_up_coverage

    def named(self, ev: RelevanceEvidence) -> bool:
        return ev.named_hit and (ev.own_coverage is None or ev.own_coverage >= self.follow_up_coverage)

    def probability(self, ev: RelevanceEvidence) -> float:
        """P(this paper answers the question), the model's; 0 without features (no sentences)."""
        return float(self.model.probability(ev.features)) if ev.features is not None else 0.0

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
        if ev.features is None:
            return Verdict.none, "no sentences"
        verdict = self.model.verdict(ev.features)
        # The user points at a paper of an earlier answer: never "nothing found" for it.
        if ev.pointed_at and verdict == Verdict.none:
            return Verdict.weak, "pointed at"
        return verdict, f"model: {verdict.value}"


JUDGE_RULES = ("nothing retrieved", "bare reference", "below the list bar", "no sentences", "pointed at",
               "model: answered", "model: weak", "model: none")
"""Every rule :meth:`LearnedJudge.explain` names (``paper-assistant eval`` counts how often each decides)."""


def content_weights(weights: dict[str, float]) -> dict[str, float]:
    """``weights`` (stemmed term → weight, as assistant.evidence.term_weights) without framing words."""
    return {t: w for t, w in weights.items() if t not in FRAMING_TERMS}
