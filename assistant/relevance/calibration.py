"""Calibration of the relevance cross-encoder's logits (pure numbers: no model, no index).

A stacked calibration on held-out questions' retrieved papers: logistic regression of "this paper
answers" on the cross-encoder's logit and four pair features (:data:`STACK_FEATURES`; Platt scaling
(Platt 1999) generalised to several inputs); the verdict
cutoffs on the best paper's probability within a refusal budget, their k-fold cross-validation, and the
list cutoff (best F1 on held-out lists). Rows are ``{"logits", "dense", "sentence", "named", "labels", "answerable"}`` dicts as
:func:`assistant.learning.crossencoder_calibrate.candidate_logits` writes them.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np

from assistant.relevance.crossencoder import MAX_LENGTH, MAX_QUESTION, STACK_FEATURES, stack_probability


def features(row: dict) -> np.ndarray:
    """The :data:`STACK_FEATURES` of a row's papers, shape ``(len(row["logits"]), len(STACK_FEATURES))``."""
    cols = [row["logits"], *(row[f] for f in STACK_FEATURES[1:])]
    return np.asarray(cols, dtype=np.float64).T.reshape(-1, len(STACK_FEATURES))


def fit_stack(rows: list[dict], C: float = 1.0) -> dict:
    """Logistic regression (scikit-learn, lbfgs, L2 ``C`` on standardized features) of "this paper is a
    gold paper of the question" on the rows' papers. Returns ``{"coef", "intercept", "mean", "scale"}``."""
    from sklearn.linear_model import LogisticRegression

    rows = [r for r in rows if r["logits"]]
    x = np.concatenate([features(r) for r in rows])
    y = np.concatenate([r["labels"] for r in rows])
    mean, scale = x.mean(0), x.std(0) + 1e-9
    lr = LogisticRegression(C=C, max_iter=2000).fit((x - mean) / scale, y)
    return {"coef": lr.coef_[0].tolist(), "intercept": float(lr.intercept_[0]), "mean": mean.tolist(),
            "scale": scale.tolist()}


def probabilities(row: dict, stack: dict) -> np.ndarray:
    return stack_probability(features(row), stack) if row["logits"] else np.zeros(0)


def top_probability(row: dict, stack: dict) -> float:
    p = probabilities(row, stack)
    return float(p.max()) if len(p) else 0.0


def top_support(row: dict, stack: dict) -> float:
    """The bi-encoder's evidence for the paper the model rates highest: (dense + sentence cosine) / 2."""
    p = probabilities(row, stack)
    if not len(p):
        return 0.0
    j = int(np.argmax(p))
    return (float(row["dense"][j]) + float(row["sentence"][j])) / 2


def variant(row: dict) -> str:
    """Which index a row was asked over (assistant.learning.crossencoder_calibrate.calibration_rows); "whole" if untagged."""
    return row.get("variant", "whole")


def choose_cutoffs(rows: list[dict], stack: dict, cfg) -> dict:
    """Cutoffs on the top paper's probability that hold on every index the rows were asked over (the
    strictest of each index's quantiles: the calibration holds at 40 papers and at 2,000): ``weak``
    (below it the model finds nothing) at the ``refuse_rate`` quantile of the answerable rows' top
    probability, ``answered`` at the ``flag_rate`` one; ``veto`` at the ``veto_rate`` quantile of the
    answerable rows' :func:`top_support`: below ``weak`` a paper the bi-encoder finds at least that close
    is a closest match, not nothing (the cross-encoder misreads questions worded far from their abstract);
    ``topic`` (a list question's topic is present when its best paper reaches it) at the ``absent_list_rate``
    quantile of the unanswerable list questions' top probability, so that share of absent-topic lists list
    nothing; ``listed`` 0.5 (a calibrated probability: even odds) unless that is below ``weak``."""
    ans = [r for r in rows if r["answerable"]]
    if not ans:
        return {"weak": 0.5, "answered": 0.5, "listed": 0.5, "veto": 0.0}

    def quantile(xs, rate):
        xs = np.sort(xs)
        return float(xs[int(math.floor(rate * len(xs)))]) - 1e-6

    by = {}
    for r in ans:
        by.setdefault(variant(r), []).append(top_probability(r, stack))
    weak = min(quantile(p, cfg.refuse_rate) for p in by.values())
    answered = max(weak, min(quantile(p, cfg.flag_rate) for p in by.values()))
    veto = quantile([top_support(r, stack) for r in ans], getattr(cfg, "veto_rate", 0.0))
    absent = [top_probability(r, stack) for r in rows if not r["answerable"] and r.get("list") and "hidden" not in variant(r)]
    topic = max(weak, quantile(absent, getattr(cfg, "absent_list_rate", 0.9)) + 2e-6) if absent else weak
    return {"weak": round(weak, 6), "answered": round(answered, 6), "listed": round(max(0.5, weak), 6),
            "veto": round(veto, 6), "topic": round(topic, 6)}


def verdict_of(row: dict, stack: dict, cut: dict) -> str:
    """The verdict the answer path gives a row under ``cut`` (assistant.relevance.judge.CrossEncoderJudge)."""
    p = top_probability(row, stack)
    if p < cut["weak"]:
        j = int(np.argmax(probabilities(row, stack)))
        close = top_support(row, stack) >= cut.get("veto", 0.0) > 0
        return "weak" if close or row["named"][j] else "none"
    return "weak" if p < cut["answered"] else "answered"


def shares(rows: list[dict], stack: dict, cut: dict) -> dict:
    """What the cutoffs do on ``rows``: shares refused (nothing found) and refused or flagged, per class."""
    ans = [verdict_of(r, stack, cut) for r in rows if r["answerable"]]
    non = [verdict_of(r, stack, cut) for r in rows if not r["answerable"]]
    f = lambda xs, vs: float(np.mean([x in vs for x in xs])) if xs else 0.0  # noqa: E731
    return {"answerable": len(ans), "none": len(non),
            "answerable_refused": f(ans, {"none"}), "answerable_flagged": f(ans, {"none", "weak"}),
            "none_refused": f(non, {"none"}), "none_flagged": f(non, {"none", "weak"})}


SHARES = ("answerable_refused", "answerable_flagged", "none_refused", "none_flagged")


def calibrate(rows: list[dict], cfg) -> tuple[dict, dict, dict]:
    """``(stack, cutoffs, cross-validated shares)``: the stacked calibration (:func:`fit_stack`) and
    cutoffs on every row, and the same fitted on k−1 folds of the questions (a question's rows over every
    index in one fold; questions in a fixed random order) and applied to the k-th. The shares are
    over all rows and, under ``by_variant``, per index the rows were asked over."""
    def fit(rs):
        stack = fit_stack(rs)
        return stack, choose_cutoffs(rs, stack, cfg)

    stack, cut = fit(rows)
    qids = sorted({r.get("qid") or str(i) for i, r in enumerate(rows)})
    random.Random(cfg.seed).shuffle(qids)
    fold_of = {q: n % cfg.folds for n, q in enumerate(qids)}
    fold = [fold_of[r.get("qid") or str(i)] for i, r in enumerate(rows)]
    scored = []
    for k in range(cfg.folds):
        fs, fc = fit([r for r, g in zip(rows, fold) if g != k])
        scored += [(r, fs, fc) for r, g in zip(rows, fold) if g == k]

    def pooled(items):
        out = {key: 0.0 for key in SHARES}
        for key, klass in zip(SHARES, ("answerable", "answerable", "none", "none")):
            n = sum(shares([r], s, c)[klass] for r, s, c in items)
            out[key] = float(sum(shares([r], s, c)[key] * shares([r], s, c)[klass] for r, s, c in items) / n) if n else 0.0
        return out

    cv = pooled(scored)
    names = sorted({variant(r) for r, _, _ in scored})
    if len(names) > 1:
        cv["by_variant"] = {v: {k: round(x, 4) for k, x in pooled([t for t in scored if variant(t[0]) == v]).items()}
                            for v in names}
    return stack, cut, cv


def list_cutoff(rows: list[dict], stack: dict, cfg) -> tuple[float, dict]:
    """The list cutoff on the calibrated probability (:func:`stack_probability`): the one with the best F1 of list
    membership on the held-out list rows (:func:`assistant.learning.crossencoder_calibrate.list_rows`); and its cross-validated precision and
    recall (chosen on k−1 folds of phrases, counted on the k-th). The rows' labels are weak (a paper
    about the topic in other words counts as off it), so the precision is a lower bound."""
    def probs(rs):
        p = np.concatenate([probabilities(r, stack) for r in rs]) if rs else np.zeros(0)
        return p, np.concatenate([r["labels"] for r in rs]).astype(bool)

    def best(rs):
        p, y = probs(rs)
        grid = np.round(np.arange(0.05, 0.96, 0.05), 2)
        f1 = [2 * (y & (p >= c)).sum() / max(1, (p >= c).sum() + y.sum()) for c in grid]
        return float(grid[int(np.argmax(f1))])

    if not rows:
        return 0.5, {}
    tp = fp = fn = 0
    for k in range(cfg.folds):
        c = best([r for i, r in enumerate(rows) if i % cfg.folds != k])
        p, y = probs([r for i, r in enumerate(rows) if i % cfg.folds == k])
        tp, fp, fn = tp + int((y & (p >= c)).sum()), fp + int((~y & (p >= c)).sum()), fn + int((y & (p < c)).sum())
    return best(rows), {"phrases": len(rows), "precision": tp / max(1, tp + fp), "recall": tp / max(1, tp + fn)}


def write_calibration(path: Path, stack: dict, cut: dict, meta: dict, version: int = 3) -> None:
    rounded = {k: [round(x, 6) for x in v] if isinstance(v, list) else round(v, 6) for k, v in stack.items()}
    data = {"name": "relevance", "version": version, "max_length": MAX_LENGTH, "max_question": MAX_QUESTION,
            "features": list(STACK_FEATURES), "stack": rounded, "cutoffs": cut, **meta}
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
