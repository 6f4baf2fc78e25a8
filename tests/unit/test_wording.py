"""Counts read as English: "1 paper in 1 chunk", "3 papers in 5 chunks" (no model)."""

from __future__ import annotations

from vectorstore.ingest import IngestReport
from vectorstore.papers import counted


def test_counts_take_the_singular_for_one():
    assert [counted(n, "paper") for n in (0, 1, 2)] == ["0 papers", "1 paper", "2 papers"]
    one = IngestReport(added=1, papers_total=1, chunks_total=1).summary()
    assert one == "1 added, 0 updated, 0 unchanged, 0 removed, 0 skipped; index holds 1 paper in 1 chunk"
    assert IngestReport(papers_total=3, chunks_total=5).summary().endswith("index holds 3 papers in 5 chunks")


def test_a_chroma_panic_on_a_damaged_database_is_one_line_naming_the_remedy(monkeypatch, capsys):
    """Break-it: a chroma.sqlite3 with one page zeroed made Chroma's Rust core panic at query time;
    pyo3's PanicException is a BaseException, so every command printed a traceback."""
    import sys

    import pytest
    import typer

    from assistant.faces.console import run

    panic = type("PanicException", (BaseException,), {"__module__": "pyo3_runtime"})
    app = typer.Typer()

    @app.command()
    def ask():
        raise panic('Expect it to be fetched: Database(SqliteError { code: 11, message: "database disk image is '
                    'malformed" })')

    monkeypatch.setattr(sys, "argv", ["paper-assistant"])
    with pytest.raises(SystemExit) as exit_:
        run(app)
    assert exit_.value.code == 2
    assert capsys.readouterr().err == ("error: the index database (chroma/chroma.sqlite3) is damaged (SQLite: "
                                       "database disk image is malformed): delete the index folder and run "
                                       "`paper-assistant ingest` again (the paper files are not touched)\n")
