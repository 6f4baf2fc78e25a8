"""Citation parsing and sentence cues (moved from tests/test_llm.py and tests/test_answer.py: no model)."""

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
    from assistant.citations import CitationRewriter

    whole = CitationRewriter({n: f"p{n}" for n in valid})
    streamed = CitationRewriter({n: f"p{n}" for n in valid})
    pieces = "".join(streamed.feed(text[i:i + 3]) for i in range(0, len(text), 3)) + streamed.flush()
    assert whole.feed(text) + whole.flush() == pieces == expected


def test_code_availability_sentence_scores_below_a_claim_with_the_same_vector():
    import numpy as np

    from assistant.evidence import Sentence, score_sentences
    from assistant.question import analyze
    from assistant.settings import SentenceCalibration

    texts = ["Our code is available at http://127.0.0.1/example/project.",
             "We introduce a sparse router that cuts inference latency tenfold."]
    sents = [Sentence("p", t, 0, len(t)) for t in texts]
    vecs = np.tile(np.eye(1, 8, dtype=np.float32), (2, 1))  # same vector: only the text cues differ
    q = np.eye(1, 8, dtype=np.float32)[0]
    scores = score_sentences(analyze("what does it introduce"), q, sents, vecs, {}, SentenceCalibration(position_weight=0, result_bonus=0))
    assert scores[1] > scores[0]


def test_a_number_inside_a_modifier_is_not_a_count_the_answer_must_repeat():
    """"360-degree" names a kind of image; only "which three …"-style numbers ask for a count."""
    import numpy as np

    from assistant.evidence import Sentence, score_sentences
    from assistant.question import analyze
    from assistant.settings import SentenceCalibration

    texts = ["The system supports five distinct editing operations in one model.",
             "It enables flexible 360° scene creation with unified editing control."]
    sents = [Sentence("p", t, 0, len(t)) for t in texts]
    vecs = np.tile(np.eye(1, 8, dtype=np.float32), (2, 1))
    q = np.eye(1, 8, dtype=np.float32)[0]
    question = "How many kinds of edits does the 360-degree panorama editing system handle?"
    scores = score_sentences(analyze(question), q, sents, vecs, {}, SentenceCalibration(position_weight=0, result_bonus=0))
    assert scores[0] > scores[1]


def _ranked(question: str, texts: list[str]):
    """The shipped evidence ranker's scores for ``texts`` sharing one vector: only their words differ."""
    import numpy as np

    from assistant.features import question_cues, sentence_features
    from assistant.learned import load_model
    from assistant.question import analyze

    vecs = np.tile(np.eye(1, 8, dtype=np.float32), (len(texts), 1))
    q = np.eye(1, 8, dtype=np.float32)[0]
    return load_model("evidence-v1").score(sentence_features(question_cues(analyze(question), None), q, texts, vecs))


def test_the_learned_ranker_scores_a_code_pointer_below_a_claim_with_the_same_vector():
    scores = _ranked("what does it introduce", ["We introduce a sparse router that cuts inference latency tenfold.",
                                                "Our code is available at http://127.0.0.1/example/project."])
    assert scores[0] > scores[1]


def test_the_quantity_feature_ignores_a_number_inside_a_modifier():
    """"360-degree" names a kind of image; only "which three …"-style numbers ask for a count."""
    import numpy as np

    from assistant.features import SENTENCE_FEATURES, question_cues, sentence_features
    from assistant.question import analyze

    texts = ["The system supports five distinct editing operations in one model.",
             "It enables flexible 360° scene creation with unified editing control."]
    question = "How many kinds of edits does the 360-degree panorama editing system handle?"
    x = sentence_features(question_cues(analyze(question), None), np.eye(1, 8, dtype=np.float32)[0], texts,
                          np.tile(np.eye(1, 8, dtype=np.float32), (2, 1)))
    col = SENTENCE_FEATURES.index("quantity_figure")
    assert x[0, col] == 1.0 and x[1, col] == 0.0
