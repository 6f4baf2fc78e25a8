"""The expected answer type of a question (assistant.question.analysis.answer_type) and what a sentence can
answer (assistant.evidence.cues.sentence_answer_types): tables, no model."""

import pytest

from assistant.evidence.answer_types import new_names, sentence_answer_types
from assistant.question.analysis import analyze, answer_type
from assistant.question.answer_types import ANSWER_TYPES, asking_clause


@pytest.mark.parametrize("question, expected", [
    ("A detector trained in hours; how many Atari games was it validated on?", "quantity"),
    ("What top-1 accuracy does CLIM reach after fine-tuning on 1% of the labels?", "quantity"),
    ("what does it cost in accuracy?", "quantity"),
    ("Brownian interval speedup over previous Brownian motion reconstruction", "quantity"),
    ("which datasets did REDO use to evaluate its reconstruction?", "name"),
    ("What is that mechanism called?", "name"),
    ("what was the biggest dataset?", "name"),
    ("DYffusion spatiotemporal forecasting evaluation domains", "name"),
    ("what explains the training instability of Instance Normalization?", "reason"),
    ("Why does pruning help?", "reason"),
    ("How does E3T construct the partner policy?", "manner"),
    ("when batches are small?", "condition"),
    ("Is it faster than PEER?", "yes_no"),
    ("what did it conclude?", "other"),
])
def test_answer_type_of_the_asking_clause(question, expected):
    assert answer_type(question) == expected


def test_a_definition_question_is_typed_definition_by_analyze():
    assert analyze("What does CABS stand for?").answer_type == "definition"


ONE_OF_EACH = {
    "quantity": "How many Atari games was it validated on?", "name": "Which datasets did REDO use?",
    "definition": "What is SyPE?", "reason": "Why does pruning help?", "manner": "How does E3T construct the policy?",
    "condition": "When do batches get small?", "yes_no": "Is it faster than PEER?",
    "paper": "Which work makes mixture-of-experts layers faster?", "other": "what did it conclude?",
}


def test_every_type_is_listed():
    """ANSWER_TYPES lists exactly the types a question gets (one question of each here), every type the
    sentence side can answer is listed, and each type that a sentence can match has its evidence-ranker
    feature (``type_<t>``)."""
    from assistant.evidence import SENTENCE_FEATURES

    assert {t: analyze(q).answer_type for t, q in ONE_OF_EACH.items()} == {t: t for t in ONE_OF_EACH}
    assert set(ANSWER_TYPES) == set(ONE_OF_EACH) and len(ANSWER_TYPES) == len(set(ANSWER_TYPES))
    q = analyze("What does CABS stand for, and how many points does it gain when batches are small?")
    said = sentence_answer_types("We introduce CABS (Clinical Abnormality Benchmarking Substrate) on ImageNet: "
                                 "it gains 4 points because, when batches are small, it is computed via sampling.", q)
    assert said == set(ANSWER_TYPES) - {"paper"}  # any sentence of a paper shows the paper: no sentence type
    typed = {f[len("type_"):] for f in SENTENCE_FEATURES if f.startswith("type_")}
    assert typed == set(ANSWER_TYPES) - {"yes_no", "other", "paper"}  # every statement answers those two


def test_asking_clause_starts_at_the_last_question_word():
    assert asking_clause("A method that drops tokens. Which benchmarks did it use?") == "Which benchmarks did it use?"


def test_a_sentence_with_a_new_figure_holds_a_quantity():
    q = analyze("How many Atari games was it validated on?")
    assert "quantity" in sentence_answer_types("Experimental results across 61 Atari games validate our claim.", q)


def test_a_figure_the_question_states_is_no_answer():
    q = analyze("How many of the 61 games did it win?")
    assert "quantity" not in sentence_answer_types("We evaluate on 61 games.", q)


def test_names_the_question_does_not_hold_are_candidate_answers():
    q = analyze("which datasets did REDO use?")
    text = "We study REDO on synthetic RGBD video datasets SAIL-VOS and DeformingThings4D++."
    assert new_names(text, q) == ["RGBD", "SAIL-VOS", "DeformingThings4D"]


def test_spelling_out_the_asked_name_answers_a_definition():
    q = analyze("What does CABS stand for?")
    assert "definition" in sentence_answer_types("We introduce the Clinical Abnormality Benchmarking Substrate (CABS).", q)


def test_a_question_asking_which_paper_wants_the_paper_not_a_name_in_it():
    assert answer_type("Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?") == "paper"
    assert answer_type("which existing ensemble method did it beat?") == "name"
