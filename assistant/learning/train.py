"""Fitting the evidence ranker and the relevance judge (:mod:`assistant.relevance.learned`) on training questions.

``paper-assistant train`` runs :func:`train`: every question of a question file (the
training file is ``eval/train/train.jsonl`` over ``corpus2k.jsonl``) goes through the answer path's
own retrieval once, over the whole index and over simulated small ones, and :mod:`assistant.learning.trainset`
records the features the two models read. Then:

- evidence ranker (:func:`assistant.relevance.learned.fit_evidence`): a conditional logit (L2, ``C=1``) over the
  sentences of each lookup's gold abstract plus gradient-boosted trees (assistant.evidence.ranker), on the lookups
  and synthetic definition and quantity questions (:func:`assistant.learning.trainset.collect_all`);
- relevance judge (:class:`~assistant.relevance.learned.BoostedJudge`), label "the question is answerable":
  the mean probability of a logistic regression (``judge_C``) on standardized
  :data:`~assistant.relevance.features.JUDGE_FEATURES` and of a small gradient-boosted tree ensemble
  (scikit-learn's HistGradientBoostingClassifier: ``trees`` trees of depth ``depth``, learning rate
  ``learning_rate``, at least ``leaf`` questions a leaf); its cutoffs are chosen on out-of-fold
  probabilities (5 folds) so that at most ``refuse_rate`` of the answerable questions fall below
  ``none_below`` and at most ``flag_rate`` below ``weak_below`` (:class:`TrainSettings`), on the whole
  index and on each simulated small index alike (:func:`choose_cutoffs`). In 5-fold CV the regression
  alone refused 15 % of ``none`` questions, the trees 30 %, their mean 43 % (docs/quality.md).

The small-index copies (:func:`assistant.learning.trainset.collect_variants`) set the cutoffs and are
cross-validated (``CVReport.by_index``); neither they nor the gold-held-out copies are trained on by
default: in 5-fold CV neither improved the share of ``none`` refused at 3 % of answerable
refused on any index size (whole / 300 / 40 papers: 54 / 57 / 56 % without, 46 / 52 / 54 % with both;
monotonic trees, the regression alone and scale-free features alone were no better either).

Deterministic: folds come from a fixed seed, lbfgs has no randomness, the trees are grown without
subsampling or early stopping (``random_state`` fixed), and the files hold numbers rounded to 6
decimals, so a refit from the same index writes the same bytes.
:func:`cross_validate` reports what the eval prints for ``--cv``: fit on k−1 folds, score the k-th.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.evidence import LinearModel, SENTENCE_FEATURES
from assistant.learning.evalsets import file_lines
from assistant.learning.trainset import QuestionRow, _index_of, _norm, _xy, collect_all, neutral_models, trains_on
from assistant.learning.types import TrainSettings
from assistant.relevance import BoostedJudge, JUDGE_FEATURES, cutoff_for, fit_evidence, tradeoff
from assistant.types import Verdict


def _standardizer(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    return mean, np.where(scale > 1e-9, scale, 1.0)


def _folds(rows: list[QuestionRow], k: int, seed: int, variants: list[QuestionRow] = ()) -> tuple[np.ndarray, np.ndarray]:
    """``(fold of each row, fold of each variant)``: rows stratified by kind, shuffled with ``seed`` (same
    rows → same folds); a simulated copy (:func:`assistant.learning.trainset.collect_variants`) takes the fold of the question it copies."""
    rng = np.random.RandomState(seed)
    fold = np.zeros(len(rows), dtype=int)
    for kind in sorted({r.kind for r in rows}):
        idx = [i for i, r in enumerate(rows) if r.kind == kind]
        idx = [idx[j] for j in rng.permutation(len(idx))]
        for j, i in enumerate(idx):
            fold[i] = j % k
    of = {r.qid: int(f) for r, f in zip(rows, fold)}
    return fold, np.array([of[v.origin] for v in variants], dtype=int)


def _fit_judge_model(x: np.ndarray, y: np.ndarray, cfg: TrainSettings, cutoffs: dict | None = None) -> BoostedJudge:
    """The judge's two halves fitted on rows ``x`` (``(n, F)``) with labels ``y`` (1: answerable)."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.linear_model import LogisticRegression

    mean, scale = _standardizer(x)
    lr = LogisticRegression(C=cfg.judge_C, max_iter=5000).fit((x - mean) / scale, y)
    linear = LinearModel("judge", 2, JUDGE_FEATURES, mean, scale, lr.coef_[0], float(lr.intercept_[0]), {})
    gb = HistGradientBoostingClassifier(max_iter=cfg.trees, max_depth=cfg.depth, learning_rate=cfg.learning_rate,
                                        min_samples_leaf=cfg.leaf, early_stopping=False, random_state=0).fit(x, y)
    return BoostedJudge.from_sklearn(linear, gb, cutoffs or {})


def choose_cutoffs(rows: list[QuestionRow], p: np.ndarray, cfg: TrainSettings) -> dict:
    """The judge's cutoffs from out-of-fold probabilities ``p`` of ``rows``: on each (simulated) index
    the largest that refuses at most ``refuse_rate`` (flags at most ``flag_rate``) of its answerable
    questions, the smallest over the indexes (so the budget holds on an index of any size)."""
    by_index: dict[str, list[float]] = {}
    for r, pr in zip(rows, p):
        if r.answerable:
            by_index.setdefault(_index_of(r), []).append(float(pr))
    ans = [np.array(v) for _, v in sorted(by_index.items())]
    return {"none_below": round(min(cutoff_for(a, cfg.refuse_rate) for a in ans), 6),
            "weak_below": round(min(cutoff_for(a, cfg.flag_rate) for a in ans), 6),
            "refuse_rate": cfg.refuse_rate, "flag_rate": cfg.flag_rate}


def fit_judge(rows: list[QuestionRow], cfg: TrainSettings = TrainSettings(),
              variants: list[QuestionRow] = ()) -> BoostedJudge:
    """The relevance judge fitted on ``rows`` and their simulated ``variants`` (:func:`assistant.learning.trainset.collect_variants`),
    with the two cutoffs of :func:`choose_cutoffs` on out-of-fold probabilities (see module docstring)."""
    variants = list(variants)
    both = list(rows) + variants
    x, y = _xy(both)
    fits = np.array([True] * len(rows) + [trains_on(v, cfg) for v in variants])
    if y[fits].min() == y[fits].max():
        raise ValueError("the judge needs answerable and unanswerable ('none') questions")
    f_rows, f_var = _folds(rows, cfg.folds, cfg.seed, variants)
    fold = np.r_[f_rows, f_var]
    oof = np.zeros(len(both))
    for f in range(cfg.folds):
        tr, te = (fold != f) & fits, fold == f
        oof[te] = _fit_judge_model(x[tr], y[tr], cfg).probability(x[te])
    return _fit_judge_model(x[fits], y[fits], cfg, choose_cutoffs(both, oof, cfg))


def evidence_hit(model, row: QuestionRow) -> bool:
    """True when the answer's first citation (the top paper) quotes the gold sentence, ``model`` choosing
    it (``None``: dense similarity alone, the baseline)."""
    if row.top_x is None or row.top_id not in row.gold or not row.evidence:
        return False
    scores = row.top_x[:, SENTENCE_FEATURES.index("cos")] if model is None else model.score(row.top_x)
    return _norm(row.top_texts[int(np.argmax(scores))]) == _norm(row.evidence)


@dataclass
class CVReport:
    """Cross-validated figures: fit on k−1 folds, score the held-out one, pooled over the folds."""

    folds: int
    evidence_n: int
    evidence_accuracy: float
    evidence_dense_only: float
    none_questions: int
    answerable_questions: int
    none_abstained: float
    none_flagged: float
    answerable_abstained: float
    answerable_flagged: float
    tradeoff: list[dict]
    evidence_importances: list[tuple[str, float]]
    judge_importances: list[tuple[str, float]]
    by_index: list[dict] = field(default_factory=list)
    """Abstention per simulated index (:func:`_shares`: "whole", then "small-N" smallest first)."""
    by_file: list[dict] = field(default_factory=list)
    """Abstention on the whole index per question file (:func:`_shares`, "index" its name), if several."""


def _mean_importances(models: list) -> list[tuple[str, float]]:
    """Each feature's importance (the models' ``importances()``) averaged over ``models``."""
    mean = {f: float(np.mean([dict(m.importances())[f] for m in models])) for f in models[0].features}
    return sorted(((f, round(v, 3)) for f, v in mean.items()), key=lambda t: -abs(t[1]))


def _shares(scored: list[tuple[QuestionRow, Verdict, float]], index: str) -> dict:
    """Abstention shares on one (simulated) index: its answerable questions, its ``none`` questions, and
    its answerable questions with their gold hidden (``held_out``)."""
    def share(vs, want):
        return sum(v in want for v in vs) / len(vs) if vs else 0.0

    here = [(r, v) for r, v, _ in scored if _index_of(r) == index]
    ans = [v for r, v in here if r.answerable]
    nones = [v for r, v in here if not r.answerable and not r.variant.endswith("held-out")]
    hidden = [v for r, v in here if r.variant.endswith("held-out")]
    none, flag = {Verdict.none}, {Verdict.none, Verdict.weak}
    return {"index": index or "whole", "answerable": len(ans), "none": len(nones), "held_out": len(hidden),
            "none_abstained": share(nones, none), "none_flagged": share(nones, flag),
            "held_out_abstained": share(hidden, none), "held_out_flagged": share(hidden, flag),
            "answerable_abstained": share(ans, none), "answerable_flagged": share(ans, flag)}


def cross_validate(rows: list[QuestionRow], cfg: TrainSettings = TrainSettings(),
                   extra: list[QuestionRow] = (), variants: list[QuestionRow] = ()) -> CVReport:
    """k-fold cross-validation of both models over ``rows`` (folds stratified by kind, fixed seed);
    ``extra`` rows (synthetic questions) join every fold's evidence training and are never scored;
    ``variants`` (:func:`assistant.learning.trainset.collect_variants`) join the judge's training in their question's fold and are
    scored in it (``CVReport.by_index``: the figures per simulated index size)."""
    variants = list(variants)
    fold, vfold = _folds(rows, cfg.folds, cfg.seed, variants)
    hits, dense_hits, n_ev = 0, 0, 0
    scored: list[tuple[QuestionRow, Verdict, float]] = []
    ev_models, judges = [], []
    for f in range(cfg.folds):
        train = [r for r, g in zip(rows, fold) if g != f]
        test = [r for r, g in zip(rows, fold) if g == f]
        vtrain = [r for r, g in zip(variants, vfold) if g != f]
        vtest = [r for r, g in zip(variants, vfold) if g == f]
        ranker, judge = fit_evidence(train + list(extra), cfg), fit_judge(train, cfg, vtrain)
        ev_models.append(ranker)
        judges.append(judge)
        for r in test:
            if r.kind == "lookup" and r.evidence:
                n_ev += 1
                hits += evidence_hit(ranker, r)
                dense_hits += evidence_hit(None, r)
        for r in test + vtest:
            scored.append((r, judge.verdict(r.judge_x), float(judge.probability(r.judge_x))))
    whole = _shares([s for s in scored if not s[0].variant], "")
    by_index = [_shares(scored, i) for i in sorted({_index_of(r) for r in variants}, key=lambda i: (len(i), i))]
    sources = sorted({r.source for r in rows})
    by_file = ([dict(_shares([s for s in scored if not s[0].variant and s[0].source == src], ""), index=src)
                for src in sources] if len(sources) > 1 else [])
    plain = [(r.answerable, p) for r, _, p in scored if not r.variant]
    return CVReport(
        folds=cfg.folds, evidence_n=n_ev, evidence_accuracy=hits / n_ev if n_ev else 0.0,
        evidence_dense_only=dense_hits / n_ev if n_ev else 0.0,
        none_questions=whole["none"], answerable_questions=whole["answerable"],
        none_abstained=whole["none_abstained"], none_flagged=whole["none_flagged"],
        answerable_abstained=whole["answerable_abstained"], answerable_flagged=whole["answerable_flagged"],
        tradeoff=tradeoff(np.array([p for a, p in plain if a]), np.array([p for a, p in plain if not a])),
        evidence_importances=_mean_importances(ev_models), judge_importances=_mean_importances(judges),
        by_index=by_index, by_file=by_file)


def fit_both(rows: list[QuestionRow], cfg: TrainSettings = TrainSettings(),
             extra: list[QuestionRow] = (), variants: list[QuestionRow] = ()) -> tuple[LinearModel, BoostedJudge]:
    """``(evidence ranker, relevance judge)`` fitted on all ``rows`` (the ranker also on ``extra``, the
    judge also on ``variants``)."""
    return fit_evidence(rows + list(extra), cfg), fit_judge(rows, cfg, variants)


def train(settings, corpus: list, questions, out_folder=None, explicit_index: bool = False,
          cfg: TrainSettings | None = None, progress=None, ingest_callbacks: dict | None = None):
    """Fit both models on ``questions`` (a question file or a list of them:
    :func:`assistant.learning.evalsets.load_question_files`) over an index of ``corpus`` and write them to ``out_folder``
    (default: the package's models/), as ``evidence-<v>.json`` (``calibration.sentences.learned``,
    "v3"; it also learns from :func:`collect_all`'s synthetic questions) and ``judge-<v>.json``
    (``calibration.abstention.learned``, default "v2").

    Returns ``(paths written, rows, CVReport)``. Raises ValueError for a question file without
    answerable and unanswerable questions or without lookups whose evidence is in their abstract.
    """
    from pathlib import Path

    from assistant.learning.evalsets import load_question_files, open_corpus_index
    from assistant.relevance import model_path
    from assistant.answer import Assistant

    version = settings.calibration.abstention.learned or "v2"
    cfg = cfg or TrainSettings()
    qs = load_question_files(questions)
    settings, idx = open_corpus_index(settings, corpus, explicit_index, ingest_callbacks)
    rows, extra, variants = collect_all(Assistant(settings, idx, models=neutral_models()), qs, cfg, progress)
    written = []
    names = (f"evidence-{settings.calibration.sentences.learned}", f"judge-{version}")
    for model, name in zip(fit_both(rows, cfg, extra, variants), names):
        path = model_path(name, Path(out_folder) if out_folder else None)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model.to_json())
        written.append(path)
    return written, rows, cross_validate(rows, cfg, extra, variants)


def abstention_lines(a, indent: str = "") -> list[str]:
    """Lines of abstention shares and the trade-off (the eval's AbstentionReport, or a :class:`CVReport`)."""
    lines = [
        f"{indent}abstention: 'none' questions ({a.none_questions}): {a.none_abstained:.0%} answered 'no relevant "
        f"abstract found', {a.none_flagged:.0%} at least flagged",
        f"{indent}            answerable ({a.answerable_questions}): {a.answerable_abstained:.1%} wrongly abstained, "
        f"{a.answerable_flagged:.1%} flagged 'closest match'",
        f"{indent}  trade-off (cutoffs on the judge's score: the learned judge's P(answers), the rules' dense + sentence;"
        f" the lines above are the judge in use):",
        f"{indent}{'':>27}cutoff  answerable-abstained  none-abstained",
    ]
    for i, t in enumerate(a.tradeoff):
        if i and t == a.tradeoff[i - 1]:  # few questions: two rates can fall on the same cutoff
            continue
        lines.append(f"{indent}{'':>27}{t['cutoff']:>6.3f}{t['answerable_abstained']:>22.1%}{t['none_abstained']:>16.0%}")
    return lines


def index_lines(by_index: list[dict], indent: str = "") -> list[str]:
    """Lines of the cross-validated abstention per simulated index (:attr:`CVReport.by_index`)."""
    if not by_index:
        return []
    lines = [f"{indent}on simulated small indexes (each question also asked over N papers: its gold and near papers "
             f"and random others; same folds):"]
    for b in by_index:
        hidden = f", gold hidden {b['held_out_abstained']:.0%}" if b["held_out"] else ""
        lines.append(f"{indent}  {b['index']:>9}: 'none' ({b['none']}) {b['none_abstained']:.0%} refused, "
                     f"{b['none_flagged']:.0%} at least flagged{hidden}; answerable ({b['answerable']}) "
                     f"{b['answerable_abstained']:.1%} refused, {b['answerable_flagged']:.1%} flagged")
    return lines


def importance_lines(title: str, pairs: list[tuple[str, float]]) -> list[str]:
    return [f"{title}: " + ", ".join(f"{f} {c:+.2f}" for f, c in pairs if abs(c) >= 0.005)]


def format_cv(c) -> list[str]:
    """Lines of cross-validated figures (a :class:`CVReport`, or the eval's ``CVFigures``)."""
    lines = [f"{c.folds}-fold cross-validation (both models refitted on {c.folds - 1} folds of this file, "
             f"scored on the held-out one):",
             f"  evidence accuracy: {c.evidence_accuracy:.2f} ({round(c.evidence_accuracy * c.evidence_n)}/"
             f"{c.evidence_n}); dense similarity alone: {c.evidence_dense_only:.2f}"]
    lines += abstention_lines(getattr(c, "abstention", c), "  ")
    lines += index_lines(getattr(c, "by_index", []), "  ")
    lines += file_lines(getattr(c, "by_file", []), "  ")
    lines += importance_lines("  evidence ranker (mean over folds)", c.evidence_importances)
    lines += importance_lines("  relevance judge (mean over folds)", c.judge_importances)
    return lines


def train_report(settings, corpus: list, questions, out_folder=None, explicit_index: bool = False,
                 ingest_callbacks: dict | None = None) -> str:
    """``paper-assistant train``: :func:`train`, then the files written and the cross-validated figures."""
    import time
    start = time.perf_counter()
    written, rows, cv = train(settings, corpus, questions, out_folder, explicit_index, ingest_callbacks=ingest_callbacks)
    return "\n".join([*(f"wrote {p}" for p in written), *format_cv(cv),
                      f"{len(rows)} questions, {time.perf_counter() - start:.0f} s"])
