"""The evidence ranker (v3): a conditional logit plus gradient-boosted trees over an abstract's sentences.

``score(x) = blend · logit(x) + Σ trees(x, x − max over the abstract)``: the logit
(:class:`LinearModel`, fitted by :func:`assistant.relevance.learned.fit_listwise`) weighs
each feature of :data:`assistant.evidence.features.SENTENCE_FEATURES` alone; the trees (scikit-learn's
HistGradientBoostingClassifier, after LightGBM: Ke et al. 2017; fitted pointwise, "is this the gold
sentence", each question weighing its ``weight``) see combinations ("a quantity is asked *and* this
sentence holds the only share *and* it covers the asking clause") and how far each sentence is from
the abstract's best on every feature. The quoted sentence is the argmax of the score over one
abstract. 5-fold cross-validation on the 124 training lookups, three fold seeds (the synthetic
questions in every fold's training): logit alone 96 / 93 / 93 hits, logit + 200 trees at blend 0.5
99 / 96 / 100 (98 at seed 0 with the rounded file); 100 trees or blend 1–2 did worse, the trees
alone were less stable across seeds.

File (``evidence-v3.json``): the logit's fields as :meth:`LinearModel.to_json`, then ``blend``,
``gains`` (split gain per column of ``[x, x − max]``) and ``trees``, each a list of nodes
``[column, threshold, left, right, value]`` (a leaf has column −1), as the judge's file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property

import numpy as np


class ModelError(RuntimeError):
    """A model file is missing, unreadable, or was fitted on other features than this code computes."""


@dataclass(frozen=True)
class LinearModel:
    """``score(x) = coef · (x − mean) / scale + intercept`` over named features."""

    name: str
    version: int
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    cutoffs: dict

    @classmethod
    def neutral(cls, name: str, features: tuple[str, ...]) -> LinearModel:
        """A model that prefers nothing: every score 0, every verdict ``answered``."""
        k = len(features)
        return cls(name, 0, tuple(features), np.zeros(k), np.ones(k), np.zeros(k), 0.0,
                   {"none_below": 0.0, "weak_below": 0.0})

    def score(self, x: np.ndarray) -> np.ndarray:
        """Scores of feature rows ``x`` (shape ``(n, F)`` → ``(n,)``, or ``(F,)`` → scalar array)."""
        return ((np.asarray(x, dtype=np.float64) - self.mean) / self.scale) @ self.coef + self.intercept

    def probability(self, x: np.ndarray) -> np.ndarray:
        """Logistic of :meth:`score`."""
        return 1.0 / (1.0 + np.exp(-self.score(x)))

    def importances(self) -> list[tuple[str, float]]:
        """Features by |standardized coefficient|, largest first: what carries the decision."""
        return sorted(zip(self.features, self.coef.tolist()), key=lambda t: -abs(t[1]))

    def to_json(self) -> str:
        """The model file's text (stable: fixed key order, rounded numbers, so refits compare bit for bit)."""
        data = {"name": self.name, "version": self.version, "features": list(self.features),
                "mean": rounded(self.mean), "scale": rounded(self.scale), "coef": rounded(self.coef),
                "intercept": round(float(self.intercept), 6), "cutoffs": self.cutoffs}
        return json.dumps(data, indent=1) + "\n"

    @classmethod
    def from_dict(cls, data: dict, expected: tuple[str, ...] | None = None) -> LinearModel:
        feats = tuple(data["features"])
        if expected is not None and feats != tuple(expected):
            raise ModelError(f"model {data.get('name')!r} v{data.get('version')} was fitted on features "
                             f"{list(feats)}, this code computes {list(expected)}: run `paper-assistant train`")
        return cls(data["name"], int(data["version"]), feats, np.asarray(data["mean"], dtype=np.float64),
                   np.asarray(data["scale"], dtype=np.float64), np.asarray(data["coef"], dtype=np.float64),
                   float(data.get("intercept", 0.0)), dict(data.get("cutoffs", {})))


def rounded(a: np.ndarray) -> list[float]:
    """``a`` flattened, each value rounded to 6 decimals: how model files store arrays (a refit writes the same bytes)."""
    return [round(float(v), 6) for v in np.asarray(a).ravel()]


def relative(x: np.ndarray) -> np.ndarray:
    """``[x, x − column max]`` of one abstract's feature rows ``(n, F)`` → ``(n, 2F)``."""
    x = np.asarray(x, dtype=np.float64)
    return np.hstack([x, x - x.max(axis=0)]) if len(x) else np.zeros((0, 2 * x.shape[1]))


def sklearn_trees(gb, n_columns: int) -> tuple[tuple, np.ndarray]:
    """``(trees, split gain per column)`` of a fitted binary HistGradientBoostingClassifier, as node
    tuples ``(column, threshold, left, right, value)`` (a leaf has column −1)."""
    trees, gains = [], np.zeros(n_columns)
    for (pred,) in gb._predictors:  # one tree per boosting round for a binary label
        trees.append(tuple((-1 if n["is_leaf"] else int(n["feature_idx"]), float(n["num_threshold"]), int(n["left"]),
                            int(n["right"]), float(n["value"]) if n["is_leaf"] else 0.0) for n in pred.nodes))
        for n in pred.nodes:
            gains[int(n["feature_idx"])] += 0.0 if n["is_leaf"] else float(n["gain"])
    return tuple(trees), gains


def trees_json(trees: tuple) -> str:
    """The ``"trees"`` entry of a model file: one tree a line, numbers rounded (so a refit writes the same bytes)."""
    lines = [json.dumps([[int(f), round(float(t), 6), int(a), int(b), round(float(v), 6)] for f, t, a, b, v in tree],
                        separators=(",", ":")) for tree in trees]
    return ',\n "trees": [\n' + ",\n".join(lines) + "\n ]\n}\n"


def pack_trees(trees: tuple) -> tuple[np.ndarray, ...]:
    """``(column, threshold, left, right, value)`` arrays of shape ``(n_trees, most nodes)`` (padding: leaves of value 0)."""
    width = max((len(t) for t in trees), default=1)
    arr = np.zeros((len(trees), width, 5))
    arr[:, :, 0] = -1
    for i, tree in enumerate(trees):
        arr[i, : len(tree)] = tree
    return arr[:, :, 0].astype(np.int64), arr[:, :, 1], arr[:, :, 2].astype(np.int64), arr[:, :, 3].astype(np.int64), arr[:, :, 4]


def tree_sum(packed: tuple[np.ndarray, ...], rows: np.ndarray) -> np.ndarray:
    """Σ over the trees (:func:`pack_trees`) of the leaf value each row of ``rows`` ``(n, C)`` reaches → ``(n,)``;
    a node sends a row left when ``row[column] <= threshold``. All rows descend all trees together (numpy),
    one level a step: about a millisecond for 200 trees and an abstract's sentences."""
    col, thr, left, right, value = packed
    tree = np.arange(len(col))[:, None]
    at = np.arange(len(rows))[None, :]
    node = np.zeros((len(col), len(rows)), dtype=np.int64)
    while (inner := (c := col[tree, node]) >= 0).any():
        go_left = rows[at, np.where(inner, c, 0)] <= thr[tree, node]
        node = np.where(inner, np.where(go_left, left[tree, node], right[tree, node]), node)
    return value[tree, node].sum(axis=0)


class OverLinear:
    """What a boosted model (the ranker, the judge) tells of itself through its linear part ``linear``."""

    linear: LinearModel

    @property
    def version(self) -> int:
        return self.linear.version

    @property
    def features(self) -> tuple[str, ...]:
        return self.linear.features


@dataclass(frozen=True)
class BoostedRanker(OverLinear):
    """The evidence ranker: ``blend · linear.score(x) + tree_sum(trees, relative(x))`` (module docstring)."""

    linear: LinearModel
    trees: tuple
    """Each tree a tuple of nodes ``(column, threshold, left, right, value)``; a leaf has column −1."""
    blend: float
    gains: tuple = ()

    name = "evidence"

    def score(self, x: np.ndarray) -> np.ndarray:
        """Scores of the sentences of ONE abstract (``x``: ``(n, F)`` → ``(n,)``): the trees read each
        sentence against the abstract's best, so the rows must be one abstract's."""
        x = np.atleast_2d(np.asarray(x, dtype=np.float64))
        return self.blend * self.linear.score(x) + tree_sum(self._packed, relative(x))

    @cached_property
    def _packed(self) -> tuple[np.ndarray, ...]:
        return pack_trees(self.trees)

    def importances(self) -> list[tuple[str, float]]:
        """Features by half their share of |standardized coefficient| plus half their share of the
        trees' split gain (a feature's and its gap column's together), largest first."""
        coef = np.abs(self.linear.coef) / (np.abs(self.linear.coef).sum() or 1.0)
        gain = np.asarray(self.gains or np.zeros(2 * len(coef)), dtype=np.float64).reshape(2, -1).sum(axis=0)
        gain = gain / (gain.sum() or 1.0)
        return sorted(zip(self.features, ((coef + gain) / 2).round(3).tolist()), key=lambda t: -abs(t[1]))

    def to_json(self) -> str:
        """The model file's text (stable: rounded numbers, one tree a line)."""
        data = json.loads(self.linear.to_json())
        data |= {"blend": self.blend, "gains": [round(float(g), 6) for g in self.gains]}
        return json.dumps(data, indent=1)[:-2] + trees_json(self.trees)

    @classmethod
    def from_dict(cls, data: dict, linear: LinearModel) -> BoostedRanker:
        """The ranker of a model file's ``data`` whose logit part, already read, is ``linear``."""
        trees = tuple(tuple(tuple(n) for n in tree) for tree in data["trees"])
        return cls(linear, trees, float(data["blend"]), tuple(data.get("gains", ())))


def fit_boosted(linear: LinearModel, xs: list[np.ndarray], gold: list[int], weights: np.ndarray, cfg) -> BoostedRanker:
    """The ranker of a fitted ``linear`` logit and trees fitted on the abstracts ``xs`` (raw feature rows,
    gold sentence ``gold[i]``, question weight ``weights[i]`` on each of its sentences' rows), with
    ``cfg`` (assistant.learning.train.TrainSettings: ``evidence_trees``, ``evidence_depth``, ``evidence_learning_rate``,
    ``evidence_leaf``, ``evidence_blend``); round-tripped through the file format."""
    from sklearn.ensemble import HistGradientBoostingClassifier

    rows = np.vstack([relative(x) for x in xs])
    y = np.concatenate([np.arange(len(x)) == t for x, t in zip(xs, gold)]).astype(int)
    w = np.concatenate([np.full(len(x), q) for x, q in zip(xs, weights)])
    gb = HistGradientBoostingClassifier(max_iter=cfg.evidence_trees, max_depth=cfg.evidence_depth,
                                        learning_rate=cfg.evidence_learning_rate, min_samples_leaf=cfg.evidence_leaf,
                                        early_stopping=False, random_state=0).fit(rows, y, sample_weight=w)
    trees, gains = sklearn_trees(gb, rows.shape[1])
    model = BoostedRanker(linear, trees, float(cfg.evidence_blend), tuple(gains))
    data = json.loads(model.to_json())
    return BoostedRanker.from_dict(data, type(linear).from_dict(data))
