"""Ranking metrics over one question: recall@k, MRR, nDCG@k (binary gains, or graded for 'related').

Definitions match ``shared/eval/score.py``: for kind ``related`` the gold list is ordered best first
and the i-th of n gold papers (0-based) has gain n − i; otherwise every gold paper has gain 1.
nDCG follows Järvelin & Kekäläinen (2002) with log2(rank + 1) discounting.
"""

from __future__ import annotations

import math


def recall_at_k(ranked: list[str], gold: list[str], k: int) -> float:
    """|gold ∩ top-k| / |gold|; 0.0 for empty gold."""
    return len(set(gold) & set(ranked[:k])) / len(gold) if gold else 0.0


def reciprocal_rank(ranked: list[str], gold: list[str]) -> float:
    """1 / rank of the first gold paper (1-based), 0.0 if none is ranked."""
    gs = set(gold)
    return next((1.0 / (i + 1) for i, d in enumerate(ranked) if d in gs), 0.0)


def ndcg_at_k(ranked: list[str], gold: list[str], k: int = 10, graded: bool = False) -> float:
    """nDCG@k with binary gains, or graded gains n − i for an ordered gold list."""
    if not gold:
        return 0.0
    n = len(gold)
    gain = {d: (n - i if graded else 1.0) for i, d in enumerate(gold)}
    dcg = sum(gain.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gain.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg


def ranking_metrics(ranked: list[str], gold: list[str], kind: str = "") -> dict[str, float]:
    """``{"R@1", "R@5", "R@10", "MRR", "nDCG@10"}`` for one ranked list (duplicates dropped)."""
    ranked = list(dict.fromkeys(ranked))
    return {
        "R@1": recall_at_k(ranked, gold, 1),
        "R@5": recall_at_k(ranked, gold, 5),
        "R@10": recall_at_k(ranked, gold, 10),
        "MRR": reciprocal_rank(ranked, gold),
        "nDCG@10": ndcg_at_k(ranked, gold, 10, graded=(kind == "related")),
    }
