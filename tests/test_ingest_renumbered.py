"""A paper list (.txt) edited by deleting one abstract and adding another: ids are positions, so the
count stayed, the guard counting ids saw nothing, and the deleted abstract left the index silently.
Real Chroma, real files."""

from __future__ import annotations

import sys

import pytest

from vectorstore.index import open_index
from vectorstore.ingest import ingest

ABSTRACTS = [f"We study RenumberNet variant {i} for graph coloring with spectral message passing." for i in range(5)]
NEW = "We introduce FreshNet, a diffusion model for protein backbone generation."


def write(f, abstracts):
    f.write_text("ICML 2026\n\n" + "\n\n".join(abstracts) + "\n", encoding="utf-8")


@pytest.fixture
def listed(tmp_path, encoder):
    f = tmp_path / "renum.txt"
    write(f, ABSTRACTS)
    idx = open_index(tmp_path / "idx", encoder)
    assert ingest([f], idx).added == 5
    return f, idx


def texts(idx):
    return {pid: p.text for pid, p in idx.store.get_papers([f"renum#{i}" for i in range(1, 8)]).items()}


def test_an_abstract_deleted_and_another_added_skips_the_file_and_keeps_its_papers(listed):
    f, idx = listed
    before = texts(idx)
    write(f, ABSTRACTS[:2] + ABSTRACTS[3:] + [NEW])  # renum#3 deleted, one added at the end: still 5 ids
    report = ingest([f], idx)
    assert (report.added, report.updated, report.removed) == (0, 0, 0)
    assert report.skipped == [
        "renum.txt: the indexed text of renum#3 is no longer in it while later abstracts moved up (deleted, and "
        "another added?); nothing of it was changed. To take the file as it is now: paper-assistant ingest "
        "--replace renum.txt"]
    assert texts(idx) == before
    report = ingest([f], idx, replace=True)  # told: taken as it is now
    assert report.skipped == [] and texts(idx)["renum#5"] == NEW and ABSTRACTS[2] not in texts(idx).values()


def test_the_cli_exits_1_naming_the_replace_command(listed, monkeypatch, capsys):
    from assistant import cli

    f, idx = listed
    write(f, ABSTRACTS[1:4] + [NEW, "We add SecondNet, a sparse attention kernel for long documents."])
    monkeypatch.setattr(sys, "argv", ["paper-assistant", "ingest", str(f), "--index", str(idx.directory)])
    with pytest.raises(SystemExit) as exc:
        cli.main()
    err = capsys.readouterr().err
    assert exc.value.code == 1 and "renum.txt: the indexed text of renum#1, renum#5 are no longer in it" in err
    assert "paper-assistant ingest --replace renum.txt" in err


def test_an_append_and_edits_in_place_are_still_taken(listed):
    f, idx = listed
    write(f, ABSTRACTS + [NEW])  # appended
    report = ingest([f], idx)
    assert (report.added, report.skipped) == (1, [])
    edited = [a.replace("graph coloring", "graph matching") if i in (1, 3) else a for i, a in enumerate(ABSTRACTS)]
    write(f, edited + [NEW])  # two abstracts edited in place: nothing moved
    report = ingest([f], idx)
    assert (report.updated, report.skipped) == (2, [])
    write(f, edited + [NEW + " It scales.", "We propose ThirdNet for tabular anomaly detection."])  # edit + append
    report = ingest([f], idx)
    assert (report.added, report.updated, report.skipped) == (1, 1, [])
