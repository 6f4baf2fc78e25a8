"""Print the performance table of docs/quality.md from benchmarks/results/*.json.

    .venv/bin/python benchmarks/report.py
"""

from __future__ import annotations

import json

from common import RESULTS


def load(name: str) -> dict | None:
    path = RESULTS / f"{name}.json"
    return json.loads(path.read_text()) if path.exists() else None


def main() -> None:
    rows = ["| measure | measured | target |", "|---|---|---|"]
    ing = load("ingest")
    if ing:
        ours = [r for r in ing["runs"] if r["kind"] == "ours" and r["backend"] == ing["backend"]]
        for r in ours:
            rows.append(f"| ingest {r['papers']:,} papers ({r['backend']}) | {r['papers_per_s']:.1f} papers/s, "
                        f"{r['chunks_per_s']:.1f} chunks/s, peak RSS {r['peak_rss_mb']:,.0f} MiB; raw encoder "
                        f"{r['raw_encoder']['chunks_per_s']:.1f} chunks/s → {r['ingest_vs_raw']:.2f}× | ≥ 0.9× raw encoder |")
        for r in ing["runs"]:
            if r["kind"] == "naive_langchain":
                rows.append(f"| naive LangChain `Chroma.from_documents`, torch, {r['papers']:,} papers | "
                            f"{r['papers_per_s']:.1f} papers/s | ours ≥ 2× → "
                            f"{ing['targets']['vs_naive_langchain'] or float('nan'):.2f}× |")
            elif r["kind"] == "ours" and r["backend"] != ing["backend"]:
                rows.append(f"| ingest {r['papers']:,} papers ({r['backend']}, reference) | {r['papers_per_s']:.1f} papers/s;"
                            f" raw encoder {r['raw_encoder']['chunks_per_s']:.1f} chunks/s | |")
    q = load("query")
    if q:
        for s in q["sizes"]:
            lat = s["latency_ms"]
            rows.append(f"| retrieval p50 / p95 at {s['papers']:,} papers ({s['chunks']:,} chunks) | "
                        + ", ".join(f"{m} {lat[m]['p50']:.1f} / {lat[m]['p95']:.1f} ms" for m in ("dense", "bm25", "hybrid", "exact", "hnsw") if m in lat)
                        + f"; dense p95 = {s['dense_p95_vs_exact_p95']:.2f}× exact; HNSW recall@10 {s['recall_at_10']:.4f}; "
                          f"query encoding p50 {s['query_encoding_ms']['p50']:.1f} ms"
                        + " | p95 ≤ 50 ms, ≤ 1.5× exact, recall ≥ 0.99 |")
    a = load("answer")
    if a:
        e, app = a["extractive"], a["app"]
        rows.append(f"| extractive answer, warm, {e['papers']:,} papers | p50 {e['p50_ms']:.0f} ms, p95 {e['p95_ms']:.0f} ms | p95 ≤ 300 ms |")
        rows.append(f"| app ready on the existing index | {app['ready_s']:.1f} s (first answer {app['first_answer_s']:.1f} s) | ≤ 8 s |")
        rows.append(f"| app RSS at {e['papers']:,} papers | {app['rss_mb']:,.0f} MiB (peak {app['peak_rss_mb']:,.0f}) | ≤ 1.5 GB |")
    for name, d in (("ingest", ing), ("query", q), ("answer", a)):
        if d:
            rows.append(f"\n{name}: {d['machine']['date']}, load average at start {d['machine']['loadavg_at_start']}")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
