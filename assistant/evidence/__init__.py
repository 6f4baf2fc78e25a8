"""Grounding: an abstract's sentences and their vectors (``sentences``), the question's cues (``cues``), what a
sentence can answer (``answer_types``), the evidence ranker's features and model (``features``, ``ranker``) and
what is measured about each retrieved paper for the judge (``types.RelevanceEvidence``).

Imports: ``retrieval`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "answer_types": ("SHARE", "sentence_answer_types"),
    "cues": ("Cues", "question_cues"),
    "features": ("SENTENCE_FEATURES", "sentence_features"),
    "ranker": ("BoostedRanker", "LinearModel", "ModelError", "OverLinear", "fit_boosted", "pack_trees", "rounded",
        "sklearn_trees", "tree_sum", "trees_json"),
    "sentences": ("Sentence", "SentenceCache", "relevance_evidence"),
    "types": ("RelevanceEvidence",),
})
