"""Calibration of the relevance cross-encoder's logits (pure numbers: no model, no index).

A stacked calibration on held-out questions' retrieved papers: logistic regression of "this paper
answers" on the cross-encoder's logit and four pair features (:data:`STACK_FEATURES`; Platt scaling
(Platt 1999) generalised to several inputs); the verdict
cutoffs on the best paper's probability within a refusal budget, their k-fold cross-validation, and the
list cutoff (best F1 on held-out lists). Rows are ``{"logits", "dense", "sentence", "named", "coverage", "labels", "answerable"}`` dicts as
:func:`assistant.learning.crossencoder_fit.candidate_logits` writes them.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np

from assistant.relevance.crossencoder import MAX_LENGTH, MAX_QUESTION, STACK_FEATURES, stack_probability


def features(row: dict) -> np.ndarray:
    """The :data:`STACK_FEATURES` of a row's papers, shape ``(len(row["logits"]), 5)``."""
    cols = [row["logits"], row["dense"], row["sentence"], row["named"], row["coverage"]]
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


def choose_cutoffs(rows: list[dict], stack: dict, cfg) -> dict:
    """Cutoffs on the top paper's probability: ``weak`` (below it: nothing found) refuses at most
    ``refuse_rate`` of the answerable rows, ``answered`` flags at most ``flag_rate``; ``listed`` is
    0.5 (a calibrated probability: even odds) unless that is below ``weak``."""
    p = np.sort([top_probability(r, stack) for r in rows if r["answerable"]])
    if not len(p):
        return {"weak": 0.5, "answered": 0.5, "listed": 0.5}
    weak = float(p[int(math.floor(cfg.refuse_rate * len(p)))]) - 1e-6
    answered = max(weak, float(p[int(math.floor(cfg.flag_rate * len(p)))]) - 1e-6)
    return {"weak": round(weak, 6), "answered": round(answered, 6), "listed": round(max(0.5, weak), 6)}


def shares(rows: list[dict], stack: dict, cut: dict) -> dict:
    """What the cutoffs do on ``rows``: shares refused (nothing found) and flagged, per class."""
    ans = [top_probability(r, stack) for r in rows if r["answerable"]]
    non = [top_probability(r, stack) for r in rows if not r["answerable"]]
    f = lambda xs, c: float(np.mean([x < c for x in xs])) if xs else 0.0  # noqa: E731
    return {"answerable": len(ans), "none": len(non),
            "answerable_refused": f(ans, cut["weak"]), "answerable_flagged": f(ans, cut["answered"]),
            "none_refused": f(non, cut["weak"]), "none_flagged": f(non, cut["answered"])}


def calibrate(rows: list[dict], cfg) -> tuple[dict, dict, dict]:
    """``(stack, cutoffs, cross-validated shares)``: the stacked calibration (:func:`fit_stack`) and
    cutoffs on every row, and the same fitted on k−1 folds and applied to the k-th (questions in a fixed
    random order)."""
    def fit(rs):
        stack = fit_stack(rs)
        return stack, choose_cutoffs(rs, stack, cfg)

    stack, cut = fit(rows)
    order = list(range(len(rows)))
    random.Random(cfg.seed).shuffle(order)
    fold_of = {i: n % cfg.folds for n, i in enumerate(order)}
    oof = []
    for k in range(cfg.folds):
        fs, fc = fit([r for i, r in enumerate(rows) if fold_of[i] != k])
        test = [r for i, r in enumerate(rows) if fold_of[i] == k]
        oof.append((shares(test, fs, fc), len(test)))
    cv = {key: float(sum(s[key] * n for s, n in oof) / sum(n for _, n in oof))
          for key in ("answerable_refused", "answerable_flagged", "none_refused", "none_flagged")}
    return stack, cut, cv


def list_cutoff(rows: list[dict], stack: dict, cfg) -> tuple[float, dict]:
    """The list cutoff on the calibrated probability (:func:`stack_probability`): the one with the best F1 of list
    membership on the held-out list rows (:func:`assistant.learning.crossencoder_fit.list_rows`); and its cross-validated precision and
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


def write_calibration(path: Path, stack: dict, cut: dict, meta: dict, version: int = 2) -> None:
    rounded = {k: [round(x, 6) for x in v] if isinstance(v, list) else round(v, 6) for k, v in stack.items()}
    data = {"name": "relevance", "version": version, "max_length": MAX_LENGTH, "max_question": MAX_QUESTION,
            "features": list(STACK_FEATURES), "stack": rounded, "cutoffs": cut, **meta}
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
