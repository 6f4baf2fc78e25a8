"""The two fitted models, as small JSON files in ``assistant/relevance/models/``: loaded once per process.

- The **evidence ranker** scores each sentence of an abstract for a question over
  :data:`assistant.evidence.features.SENTENCE_FEATURES`; the quoted sentence is the argmax. Fitted
  (:func:`fit_evidence`) as a conditional logit over each training lookup's abstract, the gold
  sentence the label (:func:`fit_listwise`; a pairwise logistic regression, :func:`fit_pairwise`,
  cross-validated one lookup worse), plus gradient-boosted trees (:class:`assistant.evidence.ranker.BoostedRanker`).
  Always used: ``Settings.calibration.sentences.learned`` names its version ("v3").

- The **relevance judge** (:class:`BoostedJudge`; used when ``Settings.calibration.abstention.learned``
  names its version, "v2"; off by default: see docs/settings.md) gives ``P(some retrieved paper answers)`` from
  :data:`assistant.relevance.features.JUDGE_FEATURES`: the mean of a logistic regression's and a small
  gradient-boosted tree ensemble's probabilities (scikit-learn's HistGradientBoostingClassifier, after
  LightGBM: Ke et al. 2017), and two cutoffs chosen by cross-validation on the training questions:
  below ``none_below`` "no relevant abstract found", below ``weak_below`` "closest match", else answered
  (each holding its refusal budget on the whole training index and on simulated small ones).

Both are fitted by ``paper-assistant train`` (:mod:`assistant.learning.train`) on ``eval/train/train.jsonl``
over its 2,000-paper corpus, never on the dev questions. File format: ``{"name", "version", "features",
"mean", "scale", "coef", "intercept", ...}``; the judge adds ``cutoffs``, ``baseline`` and ``trees``
(each a list of nodes ``[feature, threshold, left, right, value]``, a leaf has feature −1).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property, lru_cache
from pathlib import Path

import numpy as np

from assistant.evidence import (BoostedRanker, LinearModel, ModelError, OverLinear, fit_boosted, pack_trees, rounded,
                                sklearn_trees, tree_sum, trees_json)
from assistant.relevance.judge import Verdict, verdict_for

EVIDENCE_VERSION = 3
"""The evidence ranker's version (its file is ``evidence-v3.json``): 2 adds the answer-type features
and the synthetic definition questions; 3 the trees (assistant.evidence.ranker) and synthetic quantity questions."""


MODELS_DIR = Path(__file__).resolve().parent / "models"


@dataclass(frozen=True)
class BoostedJudge(OverLinear):
    """The relevance judge: ``P = (σ(linear score) + σ(baseline + Σ tree values)) / 2`` over named features.

    A tree is a list of nodes ``(feature, threshold, left, right, value)``: an inner node sends a row
    left when ``x[feature] <= threshold``; a leaf (feature −1) adds ``value`` to the raw score."""

    linear: LinearModel
    baseline: float
    trees: tuple
    cutoffs: dict
    gains: tuple = ()
    """Split gain summed per feature over all trees (the trees' share of the decision, for importances)."""

    name = "judge"

    def raw_trees(self, x: np.ndarray) -> np.ndarray:
        """``baseline + Σ tree values`` of feature rows ``x`` (``(n, F)`` → ``(n,)``)."""
        return tree_sum(self._packed, np.atleast_2d(np.asarray(x, dtype=np.float64)))

    @cached_property
    def _packed(self) -> tuple[np.ndarray, ...]:
        # The baseline is a first one-leaf tree: the sum then runs baseline, tree 1, tree 2, … as the
        # scores were always added, so the probabilities (and the cutoffs chosen on them) keep their bits.
        return pack_trees((((-1, 0.0, 0, 0, self.baseline),),) + tuple(self.trees))

    def probability(self, x: np.ndarray) -> np.ndarray:
        """P(answers) of feature rows ``x`` (``(n, F)`` → ``(n,)``, ``(F,)`` → scalar array)."""
        p = (self.linear.probability(x) + 1.0 / (1.0 + np.exp(-self.raw_trees(x)))) / 2
        return p if np.ndim(x) > 1 else p[0]

    def verdict(self, x: np.ndarray) -> Verdict:
        """The judge's verdict for one feature row."""
        return verdict_for(float(self.probability(x)), self.cutoffs)

    def importances(self) -> list[tuple[str, float]]:
        """Features by the trees' share of split gain plus |standardized coefficient| / Σ|coefficients|
        (each half of the model weighing 1), largest first."""
        coef = np.abs(self.linear.coef) / (np.abs(self.linear.coef).sum() or 1.0)
        gain = np.asarray(self.gains or np.zeros(len(coef)), dtype=np.float64)
        gain = gain / (gain.sum() or 1.0)
        return sorted(zip(self.features, ((coef + gain) / 2).round(3).tolist()), key=lambda t: -abs(t[1]))

    def to_json(self) -> str:
        """The model file's text: the linear part as :meth:`LinearModel.to_json`, then one tree a line."""
        data = json.loads(self.linear.to_json())
        data |= {"cutoffs": self.cutoffs, "baseline": round(float(self.baseline), 6), "gains": rounded(self.gains)}
        return json.dumps(data, indent=1)[:-2] + trees_json(self.trees)

    @classmethod
    def from_sklearn(cls, linear: LinearModel, gb, cutoffs: dict) -> BoostedJudge:
        """The judge of ``linear`` and a fitted binary HistGradientBoostingClassifier ``gb``, round-tripped
        through the file format (so what training scores is what the file gives)."""
        trees, gains = sklearn_trees(gb, len(linear.features))
        model = cls(linear, float(np.ravel(gb._baseline_prediction)[0]), trees, cutoffs, tuple(gains))
        return cls.from_dict(json.loads(model.to_json()))

    @classmethod
    def from_dict(cls, data: dict, expected: tuple[str, ...] | None = None) -> BoostedJudge:
        linear = LinearModel.from_dict(data, expected)
        trees = tuple(tuple(tuple(n) for n in tree) for tree in data["trees"])
        return cls(linear, float(data["baseline"]), trees, dict(data.get("cutoffs", {})), tuple(data.get("gains", ())))


def cutoff_for(probabilities: np.ndarray, rate: float) -> float:
    """The largest cutoff that leaves at most ``rate`` of ``probabilities`` (the answerable
    questions') strictly below it: midway between the allowed count's value and the next one."""
    p = np.sort(np.asarray(probabilities, dtype=np.float64))
    if not len(p):
        return 0.0
    allowed = int(np.floor(rate * len(p) + 1e-9))
    if allowed == 0:
        return float(p[0])
    return float((p[allowed - 1] + p[allowed]) / 2) if allowed < len(p) else float(p[-1])


def tradeoff(p_answerable: np.ndarray, p_none: np.ndarray, rates=(0.0, 0.01, 0.02, 0.03, 0.05, 0.1, 0.2)) -> list[dict]:
    """For cutoffs that refuse each ``rate`` of the answerable questions: the share of ``none``
    questions refused at that cutoff (the abstained vs wrongly abstained trade-off)."""
    out = []
    for rate in rates:
        c = cutoff_for(p_answerable, rate)
        out.append({"cutoff": round(c, 4), "answerable_abstained": float(np.mean(p_answerable < c)) if len(p_answerable) else 0.0,
                    "none_abstained": float(np.mean(p_none < c)) if len(p_none) else 0.0})
    return out


def model_path(name: str, folder: Path | None = None) -> Path:
    """``<folder>/<name>.json`` (default folder: the package's models/); ``name`` carries the version
    ("judge-v2", as ``Settings.calibration`` names it)."""
    return (folder or MODELS_DIR) / f"{name}.json"


@lru_cache(maxsize=8)
def load_model(name: str, folder: Path | None = None):
    """The model file ``name`` ("evidence-v1", "judge-v2") from ``folder``, read once per process.
    Raises ModelError for a missing or unreadable file, or one fitted on other features."""
    from assistant.evidence import SENTENCE_FEATURES
    from assistant.relevance.features import JUDGE_FEATURES

    path = model_path(name, folder)
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ModelError(f"cannot read the {name} model {path}: {exc}; run `paper-assistant train`") from exc
    expected = {"evidence": SENTENCE_FEATURES, "judge": JUDGE_FEATURES}.get(data.get("name"))
    if "trees" in data and data.get("name") == "evidence":
        return BoostedRanker.from_dict(data, LinearModel.from_dict(data, expected))
    return (BoostedJudge if "trees" in data else LinearModel).from_dict(data, expected)


def fit_listwise(xs: list[np.ndarray], gold: list[int], weights: np.ndarray, C: float) -> np.ndarray:
    """Conditional logit (softmax over each abstract's sentences, the gold one the label; McFadden 1974,
    ListNet's top-one form, Cao et al. 2007): minimizes ``|w|²/(2C) − Σ weight · log P(gold)`` with
    L-BFGS from zero (deterministic)."""
    from scipy.optimize import minimize

    def loss(w):
        value, grad = 0.5 * w @ w / C, w / C
        for x, t, q in zip(xs, gold, weights):
            s = x @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            value -= q * np.log(p[t] + 1e-300)
            grad -= q * (x[t] - p @ x)
        return value, grad

    return minimize(loss, np.zeros(xs[0].shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 5000}).x


def fit_pairwise(xs: list[np.ndarray], gold: list[int], weights: np.ndarray, C: float) -> np.ndarray:
    """Pairwise logistic regression (scikit-learn, lbfgs): gold minus each other sentence, each
    question weighing ``weight`` in all (RankNet with a linear scorer; Herbrich et al. 2000)."""
    from sklearn.linear_model import LogisticRegression

    diffs, w = [], []
    for x, t, q in zip(xs, gold, weights):
        others = np.delete(x, t, axis=0)
        diffs.append(x[t] - others)
        w.append(np.full(len(others), q / len(others)))
    d, w = np.vstack(diffs), np.concatenate(w)
    lr = LogisticRegression(C=C, fit_intercept=False, max_iter=5000)
    lr.fit(np.vstack([d, -d]), np.r_[np.ones(len(d)), np.zeros(len(d))], sample_weight=np.r_[w, w])
    return lr.coef_[0]


def fit_evidence(rows: list, cfg=None):
    """The evidence ranker fitted on ``rows`` (assistant.learning.trainset.QuestionRow) that have a gold sentence,
    with ``cfg`` (assistant.learning.train.TrainSettings: ``objective``, ``C``, ``evidence_trees`` …; default
    listwise, C = 1, no trees). Standardized features, then :func:`fit_listwise` or :func:`fit_pairwise`;
    with trees, :func:`assistant.evidence.ranker.fit_boosted` over that logit. Raises ValueError when no row has
    a gold sentence."""
    from assistant.evidence import SENTENCE_FEATURES

    usable = [r for r in rows if r.gold_x is not None and r.gold_label >= 0 and len(r.gold_x) > 1]
    if not usable:
        raise ValueError("no lookup question with an evidence sentence found in its gold abstract")
    x = np.vstack([r.gold_x for r in usable]).astype(np.float64)
    mean, scale = x.mean(axis=0), np.where(x.std(axis=0) > 1e-9, x.std(axis=0), 1.0)
    xs = [(r.gold_x.astype(np.float64) - mean) / scale for r in usable]
    fit = fit_pairwise if getattr(cfg, "objective", "listwise") == "pairwise" else fit_listwise
    gold, weights = [r.gold_label for r in usable], np.array([r.weight for r in usable])
    coef = fit(xs, gold, weights, getattr(cfg, "C", 1.0))
    linear = LinearModel("evidence", EVIDENCE_VERSION, SENTENCE_FEATURES, mean, scale, coef, 0.0, {})
    if getattr(cfg, "evidence_trees", 0) <= 0:
        return linear
    return fit_boosted(linear, [r.gold_x for r in usable], gold, weights, cfg)
