"""The learned relevance judge: one verdict from one evidence record (no encoder, no index).

The learned part is replaced here by a one-feature model (P rises with the top paper's dense cosine),
so the deterministic rules around it are checked on their own; the shipped model is checked to load."""

import dataclasses

import numpy as np

from assistant.relevance.features import JUDGE_FEATURES
from assistant.relevance.learned import BoostedJudge, LinearModel, load_model, model_path
from assistant.relevance.judge import LearnedJudge, RelevanceEvidence, Verdict

_K = len(JUDGE_FEATURES)
_COEF = np.zeros(_K)
_COEF[JUDGE_FEATURES.index("dense")] = 20.0
MODEL = LinearModel("judge", 1, JUDGE_FEATURES, np.zeros(_K), np.ones(_K), _COEF, -7.0,
                    {"none_below": 0.2, "weak_below": 0.6})  # P = σ(20·dense − 7): none < 0.28 ≤ weak < 0.37 ≤ answered
JUDGE = LearnedJudge(MODEL)


def _ev(dense: float, **kw) -> RelevanceEvidence:
    x = np.zeros(_K, dtype=np.float32)
    x[JUDGE_FEATURES.index("dense")] = dense
    return RelevanceEvidence(dense=dense, sentence=dense, bm25=0.0, named_hit=False, features=x, **kw)


FAR, BORDER, CLOSE = _ev(0.1), _ev(0.33), _ev(0.5)


def test_the_model_and_its_cutoffs_give_the_three_verdicts():
    assert JUDGE.decide(None) == Verdict.none
    assert JUDGE.decide(FAR) == Verdict.none
    assert JUDGE.decide(BORDER) == Verdict.weak
    assert JUDGE.decide(CLOSE) == Verdict.answered
    assert JUDGE.decide(dataclasses.replace(CLOSE, features=None)) == Verdict.none  # a paper with no sentences


def test_a_named_hit_counts_unless_a_follow_up_paper_lacks_the_users_words():
    named = dataclasses.replace(FAR, named_hit=True)
    assert JUDGE.named(named) and JUDGE.named(dataclasses.replace(named, own_coverage=0.6))
    assert not JUDGE.named(dataclasses.replace(named, own_coverage=0.2))


def test_a_paper_pointed_at_is_never_nothing_found_and_a_bare_reference_answers():
    pointed = dataclasses.replace(FAR, pointed_at=True)
    assert JUDGE.decide(pointed) == Verdict.weak
    assert JUDGE.decide(dataclasses.replace(pointed, bare_reference=True)) == Verdict.answered
    assert JUDGE.decide(dataclasses.replace(CLOSE, pointed_at=True)) == Verdict.answered


def test_a_list_candidate_below_the_bar_is_out_unless_it_holds_the_name():
    below = dataclasses.replace(CLOSE, list_share=0.5, list_bar=0.62)
    assert JUDGE.decide(below) == Verdict.none
    assert JUDGE.decide(dataclasses.replace(below, list_share=0.7)) == Verdict.answered
    assert JUDGE.decide(dataclasses.replace(below, named_hit=True)) == Verdict.answered
    # Above the bar, a paper that is 'nothing found' on its own evidence is still out.
    assert JUDGE.decide(dataclasses.replace(FAR, list_share=0.9, list_bar=0.62)) == Verdict.none


def test_a_what_is_x_question_whose_paper_holds_x_is_answered_whatever_the_model():
    # The training questions hold no definition question; the model alone read "What is SyPE?" as weak.
    asked = dataclasses.replace(FAR, named_hit=True, definition=True)
    assert JUDGE.explain(asked) == (Verdict.answered, "named, asked what it is")
    assert JUDGE.decide(dataclasses.replace(FAR, definition=True)) == Verdict.none  # X is not in the paper
    assert JUDGE.decide(dataclasses.replace(FAR, named_hit=True)) == Verdict.none  # a detail of X, not what X is


def _stump(feature: int, threshold: float, low: float, high: float) -> tuple:
    return ((feature, threshold, 1, 2, 0.0), (-1, 0.0, 0, 0, low), (-1, 0.0, 0, 0, high))


def test_the_boosted_judge_averages_its_linear_and_tree_halves():
    linear = LinearModel("judge", 2, JUDGE_FEATURES, np.zeros(_K), np.ones(_K), np.zeros(_K), 0.0, {})  # σ(0) = 0.5
    d = JUDGE_FEATURES.index("dense")
    model = BoostedJudge(linear, -1.0, (_stump(d, 0.3, -1.0, 3.0), _stump(d, 0.6, 0.0, 1.0)),
                         {"none_below": 0.35, "weak_below": 0.6}, tuple(float(i == d) for i in range(_K)))
    x = np.zeros((3, _K))
    x[:, d] = [0.1, 0.5, 0.9]  # raw tree scores −2, 2, 3
    sig = 1 / (1 + np.exp(-np.array([-2.0, 2.0, 3.0])))
    assert np.allclose(model.probability(x), (0.5 + sig) / 2)
    assert [model.verdict(r) for r in x] == [Verdict.none, Verdict.answered, Verdict.answered]
    assert model.importances()[0][0] == "dense"
    again = BoostedJudge.from_dict(__import__("json").loads(model.to_json()))
    assert again.to_json() == model.to_json() and np.allclose(again.probability(x), model.probability(x))


def test_the_shipped_models_load_with_ordered_cutoffs_and_round_trip():
    judge = load_model("judge-v2")
    ranker = load_model("evidence-v3")
    assert isinstance(judge, BoostedJudge) and len(judge.trees) == 100
    assert judge.features == JUDGE_FEATURES and 0 < judge.cutoffs["none_below"] <= judge.cutoffs["weak_below"] < 1
    assert BoostedJudge.from_dict(__import__("json").loads(judge.to_json())).to_json() == judge.to_json()
    assert ranker.to_json() == model_path("evidence-v3").read_text() and len(ranker.trees) == 200
