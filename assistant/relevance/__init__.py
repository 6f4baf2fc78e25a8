"""Does a paper answer the question: the judges behind one protocol (``judge``: the calibrated rules, the learned
judge, the relevance cross-encoder), the cross-encoder and its calibration (``crossencoder``, ``calibration``),
the judge's features (``features``), the fitted models and their files (``learned``, ``models/``), and list
membership, the bar a paper must clear to be listed (``listing``).

Imports: ``evidence`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "calibration": ("calibrate", "list_cutoff", "write_calibration"),
    "crossencoder": ("CrossEncoder", "CrossEncoderError", "MAX_LENGTH", "cut_question", "load_relevance", "model_files", "passage",
        "relevance_query", "token_counts"),
    "features": ("JUDGE_FEATURES", "judge_features", "retrieved_signals"),
    "judge": ("AbstentionRule", "CrossEncoderJudge", "JUDGE_RULES", "Judge", "LearnedJudge", "list_judges"),
    "learned": ("BoostedJudge", "cutoff_for", "fit_evidence", "load_model", "model_path", "tradeoff"),
    "names": ("NameCheck", "check_names", "check_question", "checked_names", "title_leads", "vocabulary"),
    "listing": ("LOOSE_NOTE", "ListBar", "ListResult", "ListedPaper", "as_answer", "bar_note", "bar_scores",
        "code_list", "select"),
})
