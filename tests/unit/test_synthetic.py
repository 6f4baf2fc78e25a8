"""Synthetic definition questions for the evidence ranker (assistant.learning.synthetic) and its listwise fit (no model)."""

import numpy as np

from assistant.learning.synthetic import definition_questions
from assistant.relevance.learned import fit_evidence
from assistant.learning.trainset import QuestionRow
from vectorstore.papers import Paper


def _paper(pid: str, text: str) -> Paper:
    return Paper(id=pid, text=text, title=pid)


def test_a_spelled_out_acronym_gives_a_question_whose_evidence_is_that_sentence():
    papers = [_paper("a", "Dose estimation is hard. We present the multinomial logit (MNL) estimator for it. It works."),
              _paper("b", "Robots move. We propose OmniMoE, a sparse mixture of experts. It is fast."),
              _paper("c", "Nothing here is named. It has no acronym at all.")]
    qs = definition_questions(papers)
    assert [(q["gold"], q["evidence"]) for q in qs] == [
        (["a"], "We present the multinomial logit (MNL) estimator for it."),
        (["b"], "We propose OmniMoE, a sparse mixture of experts.")]
    assert qs[0]["question"] == "What is MNL?" and qs[0]["kind"] == "synthetic"
    assert "stand for" not in qs[1]["question"]  # an introduced name is not an acronym to expand


def test_a_name_many_abstracts_hold_is_not_asked_about():
    papers = [_paper(f"p{i}", "We train it. Stochastic gradient descent (SGD) converges.") for i in range(4)]
    assert definition_questions(papers, max_papers=2) == []


def test_the_listwise_ranker_is_deterministic_and_puts_the_gold_sentence_first():
    rng = np.random.RandomState(0)
    rows = []
    for i in range(30):
        x = rng.normal(size=(6, 3)).astype(np.float32)
        gold = int(np.argmax(x[:, 0] + 0.1 * x[:, 1]))
        rows.append(QuestionRow(f"q{i}", "lookup", True, np.zeros(1), ["p"], "e", gold_x=x, gold_label=gold))
    first, again = fit_evidence(rows), fit_evidence(list(rows))
    assert first.to_json() == again.to_json()
    assert sum(int(np.argmax(first.score(r.gold_x))) == r.gold_label for r in rows) >= 27


def test_a_share_beside_a_measure_word_gives_a_quantity_question():
    from assistant.learning.synthetic import quantity_questions

    papers = [_paper("a", "Sampling is slow. We propose FlashGen, a sampler. FlashGen gives a 4.75x speedup over "
                          "diffusion. FlashGen is simple."),
              _paper("b", "We propose SlowNet, a model. SlowNet improves accuracy by 3%. SlowNet's accuracy rises by 5% "
                          "on MNIST.")]  # two sentences state an accuracy: the question would not say which
    qs = quantity_questions(papers)
    assert [(q["gold"], q["question"], q["evidence"]) for q in qs] == [
        (["a"], "What speedup does FlashGen achieve?", "FlashGen gives a 4.75x speedup over diffusion.")]


def test_the_boosted_ranker_sums_its_trees_as_sklearn_does_and_round_trips():
    from assistant.evidence.ranker import BoostedRanker, pack_trees, relative, tree_sum
    from assistant.learning.train import TrainSettings

    rng = np.random.RandomState(1)
    rows = []
    for i in range(40):
        x = rng.normal(size=(7, 3)).astype(np.float32)
        gold = int(np.argmax(x[:, 0] * x[:, 1]))  # an interaction a linear score cannot see
        rows.append(QuestionRow(f"q{i}", "lookup", True, np.zeros(1), ["p"], "e", gold_x=x, gold_label=gold))
    cfg = TrainSettings(evidence_trees=30, evidence_leaf=5)
    model = fit_evidence(rows, cfg)
    assert isinstance(model, BoostedRanker) and len(model.trees) == 30
    assert model.to_json() == fit_evidence(list(rows), cfg).to_json()
    from assistant.relevance.learned import LinearModel
    import json
    data = json.loads(model.to_json())
    again = BoostedRanker.from_dict(data, LinearModel.from_dict(data))
    x = rows[0].gold_x
    assert np.allclose(again.score(x), model.score(x))
    # One tree by hand: a stump sending column 0 <= 0.5 left (value −1) and the rest right (value 2).
    stump = ((0, 0.5, 1, 2, 0.0), (-1, 0.0, 0, 0, -1.0), (-1, 0.0, 0, 0, 2.0))
    assert tree_sum(pack_trees((stump, stump)), np.array([[0.2, 9.0], [0.7, -9.0]])).tolist() == [-2.0, 4.0]
    assert relative(np.array([[1.0], [3.0]])).tolist() == [[1.0, -2.0], [3.0, 0.0]]
    assert len(model.importances()) == 3 and abs(sum(v for _, v in model.importances()) - 1) < 0.01
