"""Fitting the evidence ranker and the relevance judge (:mod:`assistant.learned`) on training questions.

``paper-assistant train`` runs :func:`train`: every question of a ``dev.jsonl``-format file (the
training file is ``eval/train/train.jsonl`` over ``corpus2k.jsonl``) goes through the answer path's
own retrieval once (:meth:`Assistant.prepare`), and :func:`collect` records the features the two
models read. Then:

- evidence ranker (:func:`assistant.learned.fit_evidence`): a conditional logit (L2, ``C=1``) over the
  sentences of each lookup's gold abstract plus gradient-boosted trees (assistant.ranker), on the lookups
  and synthetic definition and quantity questions (:func:`collect_all`);
- relevance judge (:class:`~assistant.learned.BoostedJudge`), label "the question is answerable":
  the mean probability of a logistic regression (``judge_C``) on standardized
  :data:`~assistant.features.JUDGE_FEATURES` and of a small gradient-boosted tree ensemble
  (scikit-learn's HistGradientBoostingClassifier: ``trees`` trees of depth ``depth``, learning rate
  ``learning_rate``, at least ``leaf`` questions a leaf); its cutoffs are chosen on out-of-fold
  probabilities (5 folds) so that at most ``refuse_rate`` of the answerable questions fall below
  ``none_below`` and at most ``flag_rate`` below ``weak_below`` (:class:`TrainSettings`). In 5-fold CV
  the regression alone refused 15 % of ``none`` questions, the trees 30 %, their mean 43 % (README).

Deterministic: folds come from a fixed seed, lbfgs has no randomness, the trees are grown without
subsampling or early stopping (``random_state`` fixed), and the files hold numbers rounded to 6
decimals, so a refit from the same index writes the same bytes.
:func:`cross_validate` reports what the eval prints for ``--cv``: fit on k−1 folds, score the k-th.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.evidence_features import SENTENCE_FEATURES, sentence_features
from assistant.features import JUDGE_FEATURES, judge_features, question_cues, retrieved_signals
from assistant.learned import BoostedJudge, LinearModel, cutoff_for, fit_evidence, tradeoff  # noqa: F401  (fit_evidence: API)
from assistant.relevance import Verdict


@dataclass(frozen=True)
class TrainSettings:
    """The knobs of fitting (not of answering): regularization, folds and the judge's error budget."""

    C: float = 1.0
    judge_C: float = 0.1  # the judge's regression: harder than the ranker's (251 questions, 16 features)
    trees: int = 100  # the judge's trees: how many, how deep, learning rate, least questions a leaf
    depth: int = 3
    learning_rate: float = 0.05
    leaf: int = 10
    folds: int = 5
    seed: int = 0
    refuse_rate: float = 0.02
    """Share of answerable training questions the ``none`` cutoff may refuse (out of fold); below the
    3 % target to leave room for the sampling error of a new question set."""
    flag_rate: float = 0.08
    """Share of answerable training questions the ``weak`` cutoff may flag (target: at most 10 %)."""
    objective: str = "listwise"  # the evidence ranker's loss: "listwise" (softmax over an abstract) or "pairwise"
    synthetic: int = 150  # "What is X?" questions made from the corpus (assistant.synthetic) for the ranker; 0: none
    quantity: int = 100  # "What speedup does X achieve?" questions made from the corpus for the ranker; 0: none
    evidence_trees: int = 200  # the ranker's trees (assistant.ranker; 0: the logit alone): how many, how deep,
    evidence_depth: int = 3  # learning rate, least sentences a leaf; and the logit's weight beside them
    evidence_learning_rate: float = 0.05
    evidence_leaf: int = 20
    evidence_blend: float = 0.5
    synthetic_share: float = 1.0  # their total weight / the hand-written lookups' (1 each): 0.25–2 cross-validated alike


@dataclass
class QuestionRow:
    """What one training question contributes: judge features, and sentence features of the top and gold abstracts."""

    qid: str
    kind: str
    answerable: bool
    judge_x: np.ndarray
    gold: list[str]
    evidence: str = ""
    top_id: str = ""
    top_texts: list[str] = field(default_factory=list)
    top_x: np.ndarray | None = None
    gold_x: np.ndarray | None = None
    gold_label: int = -1
    """Index of the evidence sentence in the gold abstract's sentences (most characters in common), -1 if none."""
    weight: float = 1.0  # in the evidence ranker's fit (a synthetic question weighs less)


def _norm(s: str) -> str:
    return " ".join(s.split())

def _evidence_index(sentences, evidence: str, text: str) -> int:
    """The sentence of ``sentences`` (with .start/.end into ``text``) that overlaps ``evidence`` most."""
    at = text.find(evidence)
    if at < 0:
        at = _norm(text).find(_norm(evidence))
        if at < 0:
            return -1
    end = at + len(evidence)
    overlaps = [max(0, min(end, s.end) - max(at, s.start)) for s in sentences]
    best = int(np.argmax(overlaps)) if overlaps else -1
    return best if best >= 0 and overlaps[best] > 0 else -1


def collect(assistant, questions: list[dict], progress=None) -> list[QuestionRow]:
    """Features of every question in ``questions`` (dev.jsonl format) on ``assistant``'s index, through
    the answer path's own retrieval (:meth:`Assistant.prepare`)."""
    lexical = assistant.index.lexical()
    rows = []
    for q in questions:
        prep = assistant.prepare(q["question"])
        cues = question_cues(prep.analysis, lexical)
        cues.ask_vec = assistant.index.encoder.encode_one(cues.ask) if cues.ask != prep.query else prep.qvec
        rvec = prep.topic_vec if prep.topic_vec is not None else prep.qvec
        gold = list(q.get("gold") or [])
        gold_papers = assistant.index.store.get_papers(gold[:1]) if q.get("evidence") else {}
        cache = assistant.sentences.get([p.paper for p in prep.papers] + list(gold_papers.values()))
        row = QuestionRow(q.get("qid", ""), q.get("kind", ""), bool(gold),
                          np.zeros(len(JUDGE_FEATURES), np.float32), gold, q.get("evidence") or "")
        if prep.papers:
            signals = retrieved_signals(cues, prep.papers, cache, prep.qvec, rvec)
            row.judge_x = judge_features(cues, [signals[p.id] for p in prep.papers])
            top = prep.papers[0]
            sents, vecs = cache[top.id]
            row.top_id, row.top_texts = top.id, [s.text for s in sents]
            row.top_x = sentence_features(cues, prep.qvec, row.top_texts, vecs)
        for pid, paper in gold_papers.items():
            sents, vecs = cache[pid]
            row.gold_x = sentence_features(cues, prep.qvec, [s.text for s in sents], vecs)
            row.gold_label = _evidence_index(sents, row.evidence, paper.text)
        # Rounded to 1e-4: the encoder's float sums vary in the last bits, and a refit must write the same bytes.
        for name in ("judge_x", "top_x", "gold_x"):
            setattr(row, name, None if getattr(row, name) is None else np.round(getattr(row, name), 4))
        rows.append(row)
        if progress:
            progress()
    return rows


def collect_all(assistant, questions: list[dict], cfg: "TrainSettings", progress=None) -> tuple[list, list]:
    """``(rows, synthetic rows)``: :func:`collect` of ``questions``, and of ``cfg.synthetic`` definition and
    ``cfg.quantity`` quantity questions made from the index's papers (assistant.synthetic.synthetic_questions),
    weighing ``cfg.synthetic_share`` × the lookups in all."""
    from assistant.synthetic import synthetic_questions

    rows = collect(assistant, questions, progress)
    papers = assistant.index.store.get_papers(sorted(set(assistant.index.lexical().paper_ids)))
    made = synthetic_questions(list(papers.values()), questions, cfg.synthetic, cfg.quantity)
    extra = collect(assistant, made) if made else []
    for r in extra:
        r.weight = cfg.synthetic_share * sum(x.gold_x is not None for x in rows) / len(extra)
    return rows, extra


def _standardizer(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    return mean, np.where(scale > 1e-9, scale, 1.0)


def _folds(rows: list[QuestionRow], k: int, seed: int) -> np.ndarray:
    """Fold number of each row: stratified by kind, shuffled with ``seed`` (same rows → same folds)."""
    rng = np.random.RandomState(seed)
    fold = np.zeros(len(rows), dtype=int)
    for kind in sorted({r.kind for r in rows}):
        idx = [i for i, r in enumerate(rows) if r.kind == kind]
        idx = [idx[j] for j in rng.permutation(len(idx))]
        for j, i in enumerate(idx):
            fold[i] = j % k
    return fold


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


def fit_judge(rows: list[QuestionRow], cfg: TrainSettings = TrainSettings()) -> BoostedJudge:
    """The relevance judge with its two cutoffs (see module docstring)."""
    x = np.vstack([r.judge_x for r in rows]).astype(np.float64)
    y = np.array([r.answerable for r in rows], dtype=int)
    if y.min() == y.max():
        raise ValueError("the judge needs answerable and unanswerable ('none') questions")
    fold = _folds(rows, cfg.folds, cfg.seed)
    oof = np.zeros(len(rows))
    for f in range(cfg.folds):
        tr, te = fold != f, fold == f
        oof[te] = _fit_judge_model(x[tr], y[tr], cfg).probability(x[te])
    ans = oof[y == 1]
    cutoffs = {"none_below": round(cutoff_for(ans, cfg.refuse_rate), 6),
               "weak_below": round(cutoff_for(ans, cfg.flag_rate), 6),
               "refuse_rate": cfg.refuse_rate, "flag_rate": cfg.flag_rate}
    return _fit_judge_model(x, y, cfg, cutoffs)


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


def _mean_importances(models: list) -> list[tuple[str, float]]:
    """Each feature's importance (the models' ``importances()``) averaged over ``models``."""
    mean = {f: float(np.mean([dict(m.importances())[f] for m in models])) for f in models[0].features}
    return sorted(((f, round(v, 3)) for f, v in mean.items()), key=lambda t: -abs(t[1]))


def cross_validate(rows: list[QuestionRow], cfg: TrainSettings = TrainSettings(),
                   extra: list[QuestionRow] = ()) -> CVReport:
    """k-fold cross-validation of both models over ``rows`` (folds stratified by kind, fixed seed);
    ``extra`` rows (synthetic questions) join every fold's evidence training and are never scored."""
    fold = _folds(rows, cfg.folds, cfg.seed)
    hits, dense_hits, n_ev = 0, 0, 0
    verdicts: list[tuple[bool, Verdict, float]] = []
    ev_models, judges = [], []
    for f in range(cfg.folds):
        train = [r for r, g in zip(rows, fold) if g != f]
        test = [r for r, g in zip(rows, fold) if g == f]
        ranker, judge = fit_evidence(train + list(extra), cfg), fit_judge(train, cfg)
        ev_models.append(ranker)
        judges.append(judge)
        for r in test:
            if r.kind == "lookup" and r.evidence:
                n_ev += 1
                hits += evidence_hit(ranker, r)
                dense_hits += evidence_hit(None, r)
            verdicts.append((r.answerable, judge.verdict(r.judge_x), float(judge.probability(r.judge_x))))
    ans = [v for a, v, _ in verdicts if a]
    nones = [v for a, v, _ in verdicts if not a]
    share = lambda vs, want: sum(v in want for v in vs) / len(vs) if vs else 0.0  # noqa: E731
    return CVReport(
        folds=cfg.folds, evidence_n=n_ev, evidence_accuracy=hits / n_ev if n_ev else 0.0,
        evidence_dense_only=dense_hits / n_ev if n_ev else 0.0,
        none_questions=len(nones), answerable_questions=len(ans),
        none_abstained=share(nones, {Verdict.none}), none_flagged=share(nones, {Verdict.none, Verdict.weak}),
        answerable_abstained=share(ans, {Verdict.none}), answerable_flagged=share(ans, {Verdict.none, Verdict.weak}),
        tradeoff=tradeoff(np.array([p for a, _, p in verdicts if a]), np.array([p for a, _, p in verdicts if not a])),
        evidence_importances=_mean_importances(ev_models), judge_importances=_mean_importances(judges))


def fit_both(rows: list[QuestionRow], cfg: TrainSettings = TrainSettings(),
             extra: list[QuestionRow] = ()) -> tuple[LinearModel, BoostedJudge]:
    """``(evidence ranker, relevance judge)`` fitted on all ``rows`` (the ranker also on ``extra``)."""
    return fit_evidence(rows + list(extra), cfg), fit_judge(rows, cfg)


def neutral_models() -> tuple[LinearModel, LinearModel]:
    """Models that prefer nothing, for an Assistant that only collects features."""
    return LinearModel.neutral("evidence", SENTENCE_FEATURES), LinearModel.neutral("judge", JUDGE_FEATURES)


def train(settings, corpus: list, questions, out_folder=None, explicit_index: bool = False,
          cfg: TrainSettings | None = None, progress=None, ingest_callbacks: dict | None = None):
    """Fit both models on ``questions`` over an index of ``corpus`` and write them to ``out_folder``
    (default: the package's models/), as ``evidence-<v>.json`` (``calibration.sentences.learned``,
    "v3"; it also learns from :func:`collect_all`'s synthetic questions) and ``judge-<v>.json``
    (``calibration.abstention.learned``, default "v2").

    Returns ``(paths written, rows, CVReport)``. Raises ValueError for a question file without
    answerable and unanswerable questions or without lookups whose evidence is in their abstract.
    """
    from pathlib import Path

    from assistant.evalsets import load_questions, open_corpus_index
    from assistant.learned import model_path
    from assistant.pipeline import Assistant

    version = settings.calibration.abstention.learned or "v2"
    cfg = cfg or TrainSettings()
    qs = load_questions(Path(questions))
    settings, idx = open_corpus_index(settings, corpus, explicit_index, ingest_callbacks)
    rows, extra = collect_all(Assistant(settings, idx, models=neutral_models()), qs, cfg, progress)
    written = []
    names = (f"evidence-{settings.calibration.sentences.learned}", f"judge-{version}")
    for model, name in zip(fit_both(rows, cfg, extra), names):
        path = model_path(name, Path(out_folder) if out_folder else None)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(model.to_json())
        written.append(path)
    return written, rows, cross_validate(rows, cfg, extra)


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


def importance_lines(title: str, pairs: list[tuple[str, float]]) -> list[str]:
    return [f"{title}: " + ", ".join(f"{f} {c:+.2f}" for f, c in pairs if abs(c) >= 0.005)]


def format_cv(c) -> list[str]:
    """Lines of cross-validated figures (a :class:`CVReport`, or the eval's ``CVFigures``)."""
    lines = [f"{c.folds}-fold cross-validation (both models refitted on {c.folds - 1} folds of this file, "
             f"scored on the held-out one):",
             f"  evidence accuracy: {c.evidence_accuracy:.2f} ({round(c.evidence_accuracy * c.evidence_n)}/"
             f"{c.evidence_n}); dense similarity alone: {c.evidence_dense_only:.2f}"]
    lines += abstention_lines(getattr(c, "abstention", c), "  ")
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
