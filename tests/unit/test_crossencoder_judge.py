"""The cross-encoder judge and the calibration arithmetic around it (no model: numbers in, verdicts out)."""

from __future__ import annotations

import math

import pytest

from assistant.crossencoder_calibration import calibrate, choose_cutoffs, list_cutoff, platt, top_probability
from assistant.crossencoder_fit import FitSettings
from assistant.relevance import CrossEncoderJudge, RelevanceEvidence, Verdict

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


def test_platt_scaling_recovers_a_known_slope():
    """Labels drawn (seeded) from P = σ(2·logit): the fit finds slope 2 and intercept 0 within sampling error
    (1,001 samples: a = 2.00, b = 0.23)."""
    import random

    rng = random.Random(0)
    logits = [x / 100 for x in range(-500, 501)]
    labels = [int(rng.random() < 1 / (1 + math.exp(-2 * z))) for z in logits]
    a, b = platt(logits, labels)
    assert abs(a - 2.0) < 0.3 and abs(b) < 0.4


def _rows(answerable: list[float], none: list[float]) -> list[dict]:
    return ([{"logits": [z, z - 3], "labels": [1, 0], "answerable": True} for z in answerable]
            + [{"logits": [z, z - 3], "labels": [0, 0], "answerable": False} for z in none])


def test_cutoffs_refuse_at_most_the_budget_of_answerable_questions():
    rows = _rows([x / 10 for x in range(0, 100)], [x / 10 - 5 for x in range(0, 50)])
    cfg = FitSettings(refuse_rate=0.02, flag_rate=0.08)
    cut = choose_cutoffs(rows, 1.0, 0.0, cfg)
    refused = [r for r in rows if r["answerable"] and top_probability(r, 1.0, 0.0) < cut["weak"]]
    flagged = [r for r in rows if r["answerable"] and top_probability(r, 1.0, 0.0) < cut["answered"]]
    assert len(refused) <= 2 and len(flagged) <= 8 and cut["weak"] <= cut["answered"]
    a, b, cut, cv = calibrate(rows, cfg)
    # Out of fold the budget holds within a question or two of each fold's 30; most 'none' are refused.
    assert cv["answerable_refused"] <= 0.07 and cv["none_refused"] > 0.5


def test_the_list_cutoff_is_the_best_f1_on_held_out_lists():
    rows = [{"logits": [4.0, 3.0, -1.0, -4.0], "labels": [1, 1, 0, 0]} for _ in range(10)]
    cut, cv = list_cutoff(rows, 1.0, 0.0, FitSettings())
    # Listed papers have logits 4 and 3, the others -1 and -4: the best-F1 cutoff separates σ(-1) from σ(3).
    assert 1 / (1 + math.exp(1.0)) < cut <= 1 / (1 + math.exp(-3.0))
    assert cv["precision"] == 1.0 and cv["recall"] == 1.0 and cv["phrases"] == 10
