"""The judge's simulated training copies (assistant.learning.train): small indexes hold each question's gold and
near papers, a copy shares its question's fold, and the cutoffs hold the refusal budget on every index."""

import numpy as np
import pytest

from assistant.relevance.features import JUDGE_FEATURES
from assistant.learning.train import TrainSettings, _folds, choose_cutoffs
from assistant.learning.trainset import QuestionRow, simulated_indexes, trains_on

IDS = [f"p{i:03d}" for i in range(200)]
QS = [{"qid": f"q{i}", "kind": "lookup" if i % 3 else "none", "gold": [f"p{i:03d}"] if i % 3 else [],
       "near": [] if i % 3 else [f"p{199 - i:03d}"]} for i in range(50)]


def _row(qid: str, kind: str, answerable: bool, origin: str = "", variant: str = "") -> QuestionRow:
    return QuestionRow(qid, kind, answerable, np.zeros(len(JUDGE_FEATURES), np.float32), [], origin=origin, variant=variant)


def test_a_small_index_holds_its_questions_gold_and_near_papers_and_is_filled_to_size():
    groups = simulated_indexes(QS, IDS, size=40, group=16, seed=0)
    assert sorted(i for _, members in groups for i in members) == list(range(50))  # every question once
    for allowed, members in groups:
        assert len(allowed) == 40
        need = {p for i in members for p in QS[i]["gold"] + QS[i]["near"]}
        assert need <= allowed
    assert groups == simulated_indexes(QS, IDS, size=40, group=16, seed=0)  # same seed, same indexes
    assert groups != simulated_indexes(QS, IDS, size=40, group=16, seed=1)


def test_a_simulated_copy_shares_the_fold_of_the_question_it_copies():
    rows = [_row(q["qid"], q["kind"], bool(q["gold"])) for q in QS]
    copies = [_row(r.qid, r.kind, False, origin=r.qid, variant="held-out") for r in rows if r.answerable]
    copies += [_row(r.qid, r.kind, r.answerable, origin=r.qid, variant="small-40") for r in rows]
    fold, vfold = _folds(rows, 5, 0, copies)
    of = {r.qid: f for r, f in zip(rows, fold)}
    assert [of[c.origin] for c in copies] == vfold.tolist()
    assert sorted(set(fold.tolist())) == [0, 1, 2, 3, 4]
    assert (fold == _folds(rows, 5, 0)[0]).all()  # copies do not move the questions' own folds


def test_the_cutoffs_hold_the_budget_on_the_strictest_index():
    """Each cutoff is the largest that refuses (flags) at most its rate of an index's answerable questions,
    midway between the last one allowed below it and the next, and the smallest over the indexes."""
    # Whole index: answerable at 0.50..0.99; a small index: answerable at 0.30..0.79 (shifted down), 0.01 apart.
    whole = [_row(f"a{i}", "lookup", True) for i in range(50)]
    small = [_row(f"a{i}", "lookup", True, origin=f"a{i}", variant="small-40") for i in range(50)]
    nones = [_row(f"n{i}", "none", False) for i in range(10)]  # unanswerable questions set no cutoff
    p = np.r_[np.linspace(0.5, 0.99, 50), np.linspace(0.3, 0.79, 50), np.zeros(10)]
    cfg = TrainSettings(refuse_rate=0.02, flag_rate=0.08)
    cut = choose_cutoffs(whole + small + nones, p, cfg)
    # 2% of 50 = 1 refused on the small index (0.30 < 0.305 ≤ 0.31); 8% = 4 flagged (0.30..0.33 < 0.335).
    assert cut == {"none_below": pytest.approx(0.305), "weak_below": pytest.approx(0.335), "refuse_rate": 0.02,
                   "flag_rate": 0.08}
    assert (p[50:100] < cut["none_below"]).sum() == 1 and (p[50:100] < cut["weak_below"]).sum() == 4
    assert (p[:50] < cut["weak_below"]).sum() == 0
    alone = choose_cutoffs(whole, p[:50], cfg)  # the whole index alone: the same counts of its own questions
    assert (alone["none_below"], alone["weak_below"]) == (pytest.approx(0.505), pytest.approx(0.535))
    strict = choose_cutoffs(whole, p[:50], TrainSettings(refuse_rate=0.0, flag_rate=0.0))
    assert strict["none_below"] == strict["weak_below"] == pytest.approx(0.5)  # none refused: the lowest itself


def test_what_the_judge_is_fitted_on():
    cfg = TrainSettings()
    assert not trains_on(_row("a", "lookup", True, "a", "small-40"), cfg)
    assert trains_on(_row("a", "lookup", True, "a", "small-40"), TrainSettings(train_on_small=True))
    assert trains_on(_row("a", "lookup", False, "a", "held-out"), TrainSettings(held_out=True))
    assert not trains_on(_row("a", "lookup", False, "a", "small-40 held-out"), TrainSettings(train_on_small=True))
