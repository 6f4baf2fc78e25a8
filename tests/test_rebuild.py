"""Hostile round #35, high 2: a kill -9 during ``ingest --replace`` left HNSW files that disagree with the
database (``header.bin`` counting more vectors than ``data_level0.bin`` and ``length.bin`` hold), and every
command stopped with "delete the index and ingest again" while every text and vector was intact elsewhere.

Now ``ask`` names ``doctor``; ``doctor`` and ``ingest`` rebuild the index from the papers its database stores
(vectors from Chroma's log and the exact-search cache, the rest embedded again), to exactly the index a clean
run makes. Real Chroma, real files, the real CLI in subprocesses where a kill or hnswlib's crash must not end
pytest."""

from __future__ import annotations

import os
import re
import shutil

import pytest

from tests.kill_replace import base_index, cli, run_kills, same, snapshot

Q = "Which paper studies reward models?"


@pytest.fixture(scope="module")
def base(tmp_path_factory, encoder):
    """(index folder of 120 synthetic papers, synced to its HNSW files every few vectors, its paper file)."""
    return base_index(tmp_path_factory.mktemp("rebuild"), 120, encoder)


def _chunk_segment(folder):
    """The HNSW folder of the chunks collection (the one counting the most vectors)."""
    segs = [d for d in (folder / "chroma").iterdir() if d.is_dir() and (d / "header.bin").is_file()]
    return max(segs, key=lambda d: int.from_bytes((d / "header.bin").read_bytes()[20:28], "little"))


def _count_more(seg):
    """The hostile round's state: the header counts more vectors than data_level0.bin and length.bin hold."""
    header = bytearray((seg / "header.bin").read_bytes())
    count = int.from_bytes(header[20:28], "little")
    header[12:20] = max(int.from_bytes(header[12:20], "little"), count + 40).to_bytes(8, "little")
    header[20:28] = (count + 40).to_bytes(8, "little")
    (seg / "header.bin").write_bytes(bytes(header))


def _cut_header(seg):
    with open(seg / "header.bin", "r+b") as fh:
        fh.truncate(50)


def _folder_deleted(seg):
    shutil.rmtree(seg)


def _metadata_garbled(seg):
    """Second hostile round (#35, F5): Chroma's id map overwritten; every command said "delete the index"."""
    path = seg / "index_metadata.pickle"
    assert path.stat().st_size > 100  # the base index is synced: the map is written
    path.write_bytes(bytes(range(256)) * 4)


def _metadata_cut(seg):
    path = seg / "index_metadata.pickle"
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _link_lists_halved(seg):
    """Third hostile round (#35): link_lists.bin cut to half: ask read only the first lists and answered as if
    nothing were wrong (hnswlib read the rest from whatever memory held)."""
    path = seg / "link_lists.bin"
    os.truncate(path, path.stat().st_size // 2)


def _metadata_swapped(seg):
    """Third hostile round (#35): the two segments' id maps swapped, each readable: doctor failed with Chroma's
    "Error finding id" and "delete the index"; ingest said "unchanged"."""
    other = next(d for d in seg.parent.iterdir() if d.is_dir() and d != seg and (d / "index_metadata.pickle").is_file())
    a, b = (seg / "index_metadata.pickle").read_bytes(), (other / "index_metadata.pickle").read_bytes()
    (seg / "index_metadata.pickle").write_bytes(b)
    (other / "index_metadata.pickle").write_bytes(a)


@pytest.mark.parametrize("damage", [_count_more, _cut_header, _folder_deleted, _metadata_garbled, _metadata_cut,
                                    _metadata_swapped, _link_lists_halved],
                         ids=["header counts more vectors", "header cut", "vector folder deleted",
                              "id map overwritten", "id map cut", "id maps swapped", "link lists halved"])
def test_damaged_vector_files_are_rebuilt_by_doctor_to_the_clean_index(base, tmp_path, damage):
    folder, _ = base
    before = snapshot(folder)
    copy = tmp_path / "idx"
    shutil.copytree(folder, copy)
    damage(_chunk_segment(copy))
    asked = cli("ask", Q, "--index", str(copy))
    assert asked.returncode == 2 and asked.stdout == ""
    assert re.search(rf"run `paper-assistant doctor --index {re.escape(str(copy))}` to rebuild it from the papers "
                     r"the index stores", asked.stderr), asked.stderr
    assert "delete " + str(copy) not in asked.stderr
    doctor = cli("doctor", "--index", str(copy))
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert re.search(rf"^ok    rebuilt the vector index at {re.escape(str(copy))} from the 120 papers it stores "
                     r"\(\d+ chunks, \d+ vectors found, \d+ embedded again\) in [\d.]+ s; index at .*: 120 papers",
                     doctor.stdout, re.M), doctor.stdout
    assert same(snapshot(copy), before)
    assert sorted(p.name for p in copy.iterdir() if p.name.startswith(("rebuild", "chroma."))) == []
    asked = cli("ask", Q, "--index", str(copy))
    assert asked.returncode == 0 and "[1]" in asked.stdout


def test_zeroed_vectors_no_file_check_sees_are_rebuilt_by_doctor_not_deleted(base, tmp_path):
    """Fifth hostile round (#35): data_level0.bin overwritten with zeros passed every file check; `ask` still
    answered, but doctor's search failed and said "delete the index and run ingest again" though the database held
    every paper. Now doctor rebuilds it from them."""
    folder, _ = base
    before = snapshot(folder)
    copy = tmp_path / "idx"
    shutil.copytree(folder, copy)
    data = _chunk_segment(copy) / "data_level0.bin"
    data.write_bytes(bytes(data.stat().st_size))
    doctor = cli("doctor", "--index", str(copy))
    assert doctor.returncode == 0 and "delete" not in doctor.stdout, doctor.stdout + doctor.stderr
    assert re.search(r"^ok    rebuilt the vector index at .* from the 120 papers it stores", doctor.stdout, re.M), \
        doctor.stdout
    assert same(snapshot(copy), before)


def test_an_index_emptied_by_remove_is_no_damaged_index(base, tmp_path):
    """Fourth hostile round (#35): after `remove` of every paper, `ask` said the id map "maps ids none of which is
    a record of its collection" (damaged, run doctor): an emptied collection keeps its old map."""
    folder, _ = base
    copy = tmp_path / "idx"
    shutil.copytree(folder, copy)
    removed = cli("remove", "papers.jsonl", "--index", str(copy))
    assert removed.returncode == 0 and "index holds 0 papers" in removed.stdout + removed.stderr, removed.stderr
    asked = cli("ask", Q, "--index", str(copy))
    assert asked.returncode == 2 and "holds no papers" in asked.stderr and "damaged" not in asked.stderr, asked.stderr


def test_ingest_rebuilds_a_damaged_index_then_ingests(base, tmp_path):
    folder, _ = base
    copy = tmp_path / "idx"
    shutil.copytree(folder, copy)
    _count_more(_chunk_segment(copy))
    new = tmp_path / "new.txt"
    new.write_text("ICML 2026\n\nWe propose NewNet, a sparse kernel for tabular data.\n", encoding="utf-8")
    done = cli("ingest", str(new), "--index", str(copy))
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert re.match(rf"the vector index at {re.escape(str(copy))} is damaged: .*/data_level0.bin is cut short "
                    r"\([\d,]+ of the [\d,]+ bytes its \d+ vectors need\): rebuilding it from the papers the index "
                    r"stores…$", lines[0]), lines
    assert re.match(r"rebuilt the vector index at .* from the 120 papers it stores", lines[1]), lines
    assert "1 added" in done.stdout
    snap = snapshot(copy)
    assert len(snap["papers"]) == 121 and "new#1" in snap["papers"]


def test_a_rebuild_killed_between_its_renames_is_completed_by_the_next_open(base, tmp_path, encoder):
    """The swap is two renames; a process killed between them leaves no chroma/ folder: the next open completes
    the swap instead of starting an empty index."""
    from vectorstore.ingest import rebuild_vectors
    from vectorstore.store import TMP

    folder, _ = base
    before = snapshot(folder)
    copy = tmp_path / "idx"
    shutil.copytree(folder, copy)
    _cut_header(_chunk_segment(copy))
    rebuild_vectors(copy, encoder)
    # Re-create the moment between the renames: the rebuilt index back in rebuild.tmp/, chroma/ gone.
    (copy / TMP).mkdir()
    (copy / "chroma").rename(copy / TMP / "chroma")
    (copy / TMP / "complete").write_text("{}")
    assert not (copy / "chroma").exists()
    assert same(snapshot(copy), before)
    assert not (copy / TMP).exists() or not (copy / TMP / "chroma").exists()


def test_kill_during_replace_always_resumes_or_rebuilds_to_the_clean_result(base, tmp_path):
    """Seeded kills during a replace of 120 papers by their first 60, edited (benchmarks/bench_kill_replace.py
    runs many on 2,000 papers: docs/quality.md)."""
    folder, src = base
    seconds, kills = run_kills(tmp_path, folder, src, kills=4, seed=35)
    assert [k for k in kills if not k.clean] == [], (seconds, kills)
