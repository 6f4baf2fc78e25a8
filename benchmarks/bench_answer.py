"""Answer latency, app start-up and app memory benchmark (a script, not a test).

    .venv/bin/python benchmarks/bench_answer.py     # needs the 23k index from bench_ingest.py

1. App start-up on the existing index: `paper-assistant serve --no-ingest` in a subprocess, timed
   from spawn until the page answers HTTP 200; then the first question through the app's /ask API
   (it loads the BM25 index and the exact-search matrix from their caches) and 10 more; the app's
   resident memory (VmRSS, and the peak VmHWM) is read from /proc after them.
2. Extractive answer latency, warm, in-process, with the default answer path (the relevance model and the
   name check on): Assistant.ask for the dev.jsonl questions and seeded random paper titles (~120), after 5
   warm-up questions; p50/p95. Then "Which papers …?" list questions apart (dev's list questions and
   "Which papers study <topic>?" for title phrases): the list path judges a pool of 20 papers, not 10.
Writes results/answer.json and results/answer.png.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from common import CORPUS_23K, DEV, RESULTS, ROOT, WORK, count_lines, machine, percentile, plt, write_json


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def proc_mem(pid: int) -> dict:
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:")):
                out[line.split(":")[0]] = int(line.split()[1]) / 1024
    return out


def app_startup(index_dir: Path, backend: str, questions: list[str]) -> dict:
    port = free_port()
    env = dict(os.environ, PAPER_ASSISTANT_EMBEDDING__BACKEND=backend, GRADIO_ANALYTICS_ENABLED="False")
    t0 = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "assistant", "serve", "--index", str(index_dir), "--no-ingest",
                             "--port", str(port)], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None:
                raise SystemExit(f"app exited: {proc.stderr.read().decode()[-2000:]}")
            if time.perf_counter() - t0 > 300:
                raise SystemExit("app not ready after 300 s")
            time.sleep(0.05)
        ready = time.perf_counter() - t0
        from gradio_client import Client

        client = Client(url, verbose=False)
        t = time.perf_counter()
        client.predict(questions[0], api_name="/ask")
        first = time.perf_counter() - t
        http = []
        for q in questions[1:11]:
            t = time.perf_counter()
            client.predict(q, api_name="/ask")
            http.append(time.perf_counter() - t)
        mem = proc_mem(proc.pid)
    finally:
        os.kill(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(proc.pid, signal.SIGKILL)
    return {"ready_s": ready, "first_answer_s": first, "http_answer_p50_ms": percentile(http, 50) * 1000,
            "rss_mb": mem.get("VmRSS"), "peak_rss_mb": mem.get("VmHWM")}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backend", default="onnx-int8", choices=["torch", "onnx", "onnx-int8"])
    ap.add_argument("--index", type=Path, default=None)
    ap.add_argument("--queries", type=int, default=120)
    args = ap.parse_args()
    total = count_lines(CORPUS_23K)
    index_dir = args.index or WORK / f"index-{args.backend}-{total}"
    dev = [json.loads(line)["question"] for line in DEV.read_text().splitlines() if line.strip()]
    titles = [json.loads(line).get("title") or "" for line in CORPUS_23K.read_text(encoding="utf-8").splitlines()]
    titles = [t for t in random.Random(0).sample(titles, 200) if t]
    questions = (dev + titles)[: args.queries]
    res = {"benchmark": "answer", "machine": machine(), "backend": args.backend, "index": str(index_dir)}
    print("app start-up ...", flush=True)
    res["app"] = app_startup(index_dir, args.backend, questions)
    print(json.dumps(res["app"]), flush=True)

    from assistant.answer.service import get_assistant
    from assistant.settings import load_settings

    settings = load_settings(index=index_dir, embedding={"backend": args.backend})
    t = time.perf_counter()
    assistant = get_assistant(settings)
    open_s = time.perf_counter() - t
    papers = assistant.index.store.counts()[0]
    for q in questions[:5]:
        assistant.ask(q)
    lat = []
    for q in questions:
        t = time.perf_counter()
        assistant.ask(q)
        lat.append(time.perf_counter() - t)
    res["extractive"] = {"papers": papers, "questions": len(lat), "open_s": open_s,
                         "p50_ms": percentile(lat, 50) * 1000, "p95_ms": percentile(lat, 95) * 1000,
                         "max_ms": max(lat) * 1000}
    topics = ["reinforcement learning", "graph neural networks", "federated learning", "diffusion models",
              "adversarial robustness", "causal inference", "meta-learning", "knowledge distillation",
              "contrastive learning", "neural architecture search", "bayesian optimization", "object detection",
              "machine translation", "speech recognition", "time series forecasting", "protein design",
              "differential privacy", "continual learning", "sparse attention", "model compression"]
    lists = [q for q in dev if q.lower().startswith("which papers")] + [f"Which papers study {t}?" for t in topics]
    list_lat = []
    for q in lists:
        t = time.perf_counter()
        assistant.ask(q)
        list_lat.append(time.perf_counter() - t)
    res["lists"] = {"questions": len(list_lat), "p50_ms": percentile(list_lat, 50) * 1000,
                    "p95_ms": percentile(list_lat, 95) * 1000, "max_ms": max(list_lat) * 1000}
    print(json.dumps(res["lists"]), flush=True)
    res["targets"] = {"answer_p95_ms": res["extractive"]["p95_ms"], "answer_p95_target_ms": 500,
                      "list_p95_ms": res["lists"]["p95_ms"], "list_p95_target_ms": 1000,
                      "app_ready_s": res["app"]["ready_s"], "app_ready_target_s": 8,
                      "app_rss_mb": res["app"]["rss_mb"], "app_rss_target_mb": 1536}
    write_json("answer", res)
    print(json.dumps(res["extractive"]), flush=True)
    pyplot = plt()
    fig, (a, b) = pyplot.subplots(1, 2, figsize=(10, 4))
    a.hist([x * 1000 for x in lat], bins=30)
    a.axvline(res["extractive"]["p95_ms"], color="k", ls="--", label=f"p95 {res['extractive']['p95_ms']:.0f} ms")
    a.axvline(500, color="red", ls=":", label="target p95 500 ms")
    a.set_xlabel("ms")
    a.set_title(f"Extractive answer latency, warm ({papers:,} papers)")
    a.legend(fontsize=8)
    names = ["ready (s)", "RSS (GiB)"]
    vals = [res["app"]["ready_s"], (res["app"]["rss_mb"] or 0) / 1024]
    targets = [8, 1.5]
    b.bar(names, vals, color=["tab:blue", "tab:green"])
    b.scatter(names, targets, color="red", marker="_", s=800, label="target", zorder=3)
    b.set_title("App on the existing index")
    b.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(RESULTS / "answer.png", dpi=110)
    print(json.dumps(res["targets"], indent=2))


if __name__ == "__main__":
    main()
