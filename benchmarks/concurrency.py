"""Chat latency at 1, 5 and 20 simultaneous sessions, through the real page.

    .venv/bin/python benchmarks/concurrency.py                      # the index in data/index (ingested if needed)
    .venv/bin/python benchmarks/concurrency.py --index /tmp/idx --rounds 5 --sessions 1 5 20
    .venv/bin/python benchmarks/concurrency.py --url http://127.0.0.1:7860/   # a page that is already running

Each session is one ``gradio_client.Client`` in its own thread asking ``--rounds`` questions one
after another on the Chat endpoint (with its growing chat history, like a person typing); all
sessions start together. For every level it prints p50/p95/max latency per answer, throughput,
and whether each answer's first source is the expected paper. In-process (no ``--url``) it also
times the encoder's lock (``Encoder._lock`` around every ``encode``): how long answers waited for
it and how long it was held, which shows whether that lock serializes concurrent sessions.
Results go to ``benchmarks/results/concurrency-<UTC time>.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import socket
import statistics
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("NO_PROXY", "127.0.0.1,localhost")

from tests.smoke_questions import QUESTIONS  # noqa: E402  (after sys.path)


class _NoLock:
    def acquire(self):
        return True

    def release(self):
        pass


class TimedLock:
    """A drop-in for ``threading.Lock`` used as a context manager, totalling wait and hold times.
    With ``exclusive=False`` it only times (no mutual exclusion): an experiment, see ``--no-encoder-lock``."""

    def __init__(self, exclusive: bool = True):
        self._lock = threading.Lock() if exclusive else _NoLock()
        self._stats = threading.Lock()
        self._local = threading.local()
        self.reset()

    def reset(self):
        self.acquisitions, self.wait, self.hold, self.max_wait = 0, 0.0, 0.0, 0.0

    def __enter__(self):
        t0 = time.perf_counter()
        self._lock.acquire()
        t1 = time.perf_counter()
        self._local.t = t1
        with self._stats:
            self.acquisitions += 1
            self.wait += t1 - t0
            self.max_wait = max(self.max_wait, t1 - t0)
        return self

    def __exit__(self, *exc):
        held = time.perf_counter() - self._local.t
        self._lock.release()
        with self._stats:
            self.hold += held
        return False

    def report(self) -> dict:
        return {"acquisitions": self.acquisitions, "wait_s": round(self.wait, 4), "hold_s": round(self.hold, 4),
                "max_wait_ms": round(self.max_wait * 1000, 1)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def first_source(panel: str) -> str | None:
    m = re.search(r'class="pa-source"[^>]*>.*?<code>([^<]+)</code>', panel or "", re.S)
    return m.group(1) if m else None


def percentile(values: list[float], p: float) -> float:
    """Nearest-rank percentile (p in 0..100)."""
    s = sorted(values)
    return s[max(0, min(len(s) - 1, int(round(p / 100 * len(s) + 0.5)) - 1))]


def start_app(index: Path | None, exclusive: bool = True):
    """Launch the page in this process over ``index``; returns (url, encoder lock timer, close)."""
    import assistant.page as web
    from assistant.settings import load_settings

    settings = load_settings(**({"index": index} if index else {}))
    assistant = web.prepare_assistant(settings, ingest_default=True)
    timer = TimedLock(exclusive)
    assistant.index.encoder._lock = timer  # measure, don't change: same semantics as the Lock
    demo = web.build_app(settings, assistant)
    demo.queue(default_concurrency_limit=20)  # as app.launch does
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    return f"http://127.0.0.1:{port}/", timer, demo.close


def run_level(url: str, sessions: int, rounds: int) -> dict:
    from gradio_client import Client

    clients = [None] * sessions

    def make(i):
        clients[i] = Client(url, verbose=False)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(sessions)]
    [t.start() for t in threads]
    [t.join() for t in threads]

    latencies: list[float] = []
    wrong: list[dict] = []
    errors: list[str] = []
    lock = threading.Lock()
    gate = threading.Barrier(sessions)

    def session(i):
        history = []
        gate.wait()
        for r in range(rounds):
            q, expected = QUESTIONS[(i + r) % len(QUESTIONS)]
            t0 = time.perf_counter()
            try:
                _, history, panel = clients[i].predict(q, history, api_name="/chat")
            except Exception as exc:
                with lock:
                    errors.append(repr(exc)[:200])
                continue
            dt = time.perf_counter() - t0
            got = first_source(panel)
            with lock:
                latencies.append(dt)
                if got != expected:
                    wrong.append({"session": i, "question": q, "expected": expected, "got": got})

    t0 = time.perf_counter()
    threads = [threading.Thread(target=session, args=(i,)) for i in range(sessions)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    wall = time.perf_counter() - t0
    n = len(latencies)
    return {
        "sessions": sessions, "rounds": rounds, "answers": n, "wall_s": round(wall, 3),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1) if n else None,
        "p95_ms": round(percentile(latencies, 95) * 1000, 1) if n else None,
        "max_ms": round(max(latencies) * 1000, 1) if n else None,
        "mean_ms": round(statistics.fmean(latencies) * 1000, 1) if n else None,
        "answers_per_s": round(n / wall, 2) if wall else None,
        "wrong": wrong, "errors": errors,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", type=Path, help="index directory (default: the configured one, data/index)")
    ap.add_argument("--url", help="benchmark a page that is already running instead of starting one")
    ap.add_argument("--sessions", type=int, nargs="+", default=[1, 5, 20])
    ap.add_argument("--rounds", type=int, default=5, help="questions per session")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results")
    ap.add_argument("--no-encoder-lock", action="store_true",
                    help="experiment: let encodes run concurrently (the lock only times) to see what it costs")
    args = ap.parse_args(argv)

    timer, close = None, None
    if args.url:
        url = args.url
    else:
        print("starting the page (imports, index, model)…", file=sys.stderr)
        url, timer, close = start_app(args.index, exclusive=not args.no_encoder_lock)
    try:
        run_level(url, 1, len(QUESTIONS))  # warm-up: sentence cache, BM25, first requests
        levels = []
        for n in args.sessions:
            if timer:
                timer.reset()
            level = run_level(url, n, args.rounds)
            if timer:
                level["encoder_lock"] = timer.report()
                level["encoder_lock"]["wait_share_of_answer_time"] = round(
                    timer.wait / max(1e-9, level["mean_ms"] / 1000 * level["answers"]), 3)
            levels.append(level)
            lock = level.get("encoder_lock", {})
            print(f"{n:>3} sessions × {args.rounds}: p50 {level['p50_ms']:>7.1f} ms  p95 {level['p95_ms']:>7.1f} ms  "
                  f"max {level['max_ms']:>7.1f} ms  {level['answers_per_s']:>6.2f} answers/s  "
                  f"wrong {len(level['wrong'])}  errors {len(level['errors'])}"
                  + (f"  encoder lock: held {lock['hold_s']:.2f} s, waited {lock['wait_s']:.2f} s "
                     f"(max {lock['max_wait_ms']:.0f} ms)" if lock else ""))
    finally:
        if close:
            close()
    result = {
        "benchmark": "concurrency", "time": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "url": args.url or "in-process", "encoder_lock": "off (experiment)" if args.no_encoder_lock else "on",
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                                    "load_avg": os.getloadavg()},
        "levels": levels,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    tag = "-nolock" if args.no_encoder_lock else ""
    path = args.out / f"concurrency-{datetime.now(timezone.utc):%Y%m%d-%H%M%S}{tag}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")
    bad = sum(len(lv["wrong"]) + len(lv["errors"]) for lv in levels)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
