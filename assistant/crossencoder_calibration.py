"""Calibration of the relevance cross-encoder's logits (pure numbers: no model, no index).

Platt scaling (Platt 1999) of ``σ(a·logit + b)`` on held-out questions' retrieved papers, the verdict
cutoffs on the best paper's probability within a refusal budget, their k-fold cross-validation, and the
list cutoff (best F1 on held-out lists). Rows are ``{"logits", "labels", "answerable"}`` dicts as
:func:`assistant.crossencoder_fit.candidate_logits` writes them.
"""

from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np

from assistant.crossencoder import MAX_LENGTH, MAX_QUESTION


def platt(logits: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    """``(a, b)`` of ``σ(a·logit + b)`` by logistic regression (scikit-learn, lbfgs, C=1e4)."""
    from sklearn.linear_model import LogisticRegression

    lr = LogisticRegression(C=1e4, max_iter=1000).fit(np.asarray(logits).reshape(-1, 1), np.asarray(labels))
    return float(lr.coef_[0, 0]), float(lr.intercept_[0])


def top_probability(row: dict, a: float, b: float) -> float:
    z = max(row["logits"]) if row["logits"] else -20.0
    return 1.0 / (1.0 + math.exp(-(a * z + b)))


def choose_cutoffs(rows: list[dict], a: float, b: float, cfg) -> dict:
    """Cutoffs on the top paper's probability: ``weak`` (below it: nothing found) refuses at most
    ``refuse_rate`` of the answerable rows, ``answered`` flags at most ``flag_rate``; ``listed`` is
    0.5 (a calibrated probability: even odds) unless that is below ``weak``."""
    p = np.sort([top_probability(r, a, b) for r in rows if r["answerable"]])
    if not len(p):
        return {"weak": 0.5, "answered": 0.5, "listed": 0.5}
    weak = float(p[int(math.floor(cfg.refuse_rate * len(p)))]) - 1e-6
    answered = max(weak, float(p[int(math.floor(cfg.flag_rate * len(p)))]) - 1e-6)
    return {"weak": round(weak, 6), "answered": round(answered, 6), "listed": round(max(0.5, weak), 6)}


def shares(rows: list[dict], a: float, b: float, cut: dict) -> dict:
    """What the cutoffs do on ``rows``: shares refused (nothing found) and flagged, per class."""
    ans = [top_probability(r, a, b) for r in rows if r["answerable"]]
    non = [top_probability(r, a, b) for r in rows if not r["answerable"]]
    f = lambda xs, c: float(np.mean([x < c for x in xs])) if xs else 0.0  # noqa: E731
    return {"answerable": len(ans), "none": len(non),
            "answerable_refused": f(ans, cut["weak"]), "answerable_flagged": f(ans, cut["answered"]),
            "none_refused": f(non, cut["weak"]), "none_flagged": f(non, cut["answered"])}


def calibrate(rows: list[dict], cfg) -> tuple[float, float, dict, dict]:
    """``(a, b, cutoffs, cross-validated shares)``: Platt scaling and cutoffs on every row, and the
    same fitted on k−1 folds and applied to the k-th (questions in a fixed random order)."""
    def fit(rs):
        lg = np.concatenate([r["logits"] for r in rs if r["logits"]])
        lb = np.concatenate([r["labels"] for r in rs if r["logits"]])
        a, b = platt(lg, lb)
        return a, b, choose_cutoffs(rs, a, b, cfg)

    a, b, cut = fit(rows)
    order = list(range(len(rows)))
    random.Random(cfg.seed).shuffle(order)
    fold_of = {i: n % cfg.folds for n, i in enumerate(order)}
    oof = []
    for k in range(cfg.folds):
        fa, fb, fc = fit([r for i, r in enumerate(rows) if fold_of[i] != k])
        test = [r for i, r in enumerate(rows) if fold_of[i] == k]
        oof.append((shares(test, fa, fb, fc), len(test)))
    cv = {key: float(sum(s[key] * n for s, n in oof) / sum(n for _, n in oof))
          for key in ("answerable_refused", "answerable_flagged", "none_refused", "none_flagged")}
    return a, b, cut, cv


def list_cutoff(rows: list[dict], a: float, b: float, cfg) -> tuple[float, dict]:
    """The list cutoff on the answer probability ``σ(a·logit + b)``: the one with the best F1 of list
    membership on the held-out list rows (:func:`list_rows`); and its cross-validated precision and
    recall (chosen on k−1 folds of phrases, counted on the k-th). The rows' labels are weak (a paper
    about the topic in other words counts as off it), so the precision is a lower bound."""
    def probs(rs):
        z = np.concatenate([r["logits"] for r in rs]) if rs else np.zeros(0)
        return 1.0 / (1.0 + np.exp(-(a * z + b))), np.concatenate([r["labels"] for r in rs]).astype(bool)

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


def write_calibration(path: Path, a: float, b: float, cut: dict, meta: dict) -> None:
    data = {"name": "relevance", "version": 1, "max_length": MAX_LENGTH, "max_question": MAX_QUESTION,
            "a": round(a, 6), "b": round(b, 6), "cutoffs": cut, **meta}
    Path(path).write_text(json.dumps(data, indent=1) + "\n")
