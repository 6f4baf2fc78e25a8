"""The cross-encoder judge and the calibration arithmetic around it (no model: numbers in, verdicts out)."""

from __future__ import annotations

import math

import pytest

from assistant.relevance.crossencoder import STACK_FEATURES, stack_probability
from assistant.relevance.calibration import verdict_of, calibrate, choose_cutoffs, fit_stack, list_cutoff, top_probability
from assistant.learning.crossencoder_fit import FitSettings
from assistant.relevance.judge import CrossEncoderJudge, RelevanceEvidence, Verdict

JUDGE = CrossEncoderJudge(answered=0.3, weak=0.1, listed=0.5)


def ev(p: float | None, **kw) -> RelevanceEvidence:
    return RelevanceEvidence(dense=0.5, sentence=0.5, bm25=1.0, named_hit=False, probability=p, **kw)


@pytest.mark.parametrize("p, verdict", [(0.9, Verdict.answered), (0.3, Verdict.answered), (0.29, Verdict.weak),
                                        (0.1, Verdict.weak), (0.099, Verdict.none), (None, Verdict.none)])
def test_two_cutoffs_on_the_probability_decide_the_verdict(p, verdict):
    assert JUDGE.decide(ev(p)) == verdict


def test_nothing_retrieved_and_a_paper_pointed_at():
    assert JUDGE.decide(None) == Verdict.none
    assert JUDGE.decide(ev(0.0, pointed_at=True)) == Verdict.weak  # never "nothing found" for the paper pointed at
    assert JUDGE.decide(ev(0.0, pointed_at=True, bare_reference=True)) == Verdict.answered


def test_list_membership_is_absolute_not_relative_to_the_best():
    # The same paper is listed or not by its own probability, whatever else is in the pool.
    assert JUDGE.listed_paper(ev(0.5)) and not JUDGE.listed_paper(ev(0.49))


def test_the_stacked_calibration_recovers_known_weights():
    """Labels drawn (seeded) from P = σ(2·logit + 1.5·sentence − 1): the fit finds those weights within
    sampling error (3,000 papers) and gives the other features next to none."""
    import random

    rng = random.Random(0)
    rows = []
    for _ in range(300):
        logits = [rng.gauss(0, 1.5) for _ in range(10)]
        sentence = [rng.gauss(0, 1) for _ in range(10)]
        dense = [rng.gauss(0, 1) for _ in range(10)]
        labels = [int(rng.random() < 1 / (1 + math.exp(-(2 * z + 1.5 * s - 1)))) for z, s in zip(logits, sentence)]
        rows.append({"logits": logits, "dense": dense, "sentence": sentence, "named": [int(rng.random() < 0.3) for _ in range(10)],
                     "labels": labels, "answerable": any(labels)})
    stack = fit_stack(rows, C=1e4)
    w = {f: c / s for f, c, s in zip(STACK_FEATURES, stack["coef"], stack["scale"])}  # per raw unit
    assert abs(w["logit"] - 2.0) < 0.3 and abs(w["sentence"] - 1.5) < 0.3
    assert abs(w["dense"]) < 0.25 and abs(w["named"]) < 0.6
    x = [[0.0, 0.0, 0.0, 1.0]]
    p = float(stack_probability(x, stack)[0])
    assert abs(p - 1 / (1 + math.exp(1))) < 0.08 and len(x[0]) == len(STACK_FEATURES)


_PAIR = {"dense": [0.5, 0.5], "sentence": [0.5, 0.5], "named": [0, 0]}
LOGIT_ONLY = {"coef": [1.0, 0.0, 0.0, 0.0], "intercept": 0.0, "mean": [0.0] * 4, "scale": [1.0] * 4}
"""A calibration that reads the logit alone: P = σ(logit)."""


_FAR = {"dense": [0.2, 0.2], "sentence": [0.2, 0.2], "named": [0, 0]}
"""Bi-encoder evidence of an unanswerable question's papers: far below the answerable ones' 0.5."""


def _rows(answerable: list[float], none: list[float]) -> list[dict]:
    return ([{"logits": [z, z - 3], "labels": [1, 0], "answerable": True, **_PAIR} for z in answerable]
            + [{"logits": [z, z - 3], "labels": [0, 0], "answerable": False, **_FAR} for z in none])


def test_cutoffs_refuse_at_most_the_budget_of_answerable_questions():
    rows = _rows([x / 10 for x in range(0, 100)], [x / 10 - 5 for x in range(0, 50)])
    cfg = FitSettings(refuse_rate=0.02, flag_rate=0.08)
    cut = choose_cutoffs(rows, LOGIT_ONLY, cfg)
    refused = [r for r in rows if r["answerable"] and top_probability(r, LOGIT_ONLY) < cut["weak"]]
    flagged = [r for r in rows if r["answerable"] and top_probability(r, LOGIT_ONLY) < cut["answered"]]
    # The largest cutoffs within the budget: exactly 2% (8%) of the 100 answerable questions fall below them,
    # just under the first one kept (logit 0.2, and 0.8 for 'answered').
    assert len(refused) == 2 and len(flagged) == 8 and cut["weak"] <= cut["answered"]
    sigma = lambda z: 1 / (1 + math.exp(-z))  # noqa: E731
    assert cut["weak"] == pytest.approx(sigma(0.2), abs=2e-6) and cut["weak"] < sigma(0.2)
    assert cut["answered"] == pytest.approx(sigma(0.8), abs=2e-6) and cut["answered"] < sigma(0.8)
    # The veto is the answerable questions' bi-encoder evidence (all 0.5 here): below 'weak', a paper the
    # embeddings find that close is a closest match, one far from the question nothing found.
    assert abs(cut["veto"] - 0.5) < 1e-3
    low = {"logits": [-9.0, -12.0], "labels": [0, 0], "answerable": False}
    assert verdict_of({**low, **_FAR}, LOGIT_ONLY, cut) == "none" and verdict_of({**low, **_PAIR}, LOGIT_ONLY, cut) == "weak"
    stack, cut, cv = calibrate(rows, cfg)
    # Out of fold the budget holds within a question or two of each fold's 30; most 'none' are refused.
    assert cv["answerable_refused"] <= 0.07 and cv["none_refused"] > 0.5


def test_the_list_cutoff_is_the_best_f1_on_held_out_lists():
    pair = {k: v * 2 for k, v in _PAIR.items()}
    rows = [{"logits": [4.0, 3.0, -1.0, -4.0], "labels": [1, 1, 0, 0], **pair} for _ in range(10)]
    cut, cv = list_cutoff(rows, LOGIT_ONLY, FitSettings())
    # Listed papers have logits 4 and 3, the others -1 and -4: the best-F1 cutoff separates σ(-1) from σ(3).
    assert 1 / (1 + math.exp(1.0)) < cut <= 1 / (1 + math.exp(-3.0))
    assert cv["precision"] == 1.0 and cv["recall"] == 1.0 and cv["phrases"] == 10
