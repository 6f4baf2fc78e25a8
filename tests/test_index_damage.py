"""Sixth break-it run: index files damaged in ways that kept their sizes. Real Chroma, real files."""

from __future__ import annotations

import os
import re
import shutil
import sys

import pytest

from tests.conftest import CORPUS

Q = "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?"
LIST = CORPUS / "004_9268713af81d21d3.txt"


def run_main(monkeypatch, capsys, *args) -> tuple[int, str, str]:
    from assistant import cli

    monkeypatch.setattr(sys, "argv", ["paper-assistant", *args])
    code = 0
    try:
        cli.main()
    except SystemExit as exc:
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def remedy(folder) -> str:
    """The remedy of a damaged database, as a regex: nothing to rebuild from."""
    return rf"delete {re.escape(str(folder))} and run `paper-assistant ingest` again \(the paper files are not touched\)"


def repair_remedy(folder) -> str:
    """The remedy of damaged vector files beside a sound database, as a regex (hostile round #35, high 2)."""
    return (rf"run `paper-assistant doctor --index {re.escape(str(folder))}` to rebuild it from the papers the index "
            r"stores \(`paper-assistant ingest` does it too; the paper files are not read\)")


REBUILT = r"rebuilt the vector index at .* from the \d+ papers it stores \(\d+ chunks, \d+ vectors found, \d+ embedded again\)"


@pytest.fixture
def synced(tmp_path, monkeypatch, encoder):
    """An index of the bundled corpus whose vectors all left Chroma's log for the HNSW files."""
    import vectorstore.store.chunk_store as store_module
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    monkeypatch.setattr(store_module, "HNSW_CONFIG", {"hnsw": {"space": "cosine", "sync_threshold": 10, "batch_size": 5}})
    folder = tmp_path / "idx"
    assert ingest([CORPUS], open_index(folder, encoder)).added == 38
    segments = {int.from_bytes((d / "header.bin").read_bytes()[20:28], "little"): d
                for d in (folder / "chroma").iterdir() if d.is_dir()}
    assert sorted(segments) == [38, 58]
    return folder, segments[58]


@pytest.mark.parametrize("name", ["chroma.sqlite3-journal", "chroma.sqlite3-wal", "written.json"])
def test_a_fifo_beside_the_database_is_named_with_its_remedy_not_waited_on(tmp_path, encoder, name):
    """An eleventh hostile round: a FIFO as SQLite's journal (or the index's written.json) made every command, doctor
    too, wait forever: SQLite opened it, or it was read. It holds nothing of the index: removing it is the remedy."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest
    from vectorstore.store import StoreError

    folder = tmp_path / "idx"
    ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder))
    path = folder / "chroma" / name
    if path.exists():
        path.unlink()
    os.mkfifo(path)
    with pytest.raises(StoreError) as err:
        open_index(folder, encoder)
    assert str(err.value) == (f"{path} is no plain file (a FIFO, socket or device), where the index keeps a plain file: "
                              "remove it (it holds nothing of the index) and run the command again")
    path.unlink()
    assert open_index(folder, encoder).store.counts()[0] > 0


def _header_gone(segment):
    (segment / "header.bin").unlink()


def _pickle_loop(segment):
    (segment / "index_metadata.pickle").unlink(missing_ok=True)
    (segment / "index_metadata.pickle").symlink_to("index_metadata.pickle")


def _links_a_fifo(segment):  # a tenth hostile round: every command waited in open() forever
    (segment / "link_lists.bin").unlink()
    os.mkfifo(segment / "link_lists.bin")


@pytest.mark.parametrize("damage, why", [(_header_gone, "header.bin is missing"),
                                         (_pickle_loop, "index_metadata.pickle is a symbolic link that leads nowhere "
                                                        "(a loop, or a missing target)"),
                                         (_links_a_fifo, "link_lists.bin is no plain file (a FIFO, socket or device)")],
                         ids=["header gone", "loop", "fifo"])
def test_a_lost_or_looped_hnsw_file_is_rebuilt_not_a_reason_to_delete_the_index(synced, monkeypatch, capsys, damage,
                                                                                 why):
    """An eleventh hostile round: with a segment's header.bin deleted every command said "delete the index folder and
    run ingest again", its 2,000 papers intact; a looped index_metadata.pickle was "unexpected OSError"."""
    folder, chunks = synced
    damage(chunks)
    code, out, err = run_main(monkeypatch, capsys, "ask", Q, "--index", str(folder))
    line = (rf"the vector index at {re.escape(str(folder))} is damaged: {re.escape(str(chunks / why.split()[0]))}"
            rf"{re.escape(why[len(why.split()[0]):])}, so search would fail or return wrong papers: {repair_remedy(folder)}")
    assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), err
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 38 papers", out, re.M), out


@pytest.mark.parametrize("name", ["data_level0.bin", "link_lists.bin"])
def test_random_bytes_over_an_hnsw_file_stop_questions_and_doctor_rebuilds(synced, name, monkeypatch, capsys, tmp_path):
    """Random bytes written over data_level0.bin (same size): ingest died in hnswlib with a segfault (exit
    139, no word) and related failed with Chroma's "Error finding id"; over link_lists.bin nothing noticed.
    Now a question names the damage and doctor, which rebuilds the index from the papers it stores."""
    folder, chunks = synced
    path = chunks / name
    path.write_bytes(os.urandom(path.stat().st_size))
    new = tmp_path / "new.txt"
    new.write_text("ICML 2026\n\nWe propose NewNet, a sparse kernel for tabular data.\n")
    line = (rf"the vector index at {re.escape(str(folder))} is damaged: {re.escape(str(path))} holds [a-z ]+ no HNSW "
            rf"index has \(overwritten\?\), so search would fail or return wrong papers: {repair_remedy(folder)}")
    code, out, err = run_main(monkeypatch, capsys, "ask", Q, "--index", str(folder))
    assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), err
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 38 papers", out, re.M), out
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(new), "--index", str(folder))
    assert code == 0 and "1 added" in out, (out, err)


def test_doctor_reads_every_hnsw_link_list_where_opening_reads_a_sample(synced, monkeypatch, capsys):
    """Opening reads every record of data_level0.bin but only the first link lists (and the entry point's);
    doctor reads them all, from the files, before Chroma loads them."""
    import numpy as np

    import vectorstore.integrity.vectors as integrity

    folder, chunks = synced
    monkeypatch.setattr(integrity, "SAMPLE", 2)  # opening looks at the first two link lists (and the entry point's)
    header = (chunks / "header.bin").read_bytes()
    entry = int.from_bytes(header[56:60], "little")
    words = np.fromfile(chunks / "link_lists.bin", dtype="<u4")
    at, victim = 0, None
    for k in range(58):
        if words[at] and k >= 2 and k != entry:
            victim = at + 1  # the link count of its first upper layer
            break
        at += 1 + words[at] // 4
    assert victim is not None
    words[victim] = 0x7FFF  # a link count past the layer's maximum
    words.tofile(chunks / "link_lists.bin")
    assert integrity.vector_files_problem(folder) is None  # not in the sample
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))  # found, and rebuilt
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 38 papers", out, re.M), out
    assert integrity.vector_files_problem(folder, full=True) is None


CHROMA_GUARD = """
import sys
import chromadb
import vectorstore.integrity.vectors as integrity

integrity.SAMPLE = int(sys.argv.pop(1))
opened = chromadb.PersistentClient
def guard(*args, **kwargs):
    print("chroma opened", file=sys.stderr, flush=True)
    return opened(*args, **kwargs)
chromadb.PersistentClient = guard
from assistant import cli
sys.argv[0] = "paper-assistant"
cli.main()
"""


def run_cli(*args, sample: int = 256) -> tuple[int, str, str]:
    """The CLI in a process of its own (hnswlib's segfault on damaged files ends that process, not pytest's),
    saying "chroma opened" on stderr if it gets as far as opening Chroma."""
    import subprocess
    from pathlib import Path

    proc = subprocess.run([sys.executable, "-c", CHROMA_GUARD, str(sample), *args], capture_output=True, text=True,
                          timeout=300, cwd=Path(__file__).resolve().parent.parent)
    return proc.returncode, proc.stdout, proc.stderr


def damage_stops_questions_and_is_rebuilt(folder, path, why: str, tmp_path, sample: int = 256) -> None:
    """On an index whose HNSW file ``path`` is damaged (``why``: how), ``ask`` stops with one line naming ``path``
    and the remedy, exit 2, Chroma never opened (no segfault); ``doctor`` rebuilds the index from the papers it
    stores before Chroma loads the damaged files, and ``ingest`` then adds to it."""
    new = tmp_path / "new.txt"
    new.write_text("ICML 2026\n\nWe propose NewNet, a sparse kernel for tabular data.\n")
    line = (rf"the vector index at {re.escape(str(folder))} is damaged: {re.escape(str(path))} {why}, so search "
            rf"would fail or return wrong papers: {repair_remedy(folder)}")
    code, out, err = run_cli("ask", Q, "--index", str(folder), sample=sample)
    assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), (code, err[-2000:])
    assert "chroma opened" not in err, err[-2000:]
    code, out, err = run_cli("doctor", "--index", str(folder), sample=sample)
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 38 papers", out, re.M), (out, err[-2000:])
    code, out, err = run_cli("ingest", str(new), "--index", str(folder), sample=sample)
    assert code == 0 and "1 added" in out, (out, err[-2000:])


def test_a_cut_hnsw_header_stops_questions_before_chroma_loads_it_and_is_rebuilt(synced, tmp_path):
    """#69: the chunks' header.bin cut to 50 bytes: every command, doctor too, died with a segfault (exit 139,
    no word) in Chroma's count, called before the header's size was looked at."""
    folder, chunks = synced
    with open(chunks / "header.bin", "r+b") as fh:
        fh.truncate(50)
    damage_stops_questions_and_is_rebuilt(folder, chunks / "header.bin", "is 50 bytes, not 100", tmp_path)


def test_zeros_over_the_link_lists_stop_questions_before_chroma_loads_them_and_are_rebuilt(synced, tmp_path):
    """#71: link_lists.bin overwritten with zeros (same size): every list says "bottom layer only", the entry
    point's too, and hnswlib's search from it read no memory (a segfault). The entry point's list must hold
    its upper layers: looked at on open, whatever the sample."""
    folder, chunks = synced
    header = (chunks / "header.bin").read_bytes()
    assert int.from_bytes(header[52:56], "little") > 0  # the index has upper layers (else zeros are what it holds)
    path = chunks / "link_lists.bin"
    path.write_bytes(bytes(path.stat().st_size))
    damage_stops_questions_and_is_rebuilt(folder, path, r"holds link lists no HNSW index has \(overwritten\?\)",
                                             tmp_path, sample=2)


def test_random_bytes_inside_data_level0_stop_questions_before_chroma_loads_them_and_are_rebuilt(synced, tmp_path):
    """#75: random bytes over a few records in the middle of data_level0.bin (size kept): opening looked at
    a sample only, so the damage reached hnswlib (a segfault in every command, doctor too, whose full look
    came after Chroma's). Every record is read on open now, before Chroma."""
    import numpy as np

    folder, chunks = synced
    header = (chunks / "header.bin").read_bytes()
    per, entry = int.from_bytes(header[28:36], "little"), int.from_bytes(header[56:60], "little")
    victim = next(i for i in range(20, 57) if i != entry)
    data = np.fromfile(chunks / "data_level0.bin", dtype=np.uint8)
    data[victim * per + 100: victim * per + 100 + 2 * per] = np.frombuffer(os.urandom(2 * per), np.uint8)
    data[victim * per: victim * per + 2] = [0xFF, 0x7F]  # random bytes, but surely a link count past the maximum
    data.tofile(chunks / "data_level0.bin")
    damage_stops_questions_and_is_rebuilt(folder, chunks / "data_level0.bin",
                                             r"holds links or vectors no HNSW index has \(overwritten\?\)",
                                             tmp_path, sample=2)


def test_an_older_database_restored_beside_newer_vector_files_is_found(tmp_path, monkeypatch, capsys, encoder):
    """chroma.sqlite3 copied back from a backup, the HNSW folders kept: doctor said ok, and searches returned
    chunks the database does not know (or missed ones it does)."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest, remove_sources

    folder = tmp_path / "idx"
    assert ingest([LIST], open_index(folder, encoder)).added == 19
    db = folder / "chroma" / "chroma.sqlite3"
    backup = tmp_path / "backup.sqlite3"
    shutil.copy(db, backup)
    shutil.copytree(folder / "chroma", tmp_path / "whole")
    idx = open_index(folder, encoder)
    assert ingest([CORPUS / "000_12a0d7b1c5c902c5.txt"], idx).added == 19
    open_index(folder, encoder)  # sound: opens
    assert remove_sources(["000_12a0d7b1c5c902c5.txt"], idx)  # a remove is a write too
    open_index(folder, encoder)
    shutil.copy(backup, db)
    line = (rf"the index database {re.escape(str(db))} is older than the index's vector files \(its last write is not "
            rf"in it: an older copy restored\?\), so search would return wrong papers: {repair_remedy(folder)}")
    code, out, err = run_main(monkeypatch, capsys, "ask", Q, "--index", str(folder))
    assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), err
    shutil.copytree(folder, tmp_path / "older")
    # The database's papers are what it holds: the index is rebuilt from them, consistent again.
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(tmp_path / "older"))
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 19 papers", out, re.M), out
    shutil.rmtree(folder / "chroma")  # the whole chroma folder restored from the backup: consistent, opens
    shutil.copytree(tmp_path / "whole", folder / "chroma")
    assert open_index(folder, encoder).store.counts()[0] == 19


def test_a_deleted_database_beside_its_vector_folders_is_named_not_taken_for_no_index(tmp_path, monkeypatch, capsys,
                                                                                       encoder):
    """chroma.sqlite3 deleted, the HNSW folders left: every command said "no index named 'abstracts' yet"
    (and Chroma made a new empty database beside the old folders)."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    folder = tmp_path / "idx"
    assert ingest([LIST], open_index(folder, encoder)).added == 19
    db = folder / "chroma" / "chroma.sqlite3"
    db.unlink()
    line = (rf"the index database {re.escape(str(db))} is missing \(deleted\?\) while the index's vector folders remain "
            rf"beside it, so the index cannot be read: {remedy(folder)}")
    for args in (["ask", Q], ["ingest", str(LIST)]):
        code, out, err = run_main(monkeypatch, capsys, *args, "--index", str(folder))
        assert (code, out) == (2, "") and re.fullmatch(rf"error: {line}\n", err), (args, err)
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 1 and re.search(rf"^FAIL  index: {line}$", out, re.M), out
    assert not db.exists()  # no empty database made in its place


def test_a_jsonl_file_gets_hints_of_its_own_format(tmp_path, encoder):
    """A JSONL file cut short was asked whether "its blank lines" were lost, and one with a huge abstract
    whether "the abstracts are separated by blank lines": hints for .txt lists."""
    import json

    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    idx = open_index(tmp_path / "idx", encoder)
    f = tmp_path / "recs.jsonl"
    records = [{"id": f"r{i}", "abstract": f"We study RecordNet variant {i} for tabular data."} for i in range(4)]
    f.write_text("".join(json.dumps(r) + "\n" for r in records))
    assert ingest([f], idx).added == 4
    f.write_text(json.dumps(records[0]) + "\n")
    assert ingest([f], idx).skipped == [
        "recs.jsonl: 3 of its 4 indexed papers are no longer in it (cut short?); nothing of it was changed. To take "
        "the file as it is now: paper-assistant ingest --replace recs.jsonl"]


def _sqlite_a_folder(folder):
    (folder / "chroma" / "chroma.sqlite3").unlink()
    (folder / "chroma" / "chroma.sqlite3").mkdir()


def _chroma_a_file(folder):
    shutil.rmtree(folder / "chroma")
    (folder / "chroma").write_text("x")


def _sqlite_a_fifo(folder):  # every command waited in open() for a writer, forever (a tenth hostile round)
    import os

    (folder / "chroma" / "chroma.sqlite3").unlink()
    os.mkfifo(folder / "chroma" / "chroma.sqlite3")


def _sqlite_a_loop(folder):  # "unexpected OSError: [Errno 40] Too many levels of symbolic links" (an 11th round)
    (folder / "chroma" / "chroma.sqlite3").unlink()
    (folder / "chroma" / "chroma.sqlite3").symlink_to("chroma.sqlite3")


@pytest.mark.parametrize("odd, why", [
    (_sqlite_a_folder, "(it is a folder, not SQLite's file)"),
    (_sqlite_a_fifo, "(it is no plain file (a FIFO, socket or device))"),
    (_sqlite_a_loop, "(it cannot be reached (too many levels of symbolic links))"),
    (_chroma_a_file, "(IDX/chroma is a file, not the folder that holds it)")],
    ids=["sqlite a folder", "sqlite a fifo", "sqlite a loop", "chroma a file"])
def test_a_database_of_the_wrong_kind_is_named_with_its_remedy(tmp_path, encoder, odd, why):
    """Second hostile round (#35, F18): Chroma's own words came through: "unable to open database file (code
    14)" for a folder where chroma.sqlite3 belongs, "File exists (os error 17)" for a file where chroma/ does."""
    from assistant.faces import one_line
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest
    from vectorstore.store import StoreError

    folder = tmp_path / "idx"
    ingest([CORPUS / "004_9268713af81d21d3.txt"], open_index(folder, encoder))
    odd(folder)
    with pytest.raises(StoreError) as err:
        open_index(folder, encoder)
    assert one_line(err.value) == (
        f"the index database {folder}/chroma/chroma.sqlite3 is damaged {why.replace('IDX', str(folder))}, so the "
        f"index cannot be read: delete {folder} and run `paper-assistant ingest` again (the paper files are not touched)")


def test_a_file_where_a_cache_folder_belongs_is_named_and_replaced(tmp_path, encoder):
    """Second hostile round (#35, F18): doctor said "(. is not a plain file)", and the rebuild it promised never
    came (the file stayed, the rename onto it failed, a .tmp folder was left)."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest
    from vectorstore.store import LexicalIndex

    folder = tmp_path / "idx"
    idx = open_index(folder, encoder)
    ingest([CORPUS / "004_9268713af81d21d3.txt"], idx)
    shutil.rmtree(idx.lexical_dir)
    idx.lexical_dir.write_text("x")
    assert LexicalIndex.inspect(idx.lexical_dir) == (None, "it is a file, not a folder")
    fresh = open_index(folder, encoder)
    assert fresh.lexical().search("reward model", 1)
    assert idx.lexical_dir.is_dir() and not idx.lexical_dir.with_name(idx.lexical_dir.name + ".tmp").exists()


def test_a_rebuild_never_writes_through_a_link_planted_as_its_work_folder(synced, monkeypatch, capsys, tmp_path):
    """A thirteenth hostile round: with rebuild.tmp a link to another index, doctor's rebuild wrote into that index and
    moved its database into this one (rmtree refuses a link, and the error was ignored). The link is removed, the
    folder it named left as it was; a chroma.damaged link likewise (doctor said "[Errno 20] Not a directory")."""
    folder, chunks = synced
    victim = tmp_path / "victim"
    (victim / "chroma").mkdir(parents=True)
    (victim / "chroma" / "keep.txt").write_text("theirs")
    (folder / "rebuild.tmp").symlink_to(victim)
    (folder / "chroma.damaged").symlink_to(victim)
    (chunks / "header.bin").unlink()
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 38 papers", out, re.M), out
    assert sorted(p.name for p in victim.rglob("*")) == ["chroma", "keep.txt"]
    assert not (folder / "rebuild.tmp").exists() and not (folder / "chroma.damaged").exists()


def test_an_hnsw_folder_looped_to_itself_is_rebuilt_and_a_garbled_write_record_ignored(synced, monkeypatch, capsys):
    """A thirteenth hostile round: a segment folder replaced by a link to itself made doctor say "delete the index";
    a written.json of a million "[" made every command "unexpected RecursionError"."""
    folder, chunks = synced
    shutil.rmtree(chunks)
    chunks.symlink_to(chunks.name)
    (folder / "chroma" / "written.json").write_text("[" * 1_000_000)
    code, out, err = run_main(monkeypatch, capsys, "ask", Q, "--index", str(folder))
    assert (code, out) == (2, "") and f"{chunks} is a symbolic link that leads nowhere" in err, err
    code, out, _ = run_main(monkeypatch, capsys, "doctor", "--index", str(folder))
    assert code == 0 and re.search(rf"^ok    {REBUILT} in [\d.]+ s; index at .*: 38 papers", out, re.M), out
