"""Fitting the models: training rows (``trainset``), synthetic questions (``synthetic``), the evidence ranker and
judge fits (``train``, knobs in ``types.TrainSettings``), the relevance cross-encoder's pairs and fit
(``crossencoder_pairs``, ``crossencoder_fit``, ``crossencoder_calibrate``) and the question files and separate indexes they use
(``evalsets``). The fitted files live in ``assistant/relevance/models/``.

Imports: ``research`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "crossencoder_fit": ("FitSettings",),
    "crossencoder_calibrate": ("calibration_rows", "candidate_logits", "recalibrate_relevance", "train_relevance"),
    "evalsets": ("corpus_settings", "distractor_settings", "load_question_files", "load_questions", "open_corpus_index"),
    "train": ("abstention_lines", "cross_validate", "format_cv", "importance_lines", "train_report"),
    "trainset": ("collect_all", "neutral_models"),
    "types": ("TrainSettings",),
})
