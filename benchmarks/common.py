"""Shared helpers for the benchmark scripts (not tests): corpus slices, timing, results, plots."""

from __future__ import annotations

import json
import os
import platform
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"
WORK = ROOT / "benchmarks" / "work"
CORPUS_23K = ROOT.parent / "shared" / "corpora" / "ml_abstracts_23k.jsonl"
DEV = ROOT.parent / "shared" / "eval" / "dev.jsonl"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")


def corpus_slice(n: int | None, out: Path, corpus: Path = CORPUS_23K) -> Path:
    """The first ``n`` records of ``corpus`` (all when None) written to ``out``; returns ``out``."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with corpus.open(encoding="utf-8") as src, out.open("w", encoding="utf-8") as dst:
        for i, line in enumerate(src):
            if n is not None and i >= n:
                break
            dst.write(line)
    return out


def count_lines(path: Path) -> int:
    with path.open(encoding="utf-8") as f:
        return sum(1 for line in f if line.strip())


def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def rss_mb(pid: int | None = None) -> float:
    """Current resident set size (MiB) of ``pid`` (default: this process)."""
    pid = pid or os.getpid()
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def percentile(values: list[float], q: float) -> float:
    import numpy as np

    return float(np.percentile(np.asarray(values, dtype=float), q)) if values else float("nan")


def machine() -> dict:
    load = os.getloadavg()
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "platform": platform.platform(),
            "loadavg_at_start": [round(x, 2) for x in load],
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_json(name: str, data: dict) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    return path


def plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as pyplot

    return pyplot
