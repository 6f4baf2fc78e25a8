"""Synthetic definition questions for the evidence ranker (assistant.synthetic) and its listwise fit (no model)."""

import numpy as np

from assistant.synthetic import definition_questions
from assistant.learned import fit_evidence
from assistant.trainset import QuestionRow
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
