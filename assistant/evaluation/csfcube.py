"""Related-work quality on CSFCube (Mysore et al. 2021): re-rank its candidate pools, report NDCG@20 and recall@20."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

def format_csfcube(res: dict, as_json: bool = False) -> str:
    """:func:`run_csfcube`'s result as JSON or as lines (overall, then per facet)."""
    if as_json:
        return json.dumps(res, indent=2)
    lines = [f"CSFCube ({res['queries']} queries, candidate re-ranking): NDCG@20 {res['NDCG@20']:.3f}  R@20 {res['R@20']:.3f}"]
    for facet, r in sorted(res["per_facet"].items()):
        lines.append(f"  {facet:<11} n={r['n']:<3} NDCG@20 {r['NDCG@20']:.3f}  R@20 {r['R@20']:.3f}")
    return "\n".join(lines)


# --- CSFCube: related-work re-ranking ------------------------------------------------------------
def ndcg_graded(ranked: list[str], gains: dict[str, float], k: int = 20) -> float:
    """nDCG@k with graded gains (CSFCube relevance 0–3), log2 discount."""
    dcg = sum(gains.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def run_csfcube(encoder, folder: Path) -> dict:
    """Re-rank each CSFCube query's candidate pool; returns mean NDCG@20 and recall@20 (overall and per facet).

    Scoring (see :func:`assistant.research.related.facet_scores`): the facet's sentences are aligned to each
    candidate's sentences (mean over facet sentences of the best cosine), fused with whole-abstract
    similarity — the sentence-alignment idea of Mysore et al. (2022, "Multi-vector models with textual
    guidance for fine-grained scientific document similarity"), here with the packaged MiniLM.
    """
    from assistant.research import facet_scores
    from vectorstore.chunks import split_sentences

    folder = Path(folder)
    for need in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / need).is_file():
            raise FileNotFoundError(f"{folder} is not a CSFCube folder: {need} is missing (see shared/corpora/csfcube)")
    corpus = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if "id" not in r:
                continue
            corpus[r["id"]] = ((r.get("title") or "") + ". " + (r.get("abstract") or "")).strip()
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines() if line.strip()]
    if not queries:
        raise ValueError(f"{folder / 'queries.jsonl'}: no queries in the file")
    need = ("qid", "query", "facet", "facet_text", "query_paper_id", "gold_ids", "candidate_ids", "graded_relevance")
    for n, q in enumerate(queries, 1):
        missing = [k for k in need if k not in q]
        if missing:
            raise ValueError(f"{folder / 'queries.jsonl'}: query {n} lacks {', '.join(missing)}")
    needed = sorted({c for q in queries for c in q["candidate_ids"] if c in corpus})
    sents = {c: split_sentences(corpus[c]) or [corpus[c]] for c in needed}
    flat = [s for c in needed for s in sents[c]]
    vecs = encoder.encode(flat, batch_size=64)
    cache, pos = {}, 0
    for c in needed:
        cache[corpus[c]] = vecs[pos : pos + len(sents[c])]
        pos += len(sents[c])
    per_facet: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for q in queries:
        cands = [c for c in q["candidate_ids"] if c in corpus and c != q["query_paper_id"]]
        scores = facet_scores(encoder, q["facet_text"], q["query"], [corpus[c] for c in cands],
                              sentence_vectors=cache.__getitem__)
        ranked = [c for _, c in sorted(zip(scores, cands), key=lambda t: -t[0])]
        gains = {d: float(g) for d, g in q["graded_relevance"].items() if d != q["query_paper_id"]}
        gold = set(q["gold_ids"]) - {q["query_paper_id"]}
        rec = len(gold & set(ranked[:20])) / len(gold) if gold else 0.0
        per_facet[q["facet"]].append((ndcg_graded(ranked, gains, 20), rec))
    allrows = [r for rows in per_facet.values() for r in rows]
    summary = {"queries": len(allrows), "NDCG@20": sum(r[0] for r in allrows) / len(allrows),
               "R@20": sum(r[1] for r in allrows) / len(allrows)}
    summary["per_facet"] = {f: {"n": len(rows), "NDCG@20": sum(r[0] for r in rows) / len(rows),
                                "R@20": sum(r[1] for r in rows) / len(rows)} for f, rows in per_facet.items()}
    return summary
