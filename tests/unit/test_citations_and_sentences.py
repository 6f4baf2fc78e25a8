"""Citation parsing, sentence cues and the shipped evidence ranker on hand-made sentences (no embedding model)."""

import pytest


@pytest.mark.parametrize("text, valid, expected", [
    ("Two papers study it [1-2].", {1, 2}, "Two papers study it [1, 2]."),
    ("Both [2–3] and [1, 3-4].", {1, 2, 3, 4}, "Both [1, 2] and [3, 2, 4]."),
    ("Saved as .safetensors files [1], to .9 and pip install .[dev] [7].", {1},
     "Saved as .safetensors files [1], to .9 and pip install .[dev]."),
    ("- item [1]\n    - nested  item [9]\n```\nx  =  1\n```", {1}, "- item [1]\n    - nested  item\n```\nx  =  1\n```"),
    ("A [7]. B [1] c [7] d.", {1}, "A. B [1] c d."),
])
def test_citation_ranges_count_and_spacing_changes_only_where_a_marker_went(text, valid, expected):
    from assistant.answer.citations import CitationRewriter

    whole = CitationRewriter({n: f"p{n}" for n in valid})
    streamed = CitationRewriter({n: f"p{n}" for n in valid})
    pieces = "".join(streamed.feed(text[i:i + 3]) for i in range(0, len(text), 3)) + streamed.flush()
    assert whole.feed(text) + whole.flush() == pieces == expected


def _features(question: str, texts: list[str]):
    """The evidence ranker's features of ``texts``, one abstract's sentences sharing one vector: only their words differ."""
    import numpy as np

    from assistant.evidence.cues import question_cues
    from assistant.evidence.features import sentence_features
    from assistant.evidence.sentences import Sentence
    from assistant.question.analysis import analyze

    vecs = np.tile(np.eye(1, 8, dtype=np.float32), (len(texts), 1))
    sents = [Sentence("p", t, 0, len(t)) for t in texts]
    return sentence_features(question_cues(analyze(question), None), np.eye(1, 8, dtype=np.float32)[0], sents, vecs)


def _ranked(question: str, texts: list[str]):
    """The shipped evidence ranker's scores for ``texts`` (:func:`_features`)."""
    from assistant.relevance.learned import load_model
    from assistant.settings import Calibration

    return load_model(f"evidence-{Calibration().sentences.learned}").score(_features(question, texts))


def test_the_learned_ranker_scores_a_code_pointer_below_a_claim_with_the_same_vector():
    scores = _ranked("what does it introduce", ["We introduce a sparse router that cuts inference latency tenfold.",
                                                "Our code is available at http://127.0.0.1/example/project."])
    assert scores[0] > scores[1]


def test_the_quantity_feature_ignores_a_number_inside_a_modifier():
    """"360-degree" names a kind of image; only "which three …"-style numbers ask for a count."""
    from assistant.evidence.features import SENTENCE_FEATURES

    texts = ["The system supports five distinct editing operations in one model.",
             "It enables flexible 360° scene creation with unified editing control."]
    x = _features("How many kinds of edits does the 360-degree panorama editing system handle?", texts)
    col = SENTENCE_FEATURES.index("quantity_figure")
    assert x[0, col] == 1.0 and x[1, col] == 0.0


def test_the_learned_ranker_quotes_the_sentence_that_spells_out_an_asked_name():
    """Learned from the synthetic definition questions (assistant.learning.synthetic): no hand weight says so."""
    scores = _ranked("What does CABS stand for?", [
        "CABS outperforms the strongest baseline by 12% on every split.",
        "We introduce the Clinical Abnormality Benchmarking Substrate (CABS), a suite of tasks.",
        "Results on CABS show that larger models are better calibrated."])
    assert int(scores.argmax()) == 1


def test_the_learned_ranker_prefers_a_new_figure_for_a_quantity_question():
    scores = _ranked("How many Atari games was it validated on?", [
        "We propose a constrained policy optimization method for exploration.",
        "Experimental results across 61 Atari games validate our claim."])
    assert int(scores.argmax()) == 1


@pytest.mark.parametrize("text, clean", [
    ("It is cited [-1].", "It is cited."),
    ("X [1, -1] y", "X [1] y"),
    ("SyPE [1] and [7] show gains.", "SyPE [1] show gains."),
    ("Both A [1] and [7] and B [2] differ.", "Both A [1] and B [2] differ."),
    ("band [1] or [8]. Sand", "band [1]. Sand"),
])
def test_a_negative_citation_goes_and_a_dropped_one_takes_its_conjunction_in_any_stream_cut(text, clean):
    """An LLM's "[-1]" survived, and dropping "[7]" from "[1] and [7] and [2]" left "and and"."""
    from assistant.answer.citations import CitationRewriter, strip_invalid

    assert strip_invalid(text, {1, 2})[0] == clean
    for cut in range(len(text) + 1):
        rw = CitationRewriter({1: 1, 2: 2}, numbering={1: 1, 2: 2})
        assert rw.feed(text[:cut]) + rw.feed(text[cut:]) + rw.flush() == clean
