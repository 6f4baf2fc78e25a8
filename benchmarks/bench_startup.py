"""Cold start of the commands a user runs first (a script, not a test).

    .venv/bin/python benchmarks/bench_startup.py [--index DIR] [--runs 5]

- ``ask``: a fresh ``paper-assistant ask "What is SyPE?"`` process on an existing index, spawn → exit
  (extractive: no LLM configured), ``--runs`` times;
- ``serve``: a fresh ``paper-assistant serve --no-ingest`` on a free port, spawn → the page answers HTTP
  200, then SIGTERM; ``--runs`` times.

Prints min / median / max and the load average the runs started under (a busy machine is slower: the
README's figures say which they were measured under). Writes results/startup.json.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import statistics
import subprocess
import sys
import time
import urllib.request

from common import ROOT, machine, write_json

EXE = [sys.executable, "-m", "assistant"]


def env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PAPER_ASSISTANT_LLM"))}


def time_ask(index: str) -> float:
    t0 = time.monotonic()
    subprocess.run([*EXE, "ask", "What is SyPE?", "--index", index], cwd=ROOT, env=env(), check=True,
                   capture_output=True, timeout=300)
    return time.monotonic() - t0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def time_serve(index: str) -> float:
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen([*EXE, "serve", "--index", index, "--port", str(port), "--no-ingest"], cwd=ROOT, env=env(),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"serve exited with {proc.returncode}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
                    if r.status == 200:
                        return time.monotonic() - t0
            except OSError:
                time.sleep(0.05)
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def summary(xs: list[float]) -> dict:
    return {"min_s": round(min(xs), 2), "median_s": round(statistics.median(xs), 2), "max_s": round(max(xs), 2),
            "runs": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--index", default=str(ROOT / "data" / "index"))
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    time_ask(args.index)  # the OS page cache warm, as for a user's second command
    res = {"machine": machine(), "ask": summary([time_ask(args.index) for _ in range(args.runs)]),
           "serve_http_200": summary([time_serve(args.index) for _ in range(args.runs)])}
    print(f"ask (cold process): {res['ask']}")
    print(f"serve to HTTP 200: {res['serve_http_200']}")
    print(write_json("startup", res))


if __name__ == "__main__":
    main()
