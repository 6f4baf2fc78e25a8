"""Related-work quality on CSFCube (Mysore et al. 2021): re-rank its candidate pools, report NDCG@20 and recall@20 of
the facet re-ranking, and NDCG@20 and MRR of related work's own order (:func:`related_orders`)."""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

import numpy as np

def format_csfcube(res: dict, as_json: bool = False) -> str:
    """:func:`run_csfcube`'s result as JSON or as lines (overall, then per facet)."""
    if as_json:
        return json.dumps(res, indent=2)
    lines = [f"CSFCube ({res['queries']} queries, candidate re-ranking): NDCG@20 {res['NDCG@20']:.3f}  R@20 {res['R@20']:.3f}"]
    for facet, r in sorted(res["per_facet"].items()):
        lines.append(f"  {facet:<11} n={r['n']:<3} NDCG@20 {r['NDCG@20']:.3f}  R@20 {r['R@20']:.3f}")
    for kind, orders in res.get("related", {}).items():
        lines.append(f"related work, {RELATED_QUERIES[kind]} (NDCG@20 / MRR of the first related paper, grade ≥ 2):")
        lines += [f"  {RELATED_ORDERS[name]:<44} {r['NDCG@20']:.3f} / {r['MRR']:.3f}" for name, r in orders.items()]
    return "\n".join(lines)


RELATED_QUERIES = {"abstract": "the query paper's abstract pasted", "short": "its facet text pasted (1–3 sentences)"}
RELATED_ORDERS = {"relevance": "relevance (what related work orders by)", "cosine": "dense cosine alone (the order until 2026-12-05)",
                  "rrf": "RRF of the dense and BM25 rankings"}


def related_orders(encoder, queries: list[dict], corpus: dict[str, str]) -> dict:
    """Related work's order on each pool, for the whole abstract and for the facet text as a pasted query:
    its relevance (:mod:`assistant.research.related_score`, the calibrated weight), the dense cosine alone
    and the RRF of the dense and BM25 rankings, each as mean NDCG@20 and MRR (first paper graded ≥ 2). The
    dense cosine is related work's (mean chunk embeddings), the idf that of the corpus' chunks."""
    from assistant.research import relevance, tfidf_cosines
    from assistant.retrieval import reciprocal_rank_fusion
    from assistant.settings import RelatedCalibration
    from vectorstore.chunks import Chunker
    from vectorstore.papers import Paper
    from vectorstore.store import LexicalIndex

    chunker = Chunker.for_encoder(encoder)
    chunks = {pid: [c.text for c in chunker.split(Paper(id=pid, text=text))] for pid, text in corpus.items()}
    lex = LexicalIndex.build([(f"{pid}:{i}", pid, t) for pid, ts in chunks.items() for i, t in enumerate(ts)], stamp="")
    needed = sorted({c for q in queries for c in q["candidate_ids"] if c in corpus})
    flat = [t for c in needed for t in chunks[c]]
    vecs, pos, cvec = encoder.encode(flat, batch_size=64), 0, {}
    for c in needed:
        v = vecs[pos: pos + len(chunks[c])].mean(axis=0)
        cvec[c], pos = v / (np.linalg.norm(v) or 1.0), pos + len(chunks[c])
    weight = RelatedCalibration().dense_weight
    rows: dict = {kind: {name: [] for name in RELATED_ORDERS} for kind in RELATED_QUERIES}
    for q in queries:
        cands = [c for c in q["candidate_ids"] if c in cvec and c != q["query_paper_id"]]
        gains = {d: float(g) for d, g in q["graded_relevance"].items() if d != q["query_paper_id"]}
        for kind, text in (("abstract", q["query"]), ("short", q["facet_text"])):
            qv = encoder.encode([c.text for c in chunker.split(Paper(id="q", text=text))]).mean(axis=0)
            cos = np.array([float(cvec[c] @ qv) for c in cands]) / (np.linalg.norm(qv) or 1.0)
            bm25 = _paper_bm25(lex, text, set(cands))
            lexical = tfidf_cosines(text, [corpus[c] for c in cands], lex.idf)
            orders = {"relevance": _by(cands, relevance(cos, lexical, weight)), "cosine": _by(cands, cos),
                      "rrf": reciprocal_rank_fusion([_by(cands, cos), sorted(bm25, key=lambda c: -bm25[c])])[0]}
            for name, ranked in orders.items():
                rank = next((i for i, d in enumerate(ranked, 1) if gains.get(d, 0.0) >= 2), None)
                rows[kind][name].append((ndcg_graded(ranked, gains, 20), 1.0 / rank if rank else 0.0))
    return {kind: {name: {"NDCG@20": float(np.mean([r[0] for r in v])), "MRR": float(np.mean([r[1] for r in v]))}
                   for name, v in orders.items()} for kind, orders in rows.items()}


def _by(ids: list[str], scores) -> list[str]:
    """``ids`` best first by ``scores`` (ties: the pool's order)."""
    return [ids[i] for i in np.argsort(-np.asarray(scores), kind="stable")]


def _paper_bm25(lex, text: str, pool: set[str]) -> dict[str, float]:
    """``{paper id: its best chunk's BM25 score for text}`` for the papers of ``pool`` that score above 0."""
    out: dict[str, float] = {}
    for i, s in enumerate(lex.scores(text)):
        pid = lex.paper_ids[i]
        if s > 0 and pid in pool:
            out[pid] = max(out.get(pid, 0.0), float(s))
    return out


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
    summary["related"] = related_orders(encoder, queries, corpus)
    return summary
