"""The relevance judge's features that read what kind of answer is asked and how retrieval's scores
spread (no encoder, no index)."""

import numpy as np

from assistant.evidence.cues import question_cues
from assistant.evidence.sentences import Sentence
from assistant.relevance.features import JUDGE_FEATURES, judge_features, paper_signals
from assistant.question.analysis import analyze

STATES_NO_SCORE = ["We propose GN-Transformer, which fuses the AST and code tokens.",
                   "Experiments show that it outperforms prior models on code summarization."]
STATES_A_SCORE = [*STATES_NO_SCORE, "It reaches a BLEU score of 47.3 on the Java benchmark."]


def _signals(question: str, sentences: list[str], dense: float = 0.6):
    cues = question_cues(analyze(question), None)
    cos = np.full(len(sentences), dense, dtype=np.float32)
    sents = [Sentence("p", s, 0, len(s)) for s in sentences]
    return cues, paper_signals(cues, dense, 5.0, " ".join(sentences), sents, cos)


def test_a_figure_asked_of_a_paper_that_states_none_is_a_missing_answer_type():
    q = "What BLEU score did GN-Transformer get on code summarization?"
    assert _signals(q, STATES_NO_SCORE)[1].answer_type_missing == 1.0
    assert _signals(q, STATES_A_SCORE)[1].answer_type_missing == 0.0
    # A question that asks no figure or name never misses one.
    assert _signals("How does GN-Transformer fuse the AST and code tokens?", STATES_NO_SCORE)[1].answer_type_missing == 0.0


def test_spread_is_the_top_papers_dense_above_the_mean_of_the_others():
    cues, top = _signals("What BLEU score did GN-Transformer get on code summarization?", STATES_NO_SCORE, 0.7)
    others = [_signals("x", STATES_A_SCORE, d)[1] for d in (0.4, 0.2)]
    x = judge_features(cues, [top, *others])
    assert np.isclose(x[JUDGE_FEATURES.index("spread")], 0.7 - 0.3)
    assert x[JUDGE_FEATURES.index("answer_type_missing")] == 1.0
    assert judge_features(cues, [top])[JUDGE_FEATURES.index("spread")] == 0.0  # nothing to compare with
