"""SIGKILL during `ingest --replace` on 2,000 papers at many seeded moments (hostile round #35, high 2).

    .venv/bin/python benchmarks/bench_kill_replace.py [--papers 2000] [--kills 20] [--seed 35]

Each kill: a copy of a 2,000-paper index (its HNSW files synced every few vectors) replaced by its first
1,000 papers, edited, in a real CLI subprocess, killed after a seeded delay; then the CLI is run again. Prints
and writes (benchmarks/results/kill_replace.json) the state each kill left (sound: the next run resumed;
damaged: the next run rebuilt the index from its stored papers) and whether the result equals a clean
replace. Harness: tests/kill_replace.py."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.kill_replace import base_index, run_kills  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--papers", type=int, default=2000)
    ap.add_argument("--kills", type=int, default=20)
    ap.add_argument("--seed", type=int, default=35)
    args = ap.parse_args()
    from assistant.settings import Settings
    from vectorstore.encoding import get_encoder, resolve_backend

    s = Settings()
    encoder = get_encoder(s.embedding.model, s.embedding.batch_size, resolve_backend(s.embedding.model, "auto"))
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        folder, src = base_index(Path(tmp), args.papers, encoder)
        built = time.perf_counter() - start
        seconds, kills = run_kills(Path(tmp), folder, src, args.kills, args.seed)
    for k in kills:
        print(f"kill at {k.delay:5.1f} s: {k.state:8s} next run {'= clean' if k.clean else 'DIFFERS'}")
    result = {"papers": args.papers, "kills": args.kills, "seed": args.seed, "base_ingest_s": round(built, 1),
              "replace_s": round(seconds, 1), "damaged": sum(k.state == "damaged" for k in kills),
              "clean": sum(k.clean for k in kills), "each": [vars(k) for k in kills]}
    print(json.dumps({k: v for k, v in result.items() if k != "each"}))
    out = Path(__file__).resolve().parent / "results" / "kill_replace.json"
    out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
