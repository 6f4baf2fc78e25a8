"""Hardening (issue 5): bad input, offline start, bind address and auth, secrets, a bounded chat.

Every bad input gets a one-line error or a defined behaviour, and an index that already holds
papers keeps every one of them (counts and content hashes are compared before and after).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import ROOT, free_port

SYPE = "000_12a0d7b1c5c902c5#15"
OMNIMOE = "000_12a0d7b1c5c902c5#13"
OMNIMOE_Q = "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?"

UNICODE_ABSTRACT = (
    r"We study the operator $\mathcal{L}_\theta = -\nabla\cdot(a(x)\nabla u) + \lambda u$ with \emph{Dirichlet} "
    r"data and prove $\|u\|_{H^1(\Omega)} \le C\,\epsilon^{-1/2}$ for all $\theta\in\Theta$. "
    "我们提出了一种新的图神经网络方法，用于分子性质预测。 "
    "Η μέθοδος βελτιώνει την ακρίβεια κατά 12%. "
    "Math: ∀ε>0 ∃δ: |x−y|<δ ⇒ |f(x)−f(y)|<ε; ∑ᵢ xᵢ² ≤ ∞; 𝐱 ∈ ℝⁿ; café vs cafe\u0301; 🧪; zero\u200bwidth; "
    "Ω ≠ \u2126."
)
TWIN = "We introduce TwinNet, a graph neural network for graph coloring with spectral message passing."


# --- a scratch index holding one bundled paper list ---------------------------------------------
@pytest.fixture(scope="module")
def scratch(tmp_path_factory, encoder):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    root = tmp_path_factory.mktemp("hardening")
    idx = open_index(root / "idx", encoder)
    report = ingest([CORPUS / "004_9268713af81d21d3.txt"], idx)
    assert report.added == 19
    return root, idx


def snapshot(idx):
    """Everything that says which papers the index holds: counts, ids + content hashes, BM25 ids."""
    return idx.store.counts(), sorted(idx.store.paper_hashes().items()), sorted(set(idx.lexical().paper_ids))


def ingest_bad(idx, path: Path):
    """Ingest ``path`` into ``idx``; assert the index lost nothing and return the report."""
    from vectorstore.ingest import ingest

    before = snapshot(idx)
    report = ingest([path], idx)
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    assert snapshot(idx) == before
    return report


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    """Run the `paper-assistant` entry point in-process: (exit code, stdout, stderr)."""
    from assistant import cli

    monkeypatch.setattr(sys, "argv", ["paper-assistant", *args])
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


# --- bad paper files ----------------------------------------------------------------------------
def test_empty_file_is_skipped_with_one_line_reason(scratch):
    root, idx = scratch
    f = root / "empty.txt"
    f.write_text("")
    report = ingest_bad(idx, f)
    assert report.skipped == [f"{f}: file is empty (expected a heading line, then abstracts separated by blank lines)"]


def test_heading_only_file_adds_nothing_and_skips_nothing(scratch):
    root, idx = scratch
    f = root / "heading.txt"
    f.write_text("NeurIPS 2025 accepted papers\n\n\n")
    report = ingest_bad(idx, f)
    assert report.skipped == [] and report.unchanged == 0


def test_first_line_that_is_an_abstract_is_not_taken_for_a_heading(scratch):
    root, idx = scratch
    f = root / "noheading.txt"
    f.write_text("We introduce FooNet, " + "a network that colors graphs quickly and well, " * 6 + "in linear time.\n\n"
                 "We present BarBench, a benchmark.\n")
    report = ingest_bad(idx, f)
    assert report.skipped == [f"{f}: the first line looks like an abstract, not a heading; add a first line naming "
                              "venue and year (e.g. 'ICML 2026')"]


def test_blank_and_whitespace_abstracts_are_skipped_without_using_an_id(scratch):
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "ws.txt"
    f.write_text("ICML 2026\n\n   \n\t\n\nWe introduce GapNet for sparse graphs.\n\n \u3000 \n\n\nWe study WideNet.\n \n")
    before = idx.store.counts()
    report = ingest([f], idx)
    assert (report.added, report.skipped) == (2, [])
    got = idx.store.get_papers(["ws#1", "ws#2", "ws#3"])
    assert sorted(got) == ["ws#1", "ws#2"]
    assert got["ws#1"].text == "We introduce GapNet for sparse graphs." and got["ws#2"].text == "We study WideNet."
    assert idx.store.counts()[0] == before[0] + 2
    # A JSONL record whose abstract is blank: the file is skipped, naming the line.
    j = root / "blank.jsonl"
    j.write_text(json.dumps({"id": "ok", "abstract": "Fine."}) + "\n" + json.dumps({"id": "b", "abstract": " \n\t "}) + "\n")
    assert ingest_bad(idx, j).skipped == [f"{j}:2: record has no 'abstract' text"]


def test_200kb_abstract_is_refused_with_the_limit_and_a_hint(scratch):
    from vectorstore.papers import MAX_ABSTRACT_CHARS, load_paper_list

    root, idx = scratch
    huge = " ".join(f"Sentence {i} reports result {i % 97} on a benchmark." for i in range(5000))[:200_000]
    f = root / "huge.txt"
    f.write_text(f"ICML 2026\n\nA normal abstract first.\n\n{huge}\n")
    report = ingest_bad(idx, f)
    assert report.skipped == [f"{f}: abstract #2 is 200,000 characters long; the limit is 50,000 "
                              "(are the abstracts separated by blank lines?)"]
    j = root / "huge.jsonl"
    j.write_text(json.dumps({"id": "h", "abstract": huge}) + "\n")
    assert ingest_bad(idx, j).skipped == [f"{j}:1: abstract is 200,000 characters long; the limit is 50,000 "
                                          "(is a full text, or several abstracts, in this record's abstract field?)"]
    at_limit = root / "limit.txt"
    at_limit.write_text("ICML 2026\n\n" + huge[:MAX_ABSTRACT_CHARS].strip() + "\n")
    assert len(load_paper_list(at_limit)) == 1


def _peak_bytes(call) -> int:
    """The most bytes Python held at once (tracemalloc) while ``call()`` ran, less what it held before."""
    import tracemalloc

    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        call()
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def test_a_paper_file_over_the_size_limit_is_refused_by_its_size_unread(scratch):
    """Hostile round (#35, F4): a paper list was read whole before any check: a 65 MB list of one long "abstract"
    took 1.3 GB (20 times its size) before the length check refused it. Now its size refuses it, unread: the
    file here is 129 MiB (sparse: it costs no disk), reading it whole would hold 129 MiB."""
    from vectorstore.papers import MAX_FILE_BYTES, CorpusError, read_file

    root, idx = scratch
    big = root / "big_list.txt"
    big.write_text("ICML 2026\n\nWe study BigNet.\n")
    os.truncate(big, MAX_FILE_BYTES + 2**20)

    def refused():
        with pytest.raises(CorpusError) as exc:
            read_file(big)
        refused.line = str(exc.value)

    assert _peak_bytes(refused) < 4 * 2**20
    assert refused.line == (f"{big}: 129.0 MiB, over the 128 MiB a paper file read whole may have (.txt, .jsonl, .bib, "
                            ".csv): skipped unread, its indexed papers are kept; split it into smaller files")
    assert ingest_bad(idx, big).skipped == [refused.line]


def test_an_endless_snapshot_line_is_passed_over_in_pieces_and_the_next_record_read(tmp_path):
    """Hostile round (#35, F4), for arXiv snapshot lines (streamed): a 40 MiB line (line breaks lost) was held whole;
    now it is named as malformed having held at most one line's limit (4 MiB), and the record after it is read."""
    from vectorstore.papers import Tally, iter_arxiv

    def record(n: int) -> bytes:
        return json.dumps({"id": f"2401.0000{n}", "title": f"Paper {n}", "abstract": f"We study StreamNet {n}.",
                           "authors": "A. Author", "categories": "cs.LG", "update_date": "2024-01-02"}).encode()

    snap = tmp_path / "snapshot.json"
    with snap.open("wb") as f:
        f.write(record(1) + b"\n" + b'{"id": "2401.00002", "abstract": "')
        f.seek(40 * 2**20)  # 40 MiB of one line (a sparse hole: NUL bytes)
        f.write(b'"}\n' + record(3) + b"\n")
    tally = Tally()
    papers: list = []
    assert _peak_bytes(lambda: papers.extend(iter_arxiv(snap, tally))) < 12 * 2**20
    assert [p.id for p in papers] == ["arxiv:2401.00001", "arxiv:2401.00003"]
    assert tally.skipped == [f"{snap}:2: a line of over 4 MiB, no record (line breaks lost?)"]


def test_huge_metadata_and_deep_nesting_skip_their_file_naming_the_line(scratch):
    """A 2 MB title or 100,000 authors made answers and MCP replies megabytes long; one deeply nested
    record ended the whole multi-file ingest with "unexpected RecursionError"."""
    root, idx = scratch
    ok = '"id": "m-1", "abstract": "We study MetaNet."'
    cases = {
        "title.jsonl": ('{%s, "title": "%s"}' % (ok, "T" * 2_000_000), "'title' is 2,000,000 characters long; the limit is 1,000"),
        "authors.jsonl": ('{%s, "authors": %s}' % (ok, json.dumps([f"A{i}" for i in range(100_000)])),
                          "'authors' lists 100,000 names; the limit is 1,000"),
        "deep.jsonl": ('{%s, "extra": %s}' % (ok, "[" * 100_000 + "]" * 100_000), "invalid JSON (nested too deeply)"),
    }
    for name, (line, problem) in cases.items():
        f = root / name
        f.write_text('{"id": "m-0", "abstract": "We study FineNet."}\n' + line + "\n")
        assert ingest_bad(idx, f).skipped == [f"{f}:2: {problem}"]


def test_invalid_utf8_is_skipped_naming_byte_and_line(scratch):
    root, idx = scratch
    f = root / "latin1.txt"
    f.write_bytes("ICML 2026\n\nCaf\u00e9 abstract.\n".encode("latin-1"))
    assert ingest_bad(idx, f).skipped == [f"{f}: invalid UTF-8 at byte 14 (line 3); re-save the file as UTF-8"]
    j = root / "bad.jsonl"
    j.write_bytes(b'{"id": "x", "abstract": "ok"}\n{"id": "y", "abstract": "bad \xff byte"}\n')
    assert ingest_bad(idx, j).skipped == [f"{j}: invalid UTF-8 at byte 59 (line 2); re-save the file as UTF-8"]


def test_an_indexed_file_that_goes_bad_keeps_its_papers(scratch):
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "keep.txt"
    f.write_text(f"ICML 2026\n\n{TWIN.replace('TwinNet', 'KeepNet')}\n\nWe study KeepBench.\n")
    assert ingest([f], idx).added == 2
    for bad in (b"", b"ICML 2026\n\nKeepNet \xff\n", b"ICML 2026\n\n" + b"x" * 60_000 + b"\n"):
        f.write_bytes(bad)  # emptied, corrupted, blank lines lost: skipped, and keep#1/#2 stay
        report = ingest_bad(idx, f)
        assert len(report.skipped) == 1 and report.skipped[0].startswith(f"{f}: ")
        assert sorted(idx.store.get_papers(["keep#1", "keep#2"])) == ["keep#1", "keep#2"]


def test_an_indexed_jsonl_emptied_to_nothing_keeps_its_papers_and_says_how_to_remove_them(scratch):
    """A .jsonl cut to 0 bytes, to blank lines or to a BOM, and a .txt left with its heading, used to
    re-ingest as "no papers" and remove every paper of the file with exit 0."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    j = root / "kept.jsonl"
    j.write_text("\n".join(json.dumps({"id": f"kept-{i}", "abstract": f"We study KeptNet variant {i} on graphs."})
                           for i in range(3)) + "\n")
    assert ingest([j], idx).added == 3
    for bad in (b"", b"\n\n  \n", b"\xef\xbb\xbf", b"\xef\xbb\xbf\n"):
        j.write_bytes(bad)
        report = ingest_bad(idx, j)
        assert report.skipped == ["kept.jsonl: no papers in this file, but 3 papers of it are indexed; they were "
                                  "kept (to drop them: paper-assistant remove kept.jsonl)"]
        assert sorted(idx.store.get_papers([f"kept-{i}" for i in range(3)])) == ["kept-0", "kept-1", "kept-2"]
    t = root / "headed.txt"
    t.write_text(f"ICML 2026\n\n{TWIN.replace('TwinNet', 'HeadNet')}\n")
    assert ingest([t], idx).added == 1
    t.write_text("ICML 2026\n\n")
    assert ingest_bad(idx, t).skipped[0].startswith("headed.txt: no papers in this file, but 1 paper of it is indexed")


def test_a_full_disk_during_an_update_keeps_the_old_chunks_and_says_the_disk_is_full(scratch, monkeypatch):
    """The old chunks of an edited paper used to be deleted before its new ones were written: a full
    disk left the paper with no chunk, and the error read "unexpected InternalError: Error in compaction"."""
    import shutil as shutil_mod

    from vectorstore.ingest import ingest
    from vectorstore.store import StoreError

    root, idx = scratch
    f = root / "edited.txt"
    f.write_text(f"ICML 2026\n\n{TWIN.replace('TwinNet', 'FullNet')}\n")
    assert ingest([f], idx).added == 1
    old_chunks = idx.store.chunk_ids_by_paper(["edited#1"])["edited#1"]
    f.write_text("ICML 2026\n\nWe introduce FullNet v2, a graph neural network for graph coloring with attention.\n")

    def full(*args, **kwargs):
        raise RuntimeError("Error in compaction: Failed to apply logs to the metadata segment")

    usage = shutil_mod.disk_usage(root)
    with monkeypatch.context() as m:
        m.setattr(type(idx.store.chunks), "upsert", full)  # every handle: the store re-fetches its collection
        m.setattr("vectorstore.store.client.shutil.disk_usage", lambda _: usage._replace(free=2**20))
        with pytest.raises(StoreError) as err:
            ingest([f], idx)
    assert str(err.value).startswith(f"the disk holding the index ({idx.directory}) is full (1 MB free): free some "
                                     "space and run the command again")
    assert idx.store.chunk_ids_by_paper(["edited#1"])["edited#1"] == old_chunks
    assert "FullNet" in idx.store.get_papers(["edited#1"])["edited#1"].text
    report = ingest([f], idx)  # space again: the update happens, the old chunks go
    assert (report.updated, report.skipped) == (1, [])
    assert idx.store.chunk_ids_by_paper(["edited#1"])["edited#1"].isdisjoint(old_chunks)
    assert "attention" in idx.store.get_papers(["edited#1"])["edited#1"].text


def test_a_writer_killed_before_its_closing_stamp_leaves_no_stale_keyword_index(scratch, monkeypatch):
    """A reader rebuilt the BM25 index mid-ingest, then the writer died after its last commit but before
    it stamped the store: the next ingest found every paper unchanged and kept the stale BM25 index, so
    the edit's new word was never found by keyword."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "stamped.txt"
    f.write_text("ICML 2026\n\nWe introduce QuolNet, a graph network for coloring with alphaterm message passing.\n")
    assert ingest([f], idx).added == 1
    f.write_text("ICML 2026\n\nWe introduce QuolNet, a graph network for coloring with zetaterm message passing.\n")
    store = idx.store
    upsert, bump = store.upsert_chunks, store.bump_generation

    def reader_then_upsert(*args, **kwargs):
        idx.lexical()  # another process answers a question while the batch is being written
        return upsert(*args, **kwargs)

    def killed_at_the_closing_stamp(writing=False):
        if not writing:
            raise KeyboardInterrupt("killed")
        return bump(writing)

    with monkeypatch.context() as m:
        m.setattr(store, "upsert_chunks", reader_then_upsert)
        m.setattr(store, "bump_generation", killed_at_the_closing_stamp)
        with pytest.raises(KeyboardInterrupt):
            ingest([f], idx)
    assert store.write_interrupted()
    report = ingest([f], idx)
    assert (report.unchanged, report.updated) == (1, 0) and not store.write_interrupted()
    bm25 = idx.lexical()
    assert [bm25.paper_ids[i] for i, _ in bm25.search("zetaterm", 3)] == ["stamped#1"]
    assert bm25.search("alphaterm", 3) == []


def test_an_edit_killed_before_its_record_then_reverted_is_redone_and_doctor_names_it(scratch, monkeypatch):
    """Seventh break-it run (#91): an ingest of an edited list killed after the edit's chunks were written but
    before its paper record; another ingest closed the write; the list reverted was "unchanged" (the record's
    hash matched again) while the index kept both versions' chunks (or only the edit's), and doctor said ok."""
    from assistant.faces.doctor import run_doctor
    from assistant.settings import load_settings
    from vectorstore.ingest import ingest

    root, idx = scratch
    store = idx.store
    settings = load_settings(index=idx.directory)
    f = root / "reverted.txt"
    before = "ICML 2026\n\nWe introduce RevNet, a graph network for coloring that passes gammaterm messages.\n"
    f.write_text(before)
    assert ingest([f], idx).added == 1
    original = store.chunk_ids_by_paper(["reverted#1"])["reverted#1"]

    def killed(*args, **kwargs):
        raise KeyboardInterrupt("killed")

    for step in ("delete_chunks", "upsert_papers"):  # old and new chunks left; only the new ones left
        f.write_text(before.replace("gammaterm", "deltaterm"))
        with monkeypatch.context() as m:
            m.setattr(store, step, killed)
            with pytest.raises(KeyboardInterrupt):
                ingest([f], idx)
        other = root / f"closing_{step}.txt"
        other.write_text("ICML 2026\n\nWe introduce CloseNet, a network for docking small molecules.\n")
        assert ingest([other], idx).added == 1 and not store.write_interrupted()  # the write mark is gone
        ok, line = next(run_doctor(settings))
        assert not ok and line.endswith("; 1 paper (reverted#1) has chunks of another version of the text than the "
                                        "paper record (an ingest was interrupted), so questions may find text no "
                                        "longer in the file: run `paper-assistant ingest` on reverted.txt again to "
                                        "repair them"), (step, line)
        f.write_text(before)
        report = ingest([f], idx)
        assert (report.updated, report.unchanged) == (1, 0), step
        assert store.chunk_ids_by_paper(["reverted#1"])["reverted#1"] == original
        assert idx.lexical().search("deltaterm", 3) == [] and next(run_doctor(settings))[0]


def test_doctor_finds_a_paper_without_chunks_and_ingest_restores_it(scratch):
    """Papers whose chunks were lost used to pass `doctor` and be skipped by ingest as unchanged."""
    from assistant.faces.doctor import run_doctor
    from assistant.settings import load_settings
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "restored.txt"
    f.write_text(f"ICML 2026\n\n{TWIN.replace('TwinNet', 'LostNet')}\n")
    assert ingest([f], idx).added == 1
    settings = load_settings(index=idx.directory)
    healthy = next(run_doctor(settings))
    assert healthy[0] and ";" not in healthy[1]
    idx.store.delete_chunks(sorted(idx.store.chunk_ids_by_paper(["restored#1"])["restored#1"]))
    ok, line = next(run_doctor(settings))
    assert not ok and line.endswith("; 1 paper (restored#1) has no chunks, so no question finds it: run "
                                    "`paper-assistant ingest` on restored.txt again to restore them")
    # Left by a killed `ingest --replace`: the remedy repeats --replace (a plain ingest refuses a file that shrank,
    # and doctor named it again and again: a hostile round).
    idx.store.bump_generation(writing="ingest --replace")
    ok, line = next(run_doctor(settings))
    assert not ok and line.endswith("run `paper-assistant ingest --replace` on restored.txt again to restore them; "
                                    "`paper-assistant ingest --replace` was interrupted before it finished: run it "
                                    "again on the same files (it resumes where it stopped)")
    other = root / "other.txt"  # a plain ingest that leaves the paper without chunks keeps the mark
    other.write_text(f"ICML 2026\n\n{TWIN.replace('TwinNet', 'OtherNet')}\n")
    assert ingest([other], idx).added == 1
    ok, after = next(run_doctor(settings))
    assert not ok and after.split(": ", 1)[1].split("; ", 1)[1] == line.split(": ", 1)[1].split("; ", 1)[1], after
    idx.store.delete_papers(["other#1"])
    report = ingest([f], idx)
    assert (report.updated, report.unchanged) == (1, 0) and idx.store.chunk_ids_by_paper(["restored#1"])["restored#1"]
    assert next(run_doctor(settings)) == healthy


def test_a_file_emptied_to_invisible_characters_or_cut_short_keeps_its_papers(scratch):
    """A list left with only a zero-width space under its heading became one invisible paper and lost
    the other 18 (exit 0); a list cut to its first lines, or whose blank lines were lost, lost most of
    its papers with no warning."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "cut.txt"
    abstracts = [f"We study CutNet variant {i} for graph coloring with spectral messages." for i in range(6)]
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts) + "\n")
    assert ingest([f], idx).added == 6
    for bad in ("ICML 2026\n\u200b\n", "ICML 2026\n\u200b\u200b\u200b\n\n", "ICML 2026\n\n\u00a0\n\u200b\n"):
        f.write_text(bad)
        assert ingest_bad(idx, f).skipped[0].startswith("cut.txt: no papers in this file, but 6 papers of it are indexed")
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts[:2]) + "\n")  # cut short
    assert ingest_bad(idx, f).skipped == ["cut.txt: 4 of its 6 indexed papers are no longer in it (cut short, or its "
                                          "blank lines lost?); nothing of it was changed. To take the file as it is "
                                          "now: paper-assistant ingest --replace cut.txt"]
    f.write_text("ICML 2026\n\n" + "\n".join(abstracts) + "\n")  # blank lines lost: one long paper
    assert "5 of its 6 indexed papers are no longer in it" in ingest_bad(idx, f).skipped[0]


def test_a_file_losing_one_paper_or_cut_inside_its_last_abstract_keeps_its_papers_until_replaced(scratch):
    """A list cut short by at most half its papers (or by fewer than three) lost them with exit 0, and a
    copy cut off inside its last abstract stored that abstract's first half in place of the whole."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "shrink.txt"
    abstracts = [f"We study ShrinkNet variant {i} for graph coloring with spectral messages." for i in range(6)]
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts) + "\n")
    assert ingest([f], idx).added == 6
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts[:5]) + "\n")
    assert ingest_bad(idx, f).skipped == ["shrink.txt: 1 of its 6 indexed papers is no longer in it; nothing of it "
                                          "was changed. To take the file as it is now: paper-assistant ingest "
                                          "--replace shrink.txt"]
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts)[:-20])  # cut inside the last abstract
    assert ingest_bad(idx, f).skipped == ["shrink.txt: its last abstract (shrink#6) is now cut off inside its indexed "
                                          "text (file cut short?); nothing of it was changed. To take the file as it "
                                          "is now: paper-assistant ingest --replace shrink.txt"]
    assert idx.store.get_papers(["shrink#6"])["shrink#6"].text == abstracts[5]
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts[:5]) + "\n")  # one paper deleted on purpose
    report = ingest([f], idx, replace=True)
    assert (report.removed, report.skipped, idx.store.get_papers(["shrink#6"])) == (1, [], {})


def test_a_same_named_file_from_another_folder_does_not_replace_the_indexed_ones_papers(scratch):
    """ids are <file stem>#<n>: b/samename.txt silently replaced the papers of the indexed a/samename.txt, and two
    samename.txt in one run collapsed into one (the second one's papers only)."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    a, b, c = root / "fa", root / "fb", root / "fc"
    for d in (a, b, c):
        d.mkdir()
    (a / "samename.txt").write_text("ICML 2026\n\nWe study AlphaDupNet for sparse graph matching with optimal transport.\n")
    (b / "samename.txt").write_text("ICML 2026\n\nWe study BetaDupNet for protein docking with equivariant networks.\n")
    assert ingest([a / "samename.txt"], idx).added == 1
    report = ingest_bad(idx, b / "samename.txt")
    assert report.skipped == [f"{b / 'samename.txt'}: the indexed papers of samename.txt come from another file, "
                              f"{(a / 'samename.txt').resolve()}; ids come from the file name, so this one would replace "
                              f"them; nothing of it was ingested. Rename one of the two, or to put this one in its "
                              f"place: paper-assistant ingest --replace {b / 'samename.txt'}"]
    assert "AlphaDupNet" in idx.store.get_papers(["samename#1"])["samename#1"].text
    report = ingest([a, b], idx)  # both in one run: neither is taken (which one would win hangs on folder order)
    assert report.skipped == [f"{a / 'samename.txt'}: another file named samename.txt ({b / 'samename.txt'}) is read in "
                              "this run; papers are known by their file name, so nothing of this one was ingested: "
                              "rename one of the two",
                              f"{b / 'samename.txt'}: another file named samename.txt ({a / 'samename.txt'}) is read in "
                              "this run; papers are known by their file name, so nothing of this one was ingested: "
                              "rename one of the two"]
    assert ingest([a, b], idx, replace=True).skipped == report.skipped  # --replace on a folder too (break-it 5)
    (b / "copy").mkdir()
    shutil.copy(a / "samename.txt", b / "copy" / "samename.txt")
    assert ingest([b / "copy" / "samename.txt"], idx).unchanged == 1  # a copy (same bytes) is the same list
    (a / "samename.txt").rename(c / "samename.txt")  # the indexed file moved: its new place is taken (and remembered)
    assert ingest([c / "samename.txt"], idx).unchanged == 1
    assert idx.store.source_paths()["samename.txt"] == str((c / "samename.txt").resolve())
    report = ingest([b / "samename.txt"], idx, replace=True)
    assert (report.updated, report.skipped) == (1, [])
    assert "BetaDupNet" in idx.store.get_papers(["samename#1"])["samename#1"].text


def test_a_year_taken_out_of_a_record_is_gone_from_the_index_and_a_re_export_without_years_is_skipped(scratch):
    """Chroma's upsert merges metadata: a JSONL record whose year was removed kept it, and a year filter
    still found the paper. A re-export whose records all lost their year was taken (exit 0), and a year
    filter then missed every paper."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "years.jsonl"
    rec = '{{"id": "yr-{0}", "abstract": "We study YearNet-{0} for tabular forecasting."{1}}}\n'.format
    f.write_text(rec(1, ', "year": 2024') + rec(2, ', "year": 2024'))
    assert ingest([f], idx).added == 2
    assert idx.store.paper_ids_where({"year": 2024}) == {"yr-1", "yr-2"}
    f.write_text(rec(1, "") + rec(2, ""))  # every year gone: skipped
    assert ingest_bad(idx, f).skipped == [
        "years.jsonl: no record in it gives a year any more, while its 2 indexed papers have ('2024'); nothing of "
        "it was changed. To take the file as it is now: paper-assistant ingest --replace years.jsonl"]
    f.write_text(rec(1, "") + rec(2, ', "year": 2024'))  # one year taken out: taken
    assert ingest([f], idx).updated == 1
    assert idx.store.get_papers(["yr-1"])["yr-1"].year is None
    assert idx.store.paper_ids_where({"year": 2024}) == {"yr-2"}
    assert idx.store.chunk_metadata_by_paper(["yr-1"])["yr-1"][0].get("year") is None


def test_a_lone_surrogate_in_metadata_skips_its_file_and_the_others_are_ingested(scratch):
    """A lone surrogate in a JSONL title aborted the whole ingest with a UnicodeEncodeError naming no file."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    bad, good = root / "surrogate.jsonl", root / "fine.jsonl"
    bad.write_text('{"id": "sg-1", "abstract": "We study SurNet.", "title": "bad \\udc80 value"}\n')
    good.write_text('{"id": "fine-1", "abstract": "We study FineNet on graphs."}\n')
    report = ingest([bad, good], idx)
    assert report.added == 1 and report.skipped == [f"{bad}:1: 'title' holds an invalid character (a lone UTF-16 "
                                                    "surrogate such as \\udc80); fix the record"]


def test_cli_ingest_reports_each_bad_file_in_one_line_and_keeps_the_good_one(tmp_path, monkeypatch, capsys):
    (tmp_path / "a_empty.txt").write_text("")
    (tmp_path / "b_bad.txt").write_bytes(b"ICML 2026\n\n\xff\n")
    (tmp_path / "c_good.txt").write_text(f"ICML 2026\n\n{TWIN}\n")
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(tmp_path), "--index", str(tmp_path / "idx"))
    assert code == 1
    assert err.splitlines() == [
        f"skipped: {tmp_path / 'a_empty.txt'}: file is empty (expected a heading line, then abstracts separated by blank lines)",
        f"skipped: {tmp_path / 'b_bad.txt'}: invalid UTF-8 at byte 11 (line 3); re-save the file as UTF-8",
    ]
    assert out.strip() == "1 added, 0 updated, 0 unchanged, 0 removed, 2 skipped; index holds 1 paper in 1 chunk"


def test_a_fifo_or_dangling_link_named_or_inside_a_folder_is_skipped_with_its_reason(tmp_path, monkeypatch, capsys):
    """Hostile round (#35, F8, F12): one FIFO or dangling symbolic link named on the command line aborted the
    whole ingest (nothing of the good files was read, exit 2); a FIFO, socket or dangling link inside an ingested
    folder was passed over without a word. Each is now skipped with its reason, the rest ingested, exit 1."""
    import socket

    from vectorstore.papers import KINDS

    folder = tmp_path / "folder"
    folder.mkdir()
    pipe, dangling, good = tmp_path / "pipe.txt", tmp_path / "dangling.txt", tmp_path / "good.txt"
    os.mkfifo(pipe)
    dangling.symlink_to(tmp_path / "gone.txt")
    good.write_text(f"ICML 2026\n\n{TWIN}\n")
    (folder / "ok.txt").write_text("ICML 2026\n\nWe study FolderNet, a network for folders of papers.\n")
    os.mkfifo(folder / "inner.txt")
    (folder / "lost.jsonl").symlink_to(tmp_path / "nowhere.jsonl")
    sock = socket.socket(socket.AF_UNIX)  # a socket named like a paper file
    sock.bind(str(folder / "s.bib"))
    try:
        code, out, err = run_main(monkeypatch, capsys, "ingest", str(pipe), str(dangling), str(good), str(folder),
                                  "--index", str(tmp_path / "idx"))
    finally:
        sock.close()
    fifo_why = f"not a regular file (a FIFO, socket or device): give a paper file ({KINDS})"
    link_why = "a symbolic link that leads nowhere (dangling, or a loop): point it at a paper file"
    assert code == 1
    assert err.splitlines() == [f"skipped: {pipe}: {fifo_why}", f"skipped: {dangling}: {link_why}",
                                f"skipped: {folder / 'inner.txt'}: {fifo_why}",
                                f"skipped: {folder / 'lost.jsonl'}: {link_why}",
                                f"skipped: {folder / 's.bib'}: {fifo_why}"]
    assert out.strip() == "2 added, 0 updated, 0 unchanged, 0 removed, 5 skipped; index holds 2 papers in 2 chunks"


def test_a_list_whose_heading_was_deleted_is_skipped_and_keeps_its_venue_and_year(tmp_path, monkeypatch, capsys, encoder):
    """Deleting a .txt list's heading line (venue and year) re-ingested its papers without them, exit 0,
    and a venue filter then missed them."""
    from vectorstore.index import open_index

    f = tmp_path / "venue.txt"
    body = "\n\n".join(f"We study HeadNet variant {i} for graph coloring with spectral messages." for i in range(3))
    f.write_text(f"ICML 2026\n\n{body}\n")
    ingest_cli = ("ingest", str(f), "--index", str(tmp_path / "idx"))
    assert run_main(monkeypatch, capsys, *ingest_cli)[0] == 0
    for headless in (f"\n{body}\n", f"\n\n{body}\n", f"\u200b\n\n{body}\n", f" \n\n{body}\n"):
        f.write_text(headless)
        code, out, err = run_main(monkeypatch, capsys, *ingest_cli)
        assert code == 1 and err.splitlines() == [
            "skipped: venue.txt: its heading line no longer gives the venue and year its 3 indexed papers have "
            "('ICML 2026'): deleted?; nothing of it was changed. Put the heading back as its first line (e.g. "
            "'ICML 2026'), or to take the file as it is now: paper-assistant ingest --replace venue.txt"]
        assert out.strip() == "0 added, 0 updated, 0 unchanged, 0 removed, 1 skipped; index holds 3 papers in 3 chunks"
    papers = open_index(tmp_path / "idx", encoder).store.get_papers(["venue#1", "venue#2", "venue#3"])
    assert {(p.venue, p.year) for p in papers.values()} == {("ICML", 2026)} and len(papers) == 3
    f.write_text(f"ICML 2026\n\n{body}\n")  # the heading back: nothing to do
    assert run_main(monkeypatch, capsys, *ingest_cli)[:2] == (
        0, "0 added, 0 updated, 3 unchanged, 0 removed, 0 skipped; index holds 3 papers in 3 chunks\n")
    f.write_text(f"NeurIPS 2025\n\n{body}\n")  # a heading changed on purpose is taken
    assert run_main(monkeypatch, capsys, *ingest_cli)[0] == 0
    papers = open_index(tmp_path / "idx", encoder).store.get_papers(["venue#1"])
    assert (papers["venue#1"].venue, papers["venue#1"].year) == ("NeurIPS", 2025)
    f.write_text(f"\n{body}\n")  # told to take it as it is: venue and year go
    assert run_main(monkeypatch, capsys, *ingest_cli, "--replace")[:2] == (
        0, "0 added, 3 updated, 0 unchanged, 0 removed, 0 skipped; index holds 3 papers in 3 chunks\n")
    papers = open_index(tmp_path / "idx", encoder).store.get_papers(["venue#1"])
    assert (papers["venue#1"].venue, papers["venue#1"].year) == ("", None)


def test_deleted_hnsw_folders_are_found_on_open_and_the_remedy_named(tmp_path, monkeypatch, capsys, encoder):
    """With Chroma's HNSW segment folders deleted (and its log already trimmed, as in any index past a few
    thousand chunks), ingest said "38 unchanged", exited 0, and dense search found 1 chunk of 58."""
    import vectorstore.store.chunk_store as store_module
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    # Vectors leave Chroma's log for the HNSW files every 10 records (the default, 1,000, on a small corpus).
    monkeypatch.setattr(store_module, "HNSW_CONFIG", {"hnsw": {"space": "cosine", "sync_threshold": 10, "batch_size": 5}})
    folder = tmp_path / "idx"
    idx = open_index(folder, encoder)
    assert ingest([CORPUS / "004_9268713af81d21d3.txt"], idx).added == 19
    open_index(folder, encoder)  # sound: opens
    segments = [d for d in (folder / "chroma").iterdir() if d.is_dir()]
    assert segments and all((d / "header.bin").is_file() for d in segments)
    for d in segments:
        shutil.rmtree(d)
    code, out, err = run_main(monkeypatch, capsys, "ask", "Which paper studies video?", "--index", str(folder))
    line = (rf"the vector index at {re.escape(str(folder))} is missing \d+ of its \d+ chunks \(Chroma's HNSW folders "
            rf"under {re.escape(str(folder / 'chroma'))} were deleted or replaced\), so search would miss them: run "
            rf"`paper-assistant doctor --index {re.escape(str(folder))}` to rebuild it from the papers the index stores "
            r"\(`paper-assistant ingest` does it too; the paper files are not read\)")
    assert code == 2 and out == "" and re.fullmatch(rf"error: {line}\n", err), err
    # Hostile round #35 (high 2): ingest rebuilds the index from the papers its database stores, then goes on.
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(CORPUS / "004_9268713af81d21d3.txt"), "--index",
                              str(folder))
    assert code == 0 and "19 unchanged" in out, (out, err)
    assert re.search(r"^rebuilt the vector index at .* from the 19 papers it stores \(\d+ chunks", err, re.M), err
    from assistant.answer import forget_indexes

    forget_indexes()
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 0 and "index at" in out and "19 papers" in out, out


def _remedy(folder: Path) -> str:
    """The remedy every damaged-index line ends with, as a regex."""
    return rf"delete {re.escape(str(folder))} and run `paper-assistant ingest` again \(the paper files are not touched\)"


@pytest.mark.parametrize("damage", ["garbage", "half"])
def test_a_damaged_index_database_stops_every_command_naming_the_file_and_the_remedy(
        damage, tmp_path, monkeypatch, capsys, encoder):
    """chroma.sqlite3 overwritten with random bytes, or cut to half its size: each command printed Chroma's
    "error returned from database: (code: 26) file is not a database" (or "code: 11 … malformed") and no
    remedy. Now ask, ingest, doctor and serve name the file and the remedy, and the file stays as it was."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    folder = tmp_path / "idx"
    assert ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder)).added == 19
    db = folder / "chroma" / "chroma.sqlite3"
    size = db.stat().st_size
    if damage == "garbage":
        db.write_bytes(os.urandom(size))
        why = r"its first bytes are not an SQLite header: overwritten"
    else:
        with open(db, "r+b") as fh:
            fh.truncate(size // 2)
        why = rf"cut short: {size // 2:,} of its {size:,} bytes"
    line = (rf"the index database {re.escape(str(db))} is damaged \({why}\), so the index cannot be read: "
            rf"{_remedy(folder)}")
    kept = db.read_bytes()
    for args in (["ask", OMNIMOE_Q], ["ingest", str(CORPUS / "004_9268713af81d21d3.txt")],
                 ["serve", "--port", str(free_port())]):
        code, out, err = run_main(monkeypatch, capsys, *args, "--index", str(folder))
        assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), (args, err)
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 1 and re.search(rf"^FAIL  index: {line}$", out, re.M), out
    assert db.read_bytes() == kept  # reported, never repaired nor deleted


def test_a_cut_short_hnsw_data_file_is_found_on_open_and_doctor_says_so(tmp_path, monkeypatch, capsys, encoder):
    """data_level0.bin (each vector with its links) cut to half: doctor said ok and search failed ("Error
    finding id") or returned wrong chunks, since hnswlib fills what a short file lacks from memory. A cut
    into the file's preallocated, unused tail harms nothing and must still open."""
    import vectorstore.store.chunk_store as store_module
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    # Vectors leave Chroma's log for the HNSW files every 10 records (the default, 1,000, on a small corpus).
    monkeypatch.setattr(store_module, "HNSW_CONFIG", {"hnsw": {"space": "cosine", "sync_threshold": 10, "batch_size": 5}})
    folder = tmp_path / "idx"
    assert ingest([CORPUS], open_index(folder, encoder)).added == 38
    counts = {}  # segment folder: (vectors its header counts, bytes a vector takes in data_level0.bin)
    for d in (folder / "chroma").iterdir():
        if d.is_dir():
            header = (d / "header.bin").read_bytes()
            counts[d] = int.from_bytes(header[20:28], "little"), int.from_bytes(header[28:36], "little")
    assert sorted(n for n, _ in counts.values()) == [38, 58]  # papers, chunks: all out of the log
    for d, (n, per) in counts.items():  # the unused tail cut off: nothing lost
        assert (d / "data_level0.bin").stat().st_size > n * per
        os.truncate(d / "data_level0.bin", n * per)
    open_index(folder, encoder)
    chunks = next(d for d, (n, _) in counts.items() if n == 58)
    n, per = counts[chunks]
    os.truncate(chunks / "data_level0.bin", n * per // 2)
    data = re.escape(str(chunks / "data_level0.bin"))
    line = (rf"the vector index at {re.escape(str(folder))} is damaged: {data} is cut short \({n * per // 2:,} of the "
            rf"{n * per:,} bytes its 58 vectors need\), so search would fail or return wrong papers: run `paper-assistant "
            rf"doctor --index {re.escape(str(folder))}` to rebuild it from the papers the index stores")
    code, out, err = run_main(monkeypatch, capsys, "ask", OMNIMOE_Q, "--index", str(folder))
    assert (code, out) == (2, "") and re.match(rf"error: {line}", err), err
    os.truncate(chunks / "header.bin", 50)  # break-it: a short header made hnswlib crash (exit 139, no word)
    code, out, err = run_main(monkeypatch, capsys, "ask", OMNIMOE_Q, "--index", str(folder))
    assert code == 2 and f"{chunks / 'header.bin'} is 50 bytes, not 100" in err, err
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))  # hostile round #35: rebuilt
    assert code == 0 and re.search(r"^ok    rebuilt the vector index at .* from the 38 papers it stores", out, re.M), out
    code, out, err = run_main(monkeypatch, capsys, "ask", OMNIMOE_Q, "--index", str(folder))
    assert code == 0 and "OmniMoE" in out, (out, err)


def _writers_stop_and_doctor_fails(monkeypatch, capsys, folder, line: str, *more: list) -> None:
    """ingest, remove (and the commands in ``more``) on ``folder`` (the 19 papers of 004_….txt) stop with
    exit 2 and the one error ``line`` (a regex); doctor fails with the index line ending in it."""
    from tests.conftest import CORPUS

    for args in (["ingest", str(CORPUS / "000_12a0d7b1c5c902c5.txt")], ["remove", "004_9268713af81d21d3.txt"], *more):
        code, out, err = run_main(monkeypatch, capsys, *args, "--index", str(folder))
        assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), (args, err)
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 1 and re.search(rf"^FAIL  index at {re.escape(str(folder))}: 19 papers in 29 chunks .*; {line}$",
                                   out, re.M), out


def test_an_ingest_lock_that_is_a_folder_stops_writers_with_one_line_and_doctor_says_so(
        tmp_path, monkeypatch, capsys, encoder):
    """ingest.lock made a folder: ingest, remove and serve crashed with "unexpected IsADirectoryError" and
    doctor said ok. Writers now stop with exit 2 naming the path and what to do; doctor fails on it."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    folder = tmp_path / "idx"
    assert ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder)).added == 19
    lock = folder / "ingest.lock"
    lock.unlink()
    lock.mkdir()
    line = (rf"the writer's lock {re.escape(str(lock))} is a folder, so no ingest can run: remove or rename it \(it "
            r"holds no index data; the lock file is made anew\), then run the command again")
    _writers_stop_and_doctor_fails(monkeypatch, capsys, folder, line, ["serve", "--port", str(free_port())])
    assert lock.is_dir() and open_index(folder, encoder).store.counts() == (19, 29)  # nothing removed


@pytest.mark.parametrize("target", ["a file", "nothing", "a folder"])
def test_an_ingest_lock_that_is_a_symbolic_link_stops_writers_with_one_line_and_doctor_says_so(
        tmp_path, monkeypatch, capsys, encoder, target):
    """Seventh break-it run (#107): ingest.lock replaced by a symbolic link stopped ingest and remove with
    "unexpected OSError: [Errno 40] Too many levels of symbolic links" and doctor said ok. The link is never
    followed (what it points to is left as it is)."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    folder = tmp_path / "idx"
    assert ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder)).added == 19
    pointed = tmp_path / "elsewhere"
    if target == "a file":
        pointed.write_text("precious\n")
    elif target == "a folder":
        pointed.mkdir()
    lock = folder / "ingest.lock"
    lock.unlink()
    lock.symlink_to(pointed)
    what = "a broken symbolic link" if target == "nothing" else "a symbolic link"
    line = (rf"the writer's lock {re.escape(str(lock))} is {what} to {re.escape(str(pointed))}, so no ingest can run: "
            r"remove or rename it \(it holds no index data; the lock file is made anew\), then run the command again")
    _writers_stop_and_doctor_fails(monkeypatch, capsys, folder, line)
    assert lock.is_symlink() and open_index(folder, encoder).store.counts() == (19, 29)  # nothing removed
    assert target != "a file" or pointed.read_text() == "precious\n"


# --- text that must survive byte for byte -------------------------------------------------------
def test_latex_cjk_greek_and_math_come_back_byte_exact(scratch, encoder):
    from assistant.answer.pipeline import Assistant
    from assistant.settings import load_settings
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "unicode.txt"
    f.write_text(f"ICML 2026\n\n{UNICODE_ABSTRACT}\n\n{TWIN}\n", encoding="utf-8")
    j = root / "unicode.jsonl"
    sep_text = "Line one\u2028line two\u0085and a next-line; tab\there. " + UNICODE_ABSTRACT
    j.write_text(json.dumps({"id": "u-1", "abstract": sep_text}, ensure_ascii=False) + "\n", encoding="utf-8")
    report = ingest([f, j], idx)
    assert (report.added, report.skipped) == (3, [])
    got = idx.store.get_papers(["unicode#1", "u-1"])
    assert got["unicode#1"].text.encode("utf-8") == UNICODE_ABSTRACT.encode("utf-8")
    assert got["u-1"].text.encode("utf-8") == sep_text.encode("utf-8")
    # Chunks are exact slices of the stored abstract.
    chunks = [(pid, doc) for _, pid, doc in idx.store.iter_chunks() if pid in got]
    assert chunks and all(doc in got[pid].text for pid, doc in chunks)
    # And an answer that cites it quotes a sentence at the right offsets.
    a = Assistant(load_settings(index=root / "idx"), idx)
    ans = a.ask("Which paper proves an H^1 bound for the operator L_theta with Dirichlet data?")
    src = next(s for s in ans.sources if s.paper_id in ("unicode#1", "u-1"))
    assert src.abstract == got[src.paper_id].text
    assert src.abstract[src.sentence_start:src.sentence_end] == src.sentence
    assert "\\mathcal{L}_\\theta" in src.sentence


def test_two_identical_abstracts_keep_two_ids_and_both_are_found(scratch):
    from assistant.answer.pipeline import Assistant
    from assistant.settings import load_settings
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "dup.txt"
    f.write_text(f"ICML 2026\n\n{TWIN}\n\nWe study something else entirely: protein folding.\n\n{TWIN}\n")
    before = idx.store.counts()[0]
    report = ingest([f], idx)
    assert report.added == 3
    got = idx.store.get_papers(["dup#1", "dup#3"])
    assert got["dup#1"].text == got["dup#3"].text == TWIN
    assert idx.store.counts()[0] == before + 3
    a = Assistant(load_settings(index=root / "idx"), idx)
    top = [p.id for p in a.retriever.search("TwinNet graph coloring spectral message passing", k=5)]
    assert {"dup#1", "dup#3"} <= set(top[:3])
    ans = a.ask("Which papers introduce TwinNet for graph coloring?")
    assert {"dup#1", "dup#3"} <= {s.paper_id for s in ans.sources}


def test_jsonl_missing_null_nested_and_list_fields(scratch):
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "meta.jsonl"
    rows = [
        {"id": "m-1", "abstract": "We introduce NoTitleNet for tabular data."},  # no title/authors/year/venue/url
        {"id": "m-2", "title": "Null author", "abstract": "We study null authors.", "authors": None, "year": None},
        {"id": "m-3", "title": {"en": "Nested title"}, "abstract": "We study nested metadata.",
         "venue": {"name": "NeurIPS", "track": "main"}, "year": "2025", "url": ["a", "b"],
         "meta": {"scores": [1, {"x": 2}], "tags": {"a": None}}},
        {"id": 4, "title": "List authors", "abstract": "We study list-valued authors.",
         "authors": ["Ada Lovelace", None, {"name": "Alan Turing"}, {"first": "Grace", "last": "Hopper"}, ""]},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    report = ingest([f], idx)
    assert (report.added, report.skipped) == (4, [])
    got = idx.store.get_papers(["m-1", "m-2", "m-3", "4"])
    assert got["m-1"].title == "" and got["m-1"].label == "NoTitleNet" and got["m-1"].authors == []
    assert got["m-2"].authors == [] and got["m-2"].year is None
    assert (got["m-3"].title, got["m-3"].venue, got["m-3"].year, got["m-3"].url) == ("", "NeurIPS", 2025, "")
    assert got["4"].authors == ["Ada Lovelace", "Alan Turing", "Grace Hopper"]
    # Records that cannot be papers: the file is skipped, naming the line; nothing indexed is lost.
    cases = {
        "noabs.jsonl": ([{"id": "x", "abstract": "fine"}, {"id": "y", "title": "no abstract"}], ":2: record has no 'abstract' text"),
        "noid.jsonl": ([{"abstract": "no id"}], ":1: record has no 'id'"),
        "nestedid.jsonl": ([{"id": {"doi": "10.1/x"}, "abstract": "nested id"}], ":1: record 'id' must be a string or a number"),
        "array.jsonl": ([["not", "an", "object"]], ":1: expected a JSON object, got list"),
    }
    for name, (recs, msg) in cases.items():
        bad = root / name
        bad.write_text("\n".join(json.dumps(r) for r in recs) + "\n")
        assert ingest_bad(idx, bad).skipped == [f"{bad}{msg}"]
    broken = root / "broken.jsonl"
    broken.write_text('{"id": "z", "abstract": "cut off\n')
    assert ingest_bad(idx, broken).skipped == [f"{broken}:1: invalid JSON (Unterminated string starting at)"]


# --- bad questions --------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ui(settings, assistant):
    import assistant.page as web

    demo = web.build_app(settings, assistant)
    demo.queue(default_concurrency_limit=20)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    yield demo, f"http://127.0.0.1:{port}/"
    demo.close()


def endpoint(demo, api_name: str):
    return next(f.fn for f in demo.fns.values() if f.api_name == api_name)


def text(message: dict) -> str:
    """A chat message's text, whether its content is a string or Gradio's list of parts."""
    c = message["content"]
    return c if isinstance(c, str) else "".join(p.get("text", "") for p in c if isinstance(p, dict))


def wire(history: list[dict]) -> list[dict]:
    """A chat as the page sends it back (Gradio 6: content as a list of text parts)."""
    return [{"role": m["role"], "content": [{"type": "text", "text": text(m)}]} for m in history]


@pytest.mark.parametrize("question, error", [
    ("", "⚠ the question is empty: type a question about the papers"),
    (" \n\t ", "⚠ the question is empty: type a question about the papers"),
    ("x" * 100_000, "⚠ the question is 100,000 characters long; the limit is 4,000. "
                    "To find papers related to a long text, use related work (the Related work tab, or `paper-assistant related`)"),
])
def test_bad_question_in_the_chat_is_one_line_and_the_session_goes_on(ui, question, error):
    from gradio_client import Client

    demo, url = ui
    client = Client(url, verbose=False)
    box, history, panel = client.predict(question, [], api_name="/chat")
    assert (history[-1]["role"], text(history[-1])) == ("assistant", error)
    assert box == question  # kept, so it can be fixed
    box, history, panel = client.predict("What is SyPE?", history, api_name="/chat")
    assert SYPE in panel and history[-1]["role"] == "assistant" and "[1](#pa-src-" in text(history[-1])


def test_cli_huge_question_is_one_line(index, index_dir, monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "ask", "y" * 100_000, "--index", str(index_dir))
    assert code == 2 and out == ""
    assert err == ("error: the question is 100,000 characters long; the limit is 4,000. "
                   "To find papers related to a long text, use related work (the Related work tab, or `paper-assistant related`)\n")


@pytest.mark.parametrize("question, expected", [
    ("Welche Arbeit macht eine feingranulare Mixture-of-Experts-Schicht elfmal schneller als PEER?", OMNIMOE),
    ("¿Qué es SyPE?", SYPE),
    ("Τι είναι το SyPE;", SYPE),
])
def test_question_in_another_language_is_answered_through_shared_names(assistant, question, expected):
    ans = assistant.ask(question)
    assert ans.sources and ans.sources[0].paper_id == expected


@pytest.mark.parametrize("question", ["哪篇论文研究蛋白质结构预测？", "哪些论文研究大型语言模型的人格？",
                                      "Какие статьи изучают личность больших языковых моделей?"])
def test_question_wholly_in_another_script_abstains_instead_of_citing_at_random(assistant, question):
    # The embedding model reads English: with no shared term, the honest answer is "not found".
    from assistant.relevance.judge import Verdict

    ans = assistant.ask(question)
    assert ans.verdict == Verdict.none and ans.sources == []
    assert ans.answer == "No relevant abstract found in the indexed papers."


@pytest.mark.parametrize("question", ["Comment accélérer le mixture-of-experts ?", "什么是 mixture-of-experts？"])
def test_a_french_or_chinese_question_on_an_indexed_topic_is_told_questions_are_matched_in_english(assistant, question):
    """Hostile round (#35, 12): these said "No relevant abstract found" and nothing else (their terms are in the
    index, so they were not taken for another language). The answer is the same; a note says why."""
    from assistant.question import FOREIGN_NOTE

    ans = assistant.ask(question)
    assert ans.answer == "No relevant abstract found in the indexed papers." and ans.sources == []
    assert ans.note == FOREIGN_NOTE == ("Questions are matched against English abstracts; this one does not read "
                                        "as English.")


@pytest.mark.parametrize("question", ["Quels articles accélèrent le mixture-of-experts ?", "哪些论文加速了专家混合模型？"])
def test_a_list_in_french_or_chinese_is_told_questions_are_matched_in_english(assistant, question):
    """Second hostile round (#35, F10): `list` (and MCP's list_papers) gave its list with no word that the
    question was matched as English; the answer path's note is the list's too, once."""
    from assistant.question import FOREIGN_NOTE
    from assistant.research import list_papers

    result = list_papers(assistant, question)
    assert result.note.endswith(FOREIGN_NOTE) and result.note.count(FOREIGN_NOTE) == 1
    assert FOREIGN_NOTE not in list_papers(assistant, "Which papers speed up mixture-of-experts layers?").note


def test_cjk_question_naming_a_method_finds_it(assistant):
    ans = assistant.ask("什么是SyPE？")
    assert ans.sources and ans.sources[0].paper_id == SYPE


def test_unknown_paper_id_for_related(ui, index, index_dir, monkeypatch, capsys):
    demo, _ = ui
    related = endpoint(demo, "related")
    assert related("", "nope#1") == ("⚠ no indexed paper has id 'nope#1'; an id is a paper list's file stem, "
                                     "'#' and the paper's number (see list or search)")
    assert related("   ", None) == "⚠ the text is empty: paste an abstract or a paragraph"
    assert related("z" * 60_000, None) == ("⚠ the text is 60,000 characters long; the limit is 50,000: "
                                           "paste an abstract or a few paragraphs")
    code, out, err = run_main(monkeypatch, capsys, "related", "--paper", "nope#1", "--index", str(index_dir))
    assert (code, out, err) == (2, "", "error: no indexed paper has id 'nope#1'; an id is a paper list's file stem, "
                                       "'#' and the paper's number (see list or search)\n")
    assert index.store.counts()[0] == 38


# --- chat history stays bounded ------------------------------------------------------------------
def test_fifty_turn_chat_keeps_answering_and_keeps_the_latest_question(ui, dev_questions):
    import assistant.page as web

    demo, url = ui
    chat = endpoint(demo, "chat")
    questions = [q["question"] for q in dev_questions if q.get("gold")][:12] + ["What is SyPE?", OMNIMOE_Q]
    history, turns = [], []
    for turn in range(50):
        q = questions[turn % len(questions)] if turn < 49 else OMNIMOE_Q
        first, *_, (_, history, turns, panel) = chat(q, history, turns)
        users = [m for m in history if m["role"] == "user"]
        assert first[0] == "" and users[-1]["content"] == q  # the box is cleared as the answer starts
        assert history[-1]["role"] == "assistant" and history[-1]["content"].strip()
        assert len(users) == min(turn + 1, web.MAX_DISPLAY_TURNS)
        assert len(turns) <= web.MAX_HISTORY_TURNS
    assert "Earlier turns are not shown" in history[0]["content"]
    assert OMNIMOE in panel and "[1](#pa-src-" in history[-1]["content"]
    # The trimmed chat round-trips through the page's Chatbot component.
    from gradio_client import Client

    _, history2, panel2 = Client(url, verbose=False).predict("What is SyPE?", wire(history), api_name="/chat")
    assert len([m for m in history2 if m["role"] == "user"]) == web.MAX_DISPLAY_TURNS
    assert text(history2[-2]) == "What is SyPE?" and SYPE in panel2
    assert "Earlier turns are not shown" in text(history2[0])


# --- exposure: bind address, auth, secrets, and no outbound connections ------------------------
def test_ui_binds_loopback_by_default_and_refuses_an_exposed_bind_without_auth(monkeypatch, capsys, tmp_path):
    from assistant.settings import load_settings

    monkeypatch.delenv("PAPER_ASSISTANT_UI__HOST", raising=False)
    monkeypatch.delenv("PAPER_ASSISTANT_UI__AUTH", raising=False)
    assert load_settings().ui.host == "127.0.0.1"
    idx = str(tmp_path / "never-created")
    code, out, err = run_main(monkeypatch, capsys, "serve", "--host", "0.0.0.0", "--index", idx)
    assert code == 2 and out == ""
    assert err == ("error: refusing to bind 0.0.0.0 without authentication: pass --auth user:pass "
                   "(or PAPER_ASSISTANT_UI__AUTH)\n")
    monkeypatch.setenv("PAPER_ASSISTANT_UI__HOST", "192.168.1.10")
    code, _, err = run_main(monkeypatch, capsys, "serve", "--index", idx)
    assert code == 2 and err.startswith("error: refusing to bind 192.168.1.10 without authentication")
    code, _, err = run_main(monkeypatch, capsys, "serve", "--auth", "nocolon", "--index", idx)
    assert (code, err) == (2, "error: auth must look like user:password\n")
    assert not Path(idx).exists()  # refused before touching anything


BOOT = r"""
import json, os, socket, sys
_log = open(os.environ["PA_AUDIT_LOG"], "a", buffering=1)
def _hook(event, args):
    if event in ("socket.connect", "socket.bind"):
        addr = args[1]
        addr = [str(a) for a in addr[:2]] if isinstance(addr, tuple) else str(addr)
        _log.write(json.dumps([event, int(args[0].family), addr]) + "\n")
    elif event == "socket.getaddrinfo":
        _log.write(json.dumps([event, 0, [str(args[0]), str(args[1])]]) + "\n")
sys.addaudithook(_hook)
from assistant.cli import main
sys.argv = ["paper-assistant"] + sys.argv[1:]
main()
"""

LOOPBACK = {"127.0.0.1", "::1", "localhost", "None"}


def wait_http(url: str, proc: subprocess.Popen, timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"the app exited with {proc.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise AssertionError(f"{url} not up after {timeout} s")


def fetch(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as exc:
        return f"HTTP {exc.code}"


def test_full_start_and_a_question_stay_on_loopback_and_never_show_the_key(index, index_dir, tmp_path):
    """A real `paper-assistant serve` (fresh process, product defaults: none of the test suite's
    offline variables) records every Python-level socket connect, bind and name lookup from its
    first import on. One question goes through an LLM endpoint on 127.0.0.1 with a fake API key."""
    from gradio_client import Client

    from tests.fake_openai import FakeOpenAI, Reply

    key = "sk-test-" + os.urandom(12).hex()
    idx = tmp_path / "index"
    shutil.copytree(index_dir, idx)
    port = free_port()
    audit, out_log, err_log = tmp_path / "audit.jsonl", tmp_path / "out.log", tmp_path / "err.log"
    env = {k: v for k, v in os.environ.items()
           if k not in ("GRADIO_ANALYTICS_ENABLED", "HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "ANONYMIZED_TELEMETRY",
                        "NO_PROXY", "no_proxy") and not k.startswith("PAPER_ASSISTANT_")}
    with FakeOpenAI(models=["test-model"]) as fake:
        fake.default = Reply(text="SyPE generalizes rotary position embeddings with a symplectic group [1].",
                             chunk_size=6)
        scratch_tmp = tmp_path / "tmp"
        scratch_tmp.mkdir()
        env.update(PA_AUDIT_LOG=str(audit), OPENAI_API_KEY=key, OPENAI_BASE_URL=fake.base_url,
                   OPENAI_MODEL="test-model", TMPDIR=str(scratch_tmp))
        with open(out_log, "w") as out, open(err_log, "w") as err:
            proc = subprocess.Popen([sys.executable, "-c", BOOT, "serve", "--index", str(idx), "--port", str(port)],
                                    cwd=ROOT, env=env, stdout=out, stderr=err, stdin=subprocess.DEVNULL)
        try:
            url = f"http://127.0.0.1:{port}/"
            wait_http(url, proc)
            page = fetch(url) + fetch(url + "config") + fetch(url + "gradio_api/info")
            box, history, panel = Client(url, verbose=False).predict("What is SyPE?", [], api_name="/chat")
            assert [p.name[:23] for p in scratch_tmp.iterdir() if p.name.startswith("paper-assistant")] == [
                "paper-assistant-export-"]
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        assert fake.requests and fake.requests[0].headers["authorization"] == f"Bearer {key}"  # the key was in use
    # SIGTERM ends the server like Ctrl-C: the export folder goes (it survived a SIGTERM before)
    assert [p.name for p in scratch_tmp.iterdir() if p.name.startswith("paper-assistant-export-")] == []
    answer = json.dumps([box, history, panel], ensure_ascii=False)
    assert "symplectic group [" in answer and SYPE in panel
    logs = out_log.read_text() + err_log.read_text()
    assert "Traceback" not in logs, logs[-2000:]
    assert f"Paper Assistant on http://127.0.0.1:{port}" in logs
    for where, text in (("page", page), ("answer", answer), ("logs", logs)):
        assert key not in text and key[8:] not in text, f"the API key appears in the {where}"
    events = [json.loads(line) for line in audit.read_text().splitlines()]
    inet = (2, 10)  # AF_INET, AF_INET6 (AF_UNIX sockets are local by definition)
    connects = [e for e in events if e[0] == "socket.connect" and e[1] in inet]
    lookups = [e for e in events if e[0] == "socket.getaddrinfo"]
    binds = [e for e in events if e[0] == "socket.bind" and e[1] in inet]
    assert connects, "the audit hook saw no connection at all (the LLM call should be one)"
    assert [e for e in connects if e[2][0] not in LOOPBACK] == []
    assert [e for e in lookups if e[2][0] not in LOOPBACK] == []
    assert ["127.0.0.1", str(port)] in [e[2] for e in binds]
    assert [e for e in binds if e[2][0] not in LOOPBACK] == []


def test_an_endpoint_that_echoes_the_key_does_not_put_it_on_the_page(settings, index):
    """Proxies and some servers repeat the key they were sent in their error messages."""
    from pydantic import SecretStr

    import assistant.page as web
    from assistant.answer.pipeline import Assistant
    from assistant.faces.render import answer_text

    from tests.fake_openai import FakeOpenAI, Reply

    key = "sk-test-" + os.urandom(12).hex()
    with FakeOpenAI(models=["test-model"]) as fake:
        fake.script(Reply(status=403, error_message=f"Key {key} may not use this model."),
                    Reply(status=400, error_message=f"Bad request from {key}"))
        from urllib.parse import urlsplit, urlunsplit

        parts = urlsplit(fake.base_url)  # the fake's loopback URL, with a password put in it
        base = urlunsplit(parts._replace(netloc=f"user:hunter22@{parts.netloc}"))
        assert urlsplit(base).hostname == "127.0.0.1" and urlsplit(base).password == "hunter22"
        cfg = settings.model_copy(update={"llm": settings.llm.model_copy(
            update={"base_url": base, "model": "test-model", "api_key": SecretStr(key), "max_retries": 0})})
        a = Assistant(cfg, index)
        for _ in range(2):
            ans = a.ask("What is SyPE?")
            shown = web.answer_markdown(ans) + web.sources_html(ans) + ans.model_dump_json() + answer_text(ans)
            assert "***" in ans.note and ans.sources[0].paper_id == SYPE  # said what failed, fell back
            assert key not in shown and key[8:] not in shown and "hunter22" not in shown


def test_a_deleted_heading_is_seen_when_the_first_abstract_starts_with_a_title_line(scratch):
    """With the heading gone, a first abstract opening with a short title line made that title the
    "heading": the papers were re-ingested with the title as their venue and no year, exit 0."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "titled.txt"
    body = ("TitleNet: Coloring Graphs Fast\nWe study TitleNet for graph coloring with spectral messages.\n\n"
            "We study TitleNet-2 for edge coloring with message passing.")
    f.write_text(f"ICML 2026\n\n{body}\n")
    assert ingest([f], idx).added == 2
    f.write_text(f"{body}\n")
    assert ingest_bad(idx, f).skipped == [
        "titled.txt: its heading line no longer gives the venue and year its 2 indexed papers have ('ICML 2026'): "
        "deleted?; nothing of it was changed. Put the heading back as its first line (e.g. 'ICML 2026'), or to take "
        "the file as it is now: paper-assistant ingest --replace titled.txt"]
    assert {(p.venue, p.year) for p in idx.store.get_papers(["titled#1", "titled#2"]).values()} == {("ICML", 2026)}


def test_a_file_skipped_to_keep_its_papers_keeps_its_ids_from_another_file_read_with_it(scratch):
    """Break-it: a.jsonl emptied (or cut at a line break) and b.jsonl reusing its ids, ingested together:
    "they were kept", then b's papers overwrote a's (exit 1, or exit 0 for the cut)."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    a, b = root / "own_a.jsonl", root / "own_b.jsonl"
    rec = '{{"id": "own-{0}", "abstract": "{1} paper number {0} studies {2}."}}\n'.format
    a.write_text("".join(rec(i, "Alpha", "sparse graph matching") for i in range(1, 7)))
    assert ingest([a], idx).added == 6
    before = {pid: p.text for pid, p in idx.store.get_papers([f"own-{i}" for i in range(1, 7)]).items()}
    a.write_text("")
    b.write_text("".join(rec(i, "Beta", "protein docking") for i in range(1, 7)))
    report = ingest([a, b], idx)
    assert report.skipped[1] == ("own_b.jsonl: paper id 'own-1' belongs to own_a.jsonl, which was skipped (its papers "
                                 "are kept); ids must be unique across files, so nothing of own_b.jsonl was ingested")
    a.write_text("".join(rec(i, "Alpha", "sparse graph matching") for i in range(1, 5)))  # cut at a line break
    b.write_text("".join(rec(i, "Beta", "protein docking") for i in range(5, 7)))
    report = ingest([a, b], idx)
    assert (report.added, report.updated, report.removed) == (0, 0, 0) and len(report.skipped) == 2
    assert "paper id 'own-5' belongs to own_a.jsonl, under another text (another paper)" in report.skipped[0]
    assert {pid: p.text for pid, p in idx.store.get_papers(list(before)).items()} == before
    b.write_text("".join(rec(i, "Alpha", "sparse graph matching") for i in range(5, 7)))  # a real move: taken
    report = ingest([a, b], idx)
    assert (report.skipped, report.updated) == ([], 2)
    assert idx.store.get_papers(["own-6"])["own-6"].source == "own_b.jsonl"


def test_heading_loss_is_seen_in_any_case_of_extension_and_when_the_title_line_holds_a_year(scratch):
    """Break-it: a .TXT list (the loader takes any case) whose heading was deleted was taken, and so was a
    .txt whose first title ("ImageNet 2012 Revisited") parsed as a venue and a year."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    body = ("{0} 2012 Revisited: Dropout Again\nWe study {0}Net for image classification with dropout.\n\n"
            "We study {0}Net-2 for detection with dropout.")
    for name, word in (("upper.TXT", "Upper"), ("yeartitle.txt", "ImageNet")):
        f = root / name
        f.write_text(f"NeurIPS 2016\n\n{body.format(word)}\n")
        assert ingest([f], idx).added == 2
        f.write_text(f"{body.format(word)}\n")
        assert ingest_bad(idx, f).skipped[0].startswith(f"{name}: its heading line no longer gives the venue and year")


def test_crlf_converted_twice_is_one_line_break(tmp_path):
    """Break-it: with "\\r\\r\\n" line ends each title line became a paper of its own (20 papers → 40)."""
    from vectorstore.papers import load_paper_list

    f = tmp_path / "twice.txt"
    f.write_bytes(b"ICML 2026\r\r\n\r\r\nTitle One\r\r\nWe study one.\r\r\n\r\r\nTitle Two\r\r\nWe study two.\r\r\n")
    assert [p.text for p in load_paper_list(f)] == ["Title One\nWe study one.", "Title Two\nWe study two."]


def test_a_moved_file_whose_papers_are_all_other_papers_is_another_file(scratch):
    """Break-it: once an indexed file's recorded path was gone, any file of the same name replaced all its
    papers (exit 0)."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    (root / "gone").mkdir()
    (root / "here").mkdir()
    old, new = root / "gone" / "wander.txt", root / "here" / "wander.txt"
    old.write_text("ICML 2026\n\nWe study WanderNet for route planning with graphs.\n")
    assert ingest([old], idx).added == 1
    old.unlink()
    new.write_text("ICML 2026\n\nWe study StayNet for crystal structure prediction.\n")
    assert "none of this file's first papers is one of its" in ingest_bad(idx, new).skipped[0]


def test_doctor_names_an_interrupted_remove_not_an_ingest(scratch, monkeypatch):
    """Break-it: after a `remove` killed midway, doctor said "an ingest was interrupted… run it again",
    and an ingest of that file brings back the papers the remove had taken out. Then (a third hostile
    round), with papers whose chunks the remove had deleted, it named both remedies in one line."""
    from assistant.faces.doctor import run_doctor
    from assistant.settings import load_settings

    _, idx = scratch
    settings = load_settings(index=idx.directory)
    healthy = next(run_doctor(settings))
    idx.store.bump_generation(writing="remove drafts.jsonl")  # what a killed remove leaves behind
    ok, line = next(run_doctor(settings))
    assert not ok and line.endswith("; `paper-assistant remove drafts.jsonl` was interrupted before it finished: "
                                    "run it again to finish removing those papers")
    chunked = idx.store.chunk_paper_hashes()
    first = sorted(chunked)[0]  # the remove had deleted this paper's chunks, not yet its record
    monkeypatch.setattr(type(idx.store), "chunk_paper_hashes", lambda self: {k: v for k, v in chunked.items() if k != first})
    ok, line = next(run_doctor(settings))
    assert not ok and line.endswith("; `paper-assistant remove drafts.jsonl` was interrupted before it finished: "
                                    "run it again to finish removing those papers")
    assert "restore" not in line and "have no chunks" not in line and "has no chunks" not in line
    monkeypatch.undo()
    idx.store.bump_generation()
    assert next(run_doctor(settings)) == healthy


def test_doctor_finds_a_database_from_another_index(tmp_path, encoder):
    """Break-it: chroma.sqlite3 copied in from another index: doctor said ok, and the index's own 38 papers
    were gone from every answer."""
    from assistant.faces.doctor import run_doctor
    from assistant.settings import load_settings
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    ingest([CORPUS], open_index(tmp_path / "mine", encoder))
    other = tmp_path / "other.txt"
    other.write_text("ICML 2026\n\nWe study SwapNet for protein docking.\n")
    ingest([other], open_index(tmp_path / "theirs", encoder))
    shutil.copytree(tmp_path / "mine", tmp_path / "swapped")
    shutil.copy(tmp_path / "theirs" / "chroma" / "chroma.sqlite3", tmp_path / "swapped" / "chroma" / "chroma.sqlite3")
    assert next(run_doctor(load_settings(index=tmp_path / "mine")))[0]
    ok, line = next(run_doctor(load_settings(index=tmp_path / "swapped")))
    assert not ok and "2 vector folders in" in line and "belong to no collection of its database: if " in line \
        and "if papers are missing, chroma.sqlite3 came from another index: delete " in line


def test_a_re_export_without_years_is_skipped_when_only_later_papers_had_one(scratch):
    """Fourth break-it run: the year check sampled the first 8 ids; a file whose first 8 (sorted) had no
    year took a re-export without any year (exit 0) and its other papers lost theirs."""
    from vectorstore.ingest import ingest

    root, idx = scratch
    f = root / "late_years.jsonl"
    rec = '{{"id": "{0}", "abstract": "We study LateNet-{0} for tabular forecasting."{1}}}\n'.format
    f.write_text("".join(rec(f"a{i:02d}", "") for i in range(9)) + rec("z99", ', "year": 2021'))
    assert ingest([f], idx).added == 10
    f.write_text("".join(rec(f"a{i:02d}", "") for i in range(9)) + rec("z99", ""))
    assert ingest_bad(idx, f).skipped[0].startswith("late_years.jsonl: no record in it gives a year any more")


def test_a_zero_width_space_in_a_heading_keeps_its_venue(tmp_path):
    """Fourth break-it run: "Neur\\u200bIPS 2016" made the venue "IPS", and a venue filter missed the papers."""
    from vectorstore.papers import load_paper_list

    f = tmp_path / "zw.txt"
    f.write_text("Neur\u200bIPS 2016\n\nWe study ZeroNet.\n")
    assert {(p.venue, p.year) for p in load_paper_list(f)} == {("NeurIPS", 2016)}


def test_remove_given_a_path_does_not_remove_a_same_named_file_from_another_folder(scratch):
    """Fourth break-it run: `remove sub/t1.txt` removed the papers ingested from t1.txt in another folder,
    which still exists."""
    from vectorstore.ingest import ingest, remove_sources
    from vectorstore.papers import CorpusError

    root, idx = scratch
    (root / "rm_a").mkdir()
    (root / "rm_b").mkdir()
    kept = root / "rm_a" / "rmlist.txt"
    kept.write_text("ICML 2026\n\nWe study KeepNet for graph coloring.\n")
    (root / "rm_b" / "rmlist.txt").write_text("ICML 2026\n\nWe study OtherNet for docking.\n")
    assert ingest([kept], idx).added == 1
    with pytest.raises(CorpusError, match=r"the indexed papers of rmlist.txt come from another file, .*rm_a/rmlist.txt; "
                                          r"nothing was removed"):
        remove_sources([str(root / "rm_b" / "rmlist.txt")], idx)
    assert idx.store.get_papers(["rmlist#1"])
    assert remove_sources(["rmlist.txt"], idx) == {"rmlist.txt": 1}



def test_remove_with_an_extension_matches_that_file_only_and_an_overlong_name_is_one_line(tmp_path, monkeypatch,
                                                                                          capsys, encoder):
    """Seventh break-it run: `remove notes.txt` removed the papers of notes.txt.jsonl (its stem), and a
    5,000-character name stopped with "unexpected OSError: File name too long" (#74, #73)."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest, remove_sources
    from vectorstore.papers import CorpusError

    f = tmp_path / "notes.txt.jsonl"
    f.write_text('{"id": "n1", "abstract": "We study NoteNet for graph coloring."}\n')
    idx = open_index(tmp_path / "idx", encoder)
    assert ingest([f], idx).added == 1
    with pytest.raises(CorpusError, match=r"^no indexed papers come from notes.txt; indexed files: notes.txt.jsonl$"):
        remove_sources(["notes.txt"], idx)
    assert idx.store.counts() == (1, 1)
    long_name = "x" * 5000 + ".txt"
    code, out, err = run_main(monkeypatch, capsys, "remove", long_name, "--index", str(tmp_path / "idx"))
    assert (code, out) == (2, "") and err == (f"error: no indexed papers come from {'x' * 79}… (5,004 characters); "
                                              "indexed files: notes.txt.jsonl\n"), err
    assert open_index(tmp_path / "idx", encoder).store.counts() == (1, 1)
    assert remove_sources(["notes.txt.jsonl"], idx) == {"notes.txt.jsonl": 1} and idx.store.counts() == (0, 0)


def test_invisible_marks_in_a_heading_nan_fields_and_remove_run_beside_a_same_named_file(scratch, tmp_path,
                                                                                         monkeypatch):
    """Fifth break-it run: a soft hyphen or a left-to-right mark in "NeurIPS" cut the venue to "IPS"; NaN
    in a JSONL title or authors was stored as "nan"; `remove t1.txt` run in a folder holding another
    t1.txt removed the indexed one's papers."""
    from vectorstore.ingest import ingest, remove_sources
    from vectorstore.papers import CorpusError, load_jsonl, parse_heading

    for mark in ("\u00ad", "\u200e", "\u200f", "\u2066"):
        assert parse_heading(f"Neur{mark}IPS 2016") == ("NeurIPS", 2016)
    f = tmp_path / "nan.jsonl"
    f.write_text('{"id": "n1", "abstract": "We study NaNNet.", "title": NaN, "authors": [NaN, "A. B."], '
                 '"venue": NaN}\n')
    (paper,) = load_jsonl(f)
    assert (paper.title, paper.authors, paper.venue) == ("", ["A. B."], "")
    root, idx = scratch
    (root / "cwd_a").mkdir()
    (root / "cwd_b").mkdir()
    (root / "cwd_a" / "beside.txt").write_text("ICML 2026\n\nWe study BesideNet for graph coloring.\n")
    (root / "cwd_b" / "beside.txt").write_text("ICML 2026\n\nWe study OtherNet for docking.\n")
    assert ingest([root / "cwd_a" / "beside.txt"], idx).added == 1
    monkeypatch.chdir(root / "cwd_b")
    for name in ("beside.txt", "./beside.txt"):
        with pytest.raises(CorpusError, match="nothing was removed"):
            remove_sources([name], idx)
    assert idx.store.get_papers(["beside#1"])


def test_an_unreadable_index_folder_is_one_line_with_its_remedy(tmp_path, monkeypatch, capsys, encoder):
    """Hostile round (#35, low 8): an index whose chroma/ folder this user may not read gave "unexpected
    PermissionError" and no remedy. Root reads any folder, so the refusal is made where the folder is read."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    folder = tmp_path / "idx"
    assert ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder)).added == 19
    real_stat = Path.stat

    def refusing_stat(self, *args, **kwargs):
        if (folder / "chroma") in (self, *self.parents) and self != folder / "chroma":
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(Path, "stat", refusing_stat)
    from assistant.answer import forget_indexes

    forget_indexes()
    code, out, err = run_main(monkeypatch, capsys, "ask", OMNIMOE_Q, "--index", str(folder))
    assert (code, out) == (2, "") and err == (
        f"error: the index at {folder} cannot be read or written by this user ({folder / 'chroma'}/chroma.sqlite3: "
        f"permission denied): give this user read and write access to it (e.g. `chmod -R u+rwX {folder}`), or choose "
        "another --index (nothing was changed)\n")


def test_a_keyword_cache_that_cannot_be_written_is_named_not_promised_a_rebuild(tmp_path, monkeypatch, capsys, caplog,
                                                                               encoder):
    """Hostile round (#35, low 8): an unreadable BM25 cache folder printed "rebuilt" on every question while
    nothing could be written, and doctor promised a rebuild that could not happen."""
    import logging
    import tempfile

    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    from tests.conftest import CORPUS

    folder = tmp_path / "idx"
    assert ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder)).added == 19
    cache = folder / "bm25-abstracts"
    (cache / "ids.json").write_text("not json")  # damaged, and (below) not writable
    real_temp = tempfile.NamedTemporaryFile

    def refusing_temp(*args, dir=None, **kwargs):
        if dir is not None and Path(dir) == cache:
            raise PermissionError(13, "Permission denied", str(dir))
        return real_temp(*args, dir=dir, **kwargs)

    def refusing_save(self, target):
        raise PermissionError(13, "Permission denied", str(target))

    import vectorstore.store.lexical as lexical

    monkeypatch.setattr(tempfile, "NamedTemporaryFile", refusing_temp)
    monkeypatch.setattr(lexical.LexicalIndex, "save", refusing_save)
    from assistant.answer import forget_indexes

    forget_indexes()
    with caplog.at_level(logging.WARNING, logger="vectorstore.index"):
        code, out, err = run_main(monkeypatch, capsys, "ask", OMNIMOE_Q, "--index", str(folder))
    assert code == 0
    said = [r.getMessage() for r in caplog.records if r.name == "vectorstore.index"]
    assert said == [f"the keyword index cache {cache} cannot be written (permission denied): rebuilt it in memory "
                    f"for this process, as every process will until it can be (e.g. `chmod -R u+rwX {folder}`)"]
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 1 and (f"the keyword index cache {cache} cannot be written by this user (permission denied): every "
                          "new process rebuilds it in memory first; give this user write access (e.g. "
                          f"`chmod -R u+rwX {folder}`)") in out, out
    assert "the next question" not in out
