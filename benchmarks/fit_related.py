"""Fit related work's two learned pieces on CSFCube (never on dev.jsonl) and write assistant/research/facets.json.

1. The facet of a sentence (background / method / result, CSFCube's facets): logistic regression on
   the sentence's MiniLM embedding and its relative position in the abstract, trained on the
   sentences of the queries' ``facet_text`` (each labelled by its facet); scored by leave-one-paper-out
   cross-validation against the position-only model.
2. The related-work bar: the dense cosine (mean chunk embeddings, as related_work computes it)
   between a query (its whole abstract, and its facet text alone, a short pasted text) and each
   candidate of its pool, against CSFCube's graded relevance (≥ 2: related). Each bar keeps 90% of
   the related pairs (P(related | cosine) stays under 0.5 below 0.8 in pools of hard negatives, so a
   probability bar would drop nearly everything); the table printed shows the trade-off.

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

from assistant.research.related import FACETS, facet_features  # noqa: E402
from assistant.settings import load_settings  # noqa: E402
from vectorstore.chunks import Chunker, split_sentences  # noqa: E402
from vectorstore.encoding import get_encoder, resolve_backend  # noqa: E402
from vectorstore.papers import Paper  # noqa: E402


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

    # --- 2. the bar -----------------------------------------------------------------------------
    chunker = Chunker(enc.count_tokens, enc.max_tokens)

    def embed(text: str) -> np.ndarray:
        v = enc.encode([c.text for c in chunker.split(Paper(id="q", text=text))]).mean(axis=0)
        return v / (np.linalg.norm(v) or 1.0)

    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "paper-assistant-csfcube-pairs.npz"
    if cache.is_file():
        z = np.load(cache)
        cos, rel, short = z["cos"], z["rel"], z["short"]
    else:
        cands = sorted({c for q in qs for c in q["candidate_ids"] if c in corpus})
        cvec = {c: embed(corpus[c]) for c in cands}
        cos, rel, short = [], [], []
        for q in qs:
            for is_short, qtext in ((0, q["query"]), (1, q["facet_text"])):
                qv = embed(qtext)
                for c in q["candidate_ids"]:
                    if c in cvec and c != q["query_paper_id"]:
                        cos.append(float(cvec[c] @ qv))
                        rel.append(int(float(q["graded_relevance"].get(c, 0)) >= 2))
                        short.append(is_short)
        cos, rel, short = np.array(cos), np.array(rel), np.array(short)
        np.savez(cache, cos=cos, rel=rel, short=short)
    # Pools hold hard negatives only (every candidate was retrieved as similar), so P(related | cosine)
    # never reaches 0.5 below 0.8 and a bar there would drop nearly every related paper. The bar is set
    # for recall instead: the cosine that keeps RECALL of the related pairs, one bar for whole-abstract
    # queries and one for short ones (facet texts, 1–3 sentences), whose cosines run lower.
    bars = {k: float(np.quantile(cos[(rel == 1) & (short == k)], 1 - RECALL)) for k in (0, 1)}
    above = cos >= np.where(short == 1, bars[1], bars[0])
    table = []
    for t in np.round(np.arange(0.2, 0.75, 0.05), 2):
        row = {"cosine": float(t)}
        for name, k in (("abstract", 0), ("short", 1)):
            m = short == k
            row[f"recall_{name}"] = round(float((cos[m & (rel == 1)] >= t).mean()), 3)
            row[f"kept_unrelated_{name}"] = round(float((cos[m & (rel == 0)] >= t).mean()), 3)
        table.append(row)
    print("\n".join(json.dumps(r) for r in table))
    out = {
        "facets": FACETS,
        "coef": model.coef_.round(5).tolist(),
        "intercept": model.intercept_.round(5).tolist(),
        "provenance": {
            "data": "CSFCube queries.jsonl: facet_text sentences of the 50 queries (34 papers), labelled by facet",
            "sentences": int(len(y)),
            "cv_accuracy_leave_papers_out": {k: round(v, 3) for k, v in report.items()},
        },
        "bar": {"cosine": round(bars[0], 3), "cosine_short": round(bars[1], 3),
                "pairs": int(len(rel)), "related_share": round(float(rel.mean()), 3),
                "precision_above": round(float(rel[above].mean()), 3) if above.any() else None,
                "recall_above": round(float(above[rel == 1].mean()), 3),
                "unrelated_kept": round(float(above[rel == 0].mean()), 3), "rule": f"recall {RECALL} of related pairs"},
    }
    (ROOT / "assistant" / "facets.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({k: v for k, v in out.items() if k not in ("coef", "intercept")}, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1] if len(sys.argv) > 1 else ROOT.parent / "shared" / "corpora" / "csfcube"))
