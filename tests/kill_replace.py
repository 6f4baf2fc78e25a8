"""SIGKILL during ``paper-assistant ingest --replace`` at seeded moments, and what the next run makes of it.

A base index holds ``n`` papers of one ``.jsonl`` file (synthetic abstracts made of the bundled papers'
sentences, so the encoder meets real text), its HNSW files synced every few vectors, so that a kill often
lands while Chroma writes them. The file is then rewritten with its first half, each paper edited (new chunks
to embed and store, old ones to delete, papers to remove): the write pattern of the hostile round's damaged
``header.bin``. For each kill, a copy of the base index is replaced by the real CLI in a subprocess, killed
after a seeded delay, and the CLI is run again; its result must equal a clean, uninterrupted replace: the same
papers with the same hashes, the same chunk ids, the same vectors.

Used by tests/test_rebuild.py (a few kills on 200 papers) and benchmarks/bench_kill_replace.py (many, on
2,000)."""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SMALL_SYNC = {"hnsw": {"space": "cosine", "sync_threshold": 10, "batch_size": 5}}


def synthetic_papers(n: int, seed: int = 0) -> list[dict]:
    """``n`` JSONL records (``id``, ``title``, ``abstract``): each abstract 4–6 sentences of the bundled papers,
    drawn with ``seed``."""
    from vectorstore.chunks import split_sentences
    from vectorstore.papers import load_papers

    sentences = [s for p in load_papers([ROOT / "data" / "icml2026"]) for s in split_sentences(p.text)]
    rng = random.Random(seed)
    return [{"id": f"syn-{i}", "title": f"Synthetic paper {i}",
             "abstract": " ".join(rng.sample(sentences, rng.randint(4, 6)))} for i in range(n)]


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def snapshot(folder: Path) -> dict:
    """What an index holds, to compare two: ``{"papers": {id: hash}, "chunks": [ids], "vectors": matrix in id
    order}``, read in a subprocess (Chroma keeps one view of a folder per process)."""
    code = ("import json, sys, numpy as np; from assistant.settings import Settings; "
            "from assistant.answer import get_index; "
            "s = Settings(index=sys.argv[1]); idx = get_index(s); st = idx.store; "
            "p = st.paper_hashes(); c = st.chunks.get(include=['embeddings']); "
            "order = np.argsort(c['ids']); np.save(sys.argv[2], np.asarray(c['embeddings'], np.float32)[order]); "
            "print(json.dumps({'papers': p, 'chunks': sorted(c['ids'])}))")
    out = folder.parent / f"{folder.name}-vectors.npy"
    proc = subprocess.run([sys.executable, "-c", code, str(folder), str(out)], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    snap = json.loads(proc.stdout.strip().splitlines()[-1])
    snap["vectors"] = np.load(out)
    return snap


def same(a: dict, b: dict) -> bool:
    """Two snapshots hold the same papers (and hashes), chunks and vectors (to float32 rounding)."""
    return (a["papers"] == b["papers"] and a["chunks"] == b["chunks"]
            and a["vectors"].shape == b["vectors"].shape and bool(np.allclose(a["vectors"], b["vectors"], atol=1e-5)))


def cli(*args: str, timeout: float = 900) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "assistant", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=timeout, env=dict(os.environ, PYTHONUNBUFFERED="1"))


@dataclass
class Kill:
    """One kill: its delay (s), whether the index it left opened (``sound``) or was found damaged, and
    whether the next run's result equals the clean one."""

    delay: float
    state: str
    clean: bool
    told: str


def base_index(tmp: Path, n: int, encoder) -> tuple[Path, Path]:
    """``(index folder, its paper file)``: ``n`` synthetic papers ingested with small HNSW syncs, then the file
    rewritten as the replace will read it (its first half, each paper edited)."""
    import vectorstore.store.chunk_store as store_module
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    records = synthetic_papers(n)
    src = write_jsonl(tmp / "papers.jsonl", records)
    saved = store_module.HNSW_CONFIG
    store_module.HNSW_CONFIG = SMALL_SYNC  # kept in the collection's configuration: the CLI runs with it too
    try:
        folder = tmp / "base"
        assert ingest([src], open_index(folder, encoder)).added == n
    finally:
        store_module.HNSW_CONFIG = saved
    from vectorstore.store import release_client

    release_client(folder)
    write_jsonl(src, [dict(r, abstract=r["abstract"] + " We also release an edited version.")
                      for r in records[: n // 2]])
    return folder, src


def run_kills(tmp: Path, base: Path, src: Path, kills: int, seed: int = 0) -> tuple[float, list[Kill]]:
    """``(seconds of an uninterrupted replace, one Kill per seeded moment)``."""
    from vectorstore.integrity import vector_files_problem

    clean_dir = tmp / "clean"
    shutil.copytree(base, clean_dir)
    start = time.perf_counter()
    done = cli("ingest", "--replace", str(src), "--index", str(clean_dir))
    seconds = time.perf_counter() - start
    assert done.returncode == 0, done.stderr[-2000:]
    clean = snapshot(clean_dir)
    rng = random.Random(seed)
    out = []
    for k in range(kills):
        folder = tmp / f"kill-{k}"
        shutil.copytree(base, folder)
        delay = rng.uniform(0.3 * seconds, 0.98 * seconds)
        proc = subprocess.Popen([sys.executable, "-m", "assistant", "ingest", "--replace", str(src), "--index",
                                 str(folder)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
        time.sleep(delay)
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=60)
        state = "damaged" if vector_files_problem(folder, full=True) else "sound"
        again = cli("ingest", "--replace", str(src), "--index", str(folder))
        assert again.returncode == 0, (delay, again.stderr[-2000:])
        if "rebuilt the vector index" in again.stderr:
            state = "damaged"
        out.append(Kill(delay, state, same(snapshot(folder), clean), again.stderr.strip()[-300:]))
        shutil.rmtree(folder, ignore_errors=True)
    return seconds, out
