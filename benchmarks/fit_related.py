"""Fit related work's two learned pieces on CSFCube (never on dev.jsonl) and write assistant/research/facets.json.

1. The facet of a sentence (background / method / result, CSFCube's facets): logistic regression on
   the sentence's MiniLM embedding and its relative position in the abstract, trained on the
   sentences of the queries' ``facet_text`` (each labelled by its facet); scored by leave-one-paper-out
   cross-validation against the position-only model.
2. Related work's relevance score (assistant/research/related_score.py: ``w · dense cosine + (1 − w) · TF-IDF
   cosine``) between a query (its whole abstract, and its facet text alone, a short pasted text) and each
   candidate of its pool: ``w`` with the best mean NDCG@20 over both kinds of query (steps of 0.05), then
   the bar on that score against CSFCube's graded relevance (≥ 2: related). Each bar keeps 90% of the
   related pairs (P(related | score) stays under 0.5 in pools of hard negatives, so a probability bar
   would drop nearly everything); the tables printed show the grid and the trade-off. The values go to
   ``calibration.related`` (``dense_weight``, ``min_similarity``, ``min_similarity_short``) by hand.

Run: ``python benchmarks/fit_related.py ../shared/corpora/csfcube`` (about 5 minutes on 2 cores).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GroupKFold, cross_val_predict

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.evaluation.csfcube import ndcg_graded  # noqa: E402
from assistant.research.facets import FACETS, facet_features  # noqa: E402
from assistant.research.related_score import relevance, tfidf_cosines  # noqa: E402
from assistant.settings import load_settings  # noqa: E402
from vectorstore.chunks import Chunker, split_sentences  # noqa: E402
from vectorstore.encoding import get_encoder, resolve_backend  # noqa: E402
from vectorstore.papers import Paper  # noqa: E402
from vectorstore.store import LexicalIndex  # noqa: E402


RECALL = 0.9
"""Share of CSFCube's related pairs (grade ≥ 2) the related-work bar keeps."""


def main(folder: Path) -> None:
    e = load_settings().embedding
    enc = get_encoder(e.model, e.batch_size, resolve_backend(e.model, e.backend))
    qs = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines() if x.strip()]
    corpus = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if "id" in r:
            corpus[r["id"]] = ((r.get("title") or "") + ". " + (r.get("abstract") or "")).strip()

    # --- 1. facets ------------------------------------------------------------------------------
    X, y, groups = [], [], []
    for q in qs:
        sents = split_sentences(q["query"])
        facet_sents = {" ".join(s.split()) for s in split_sentences(q["facet_text"])}
        vecs = enc.encode(sents)
        feats = facet_features(vecs)
        for s, f in zip(sents, feats):
            if " ".join(s.split()) in facet_sents:
                X.append(f)
                y.append(FACETS.index(q["facet"]))
                groups.append(q["query_paper_id"])
    X, y = np.array(X), np.array(y)
    cv = GroupKFold(n_splits=5)
    report = {}
    for name, cols in (("position only", slice(-2, None)), ("embedding + position", slice(None))):
        pred = cross_val_predict(LogisticRegression(C=1.0, max_iter=2000), X[:, cols], y, groups=groups, cv=cv)
        report[name] = float((pred == y).mean())
    model = LogisticRegression(C=1.0, max_iter=2000).fit(X, y)

    # --- 2. the relevance score's weight and the bar ------------------------------------------------
    pairs = _pairs(enc, qs, corpus)
    weight, grid = fit_weight(pairs)
    score = relevance(pairs["cos"], pairs["tfidf"], weight)
    rel, short = pairs["rel"], pairs["short"]
    # Pools hold hard negatives only (every candidate was retrieved as similar), so P(related | score)
    # never reaches 0.5 and a bar there would drop nearly every related paper. The bar is set for recall
    # instead: the score that keeps RECALL of the related pairs, one bar for whole-abstract queries and one
    # for short ones (facet texts, 1–3 sentences), whose scores run lower.
    bars = {k: float(np.quantile(score[(rel == 1) & (short == k)], 1 - RECALL)) for k in (0, 1)}
    above = score >= np.where(short == 1, bars[1], bars[0])
    table = []
    for t in np.round(np.arange(0.2, 0.75, 0.05), 2):
        row = {"relevance": float(t)}
        for name, k in (("abstract", 0), ("short", 1)):
            m = short == k
            row[f"recall_{name}"] = round(float((score[m & (rel == 1)] >= t).mean()), 3)
            row[f"kept_unrelated_{name}"] = round(float((score[m & (rel == 0)] >= t).mean()), 3)
        table.append(row)
    print("\n".join(json.dumps(r) for r in grid + table))
    out = {
        "facets": FACETS,
        "coef": model.coef_.round(5).tolist(),
        "intercept": model.intercept_.round(5).tolist(),
        "provenance": {
            "data": "CSFCube queries.jsonl: facet_text sentences of the 50 queries (34 papers), labelled by facet",
            "sentences": int(len(y)),
            "cv_accuracy_leave_papers_out": {k: round(v, 3) for k, v in report.items()},
        },
        "relevance": {"dense_weight": weight, "rule": "the weight of the dense cosine (vs the TF-IDF cosine) with the "
                      "best mean NDCG@20 over the abstract and the short queries, in steps of 0.05", "grid": grid},
        "bar": {"relevance": round(bars[0], 3), "relevance_short": round(bars[1], 3),
                "pairs": int(len(rel)), "related_share": round(float(rel.mean()), 3),
                "precision_above": round(float(rel[above].mean()), 3) if above.any() else None,
                "recall_above": round(float(above[rel == 1].mean()), 3),
                "unrelated_kept": round(float(above[rel == 0].mean()), 3), "rule": f"recall {RECALL} of related pairs"},
    }
    (ROOT / "assistant" / "research" / "facets.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k not in ("coef", "intercept")}, indent=1))


def _pairs(enc, qs: list[dict], corpus: dict[str, str]) -> dict[str, np.ndarray]:
    """Per (query, candidate) of every pool, for the whole abstract (``short`` 0) and the facet text alone (1):
    the dense cosine as related work computes it (mean chunk embeddings), the TF-IDF cosine with the idf of the
    corpus' chunks (as the index's BM25 has it), whether CSFCube grades it related (≥ 2), its graded gain and
    which query it belongs to. Cached in $TMPDIR (delete the file to recompute)."""
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "paper-assistant-csfcube-pairs-v2.npz"
    if cache.is_file():
        z = np.load(cache)
        return {k: z[k] for k in z.files}
    chunker = Chunker(enc.count_tokens, enc.max_tokens)
    chunks = {pid: [c.text for c in chunker.split(Paper(id=pid, text=text))] for pid, text in corpus.items()}
    lex = LexicalIndex.build([(f"{pid}:{i}", pid, t) for pid, ts in chunks.items() for i, t in enumerate(ts)], stamp="")

    def embed(texts: list[str]) -> np.ndarray:
        v = enc.encode(texts).mean(axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    cands = sorted({c for q in qs for c in q["candidate_ids"] if c in corpus})
    cvec = {c: embed(chunks[c]) for c in cands}
    rows: dict[str, list] = {k: [] for k in ("cos", "tfidf", "rel", "gain", "short", "query")}
    for n, q in enumerate(qs):
        for is_short, qtext in ((0, q["query"]), (1, q["facet_text"])):
            qv = embed([c.text for c in chunker.split(Paper(id="q", text=qtext))])
            pool = [c for c in q["candidate_ids"] if c in cvec and c != q["query_paper_id"]]
            rows["cos"] += [float(cvec[c] @ qv) for c in pool]
            rows["tfidf"] += tfidf_cosines(qtext, [corpus[c] for c in pool], lex.idf).tolist()
            gains = [float(q["graded_relevance"].get(c, 0)) for c in pool]
            rows["rel"] += [int(g >= 2) for g in gains]
            rows["gain"] += gains
            rows["short"] += [is_short] * len(pool)
            rows["query"] += [2 * n + is_short] * len(pool)
    out = {k: np.array(v) for k, v in rows.items()}
    np.savez(cache, **out)
    return out


def fit_weight(pairs: dict[str, np.ndarray]) -> tuple[float, list[dict]]:
    """``(dense weight, the grid)``: the weight of the dense cosine in the relevance score with the best mean
    NDCG@20 over the abstract queries and the short ones (each query its pool, ordered by the score)."""
    grid = []
    for w in np.round(np.arange(0.5, 1.0001, 0.05), 2):
        score = relevance(pairs["cos"], pairs["tfidf"], float(w))
        ndcg = {k: [] for k in (0, 1)}
        for qid in np.unique(pairs["query"]):
            m = pairs["query"] == qid
            order = np.argsort(-score[m], kind="stable")
            ranked = [str(i) for i in order]
            gains = {str(i): g for i, g in enumerate(pairs["gain"][m]) if g > 0}
            ndcg[int(pairs["short"][m][0])].append(ndcg_graded(ranked, gains, 20))
        grid.append({"dense_weight": float(w), "ndcg_abstract": round(float(np.mean(ndcg[0])), 4),
                     "ndcg_short": round(float(np.mean(ndcg[1])), 4)})
    best = max(grid, key=lambda r: (r["ndcg_abstract"] + r["ndcg_short"], r["dense_weight"]))
    return best["dense_weight"], grid


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpora" / "csfcube"))
