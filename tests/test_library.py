"""Bring your own library (issue 34): a Zotero BibTeX export, a Zotero CSV and arXiv snapshot lines are ingested with
the guarantees of a paper list. Every paper is answerable afterwards and every bad entry is named; a re-run changes
nothing; an emptied or cut file keeps its papers; ``--replace`` and ``remove`` work by file; a selection
(``--category``, ``--since``) reads only its papers; the category, venue and year filter the CLI, MCP and the page;
an ingested .bib entry exports as itself; a SIGKILL mid-ingest of a .bib resumes to the clean result.

Real model, real Chroma, files the tests write themselves (tests/library_files.py)."""

from __future__ import annotations

import json
import re
import signal
import time
from datetime import date
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from tests.library_files import BIB, line_of, write_library
from tests.test_hardening import run_main

LIB_IDS = {"zotero#mueller2023quokka", "zotero#chen2024marmot", "zotero#okafor2024otter", "library#ABCD2345",
           "library#MNOP4567", "arxiv:2401.00001", "arxiv:2312.09999", "arxiv:2403.00004"}
CS_LG = {"zotero#okafor2024otter", "arxiv:2401.00001", "arxiv:2403.00004"}


@pytest.fixture(scope="module")
def library(tmp_path_factory, settings, encoder):
    """The three files ingested into an index of their own: ``files``, ``index``, ``settings`` (its settings)."""
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    tmp = tmp_path_factory.mktemp("library")
    files = write_library(tmp / "papers")
    idx = open_index(tmp / "idx", encoder)
    report = ingest(list(files.values()), idx)
    assert report.added == len(LIB_IDS)
    return SimpleNamespace(files=files, index=idx, settings=settings.model_copy(update={"index": tmp / "idx"}))


def _ask(monkeypatch, capsys, library, *args) -> tuple[int, dict | str]:
    code, out, err = run_main(monkeypatch, capsys, "ask", *args, "--index", str(library.settings.index), "--json")
    return code, json.loads(out) if code == 0 else err


def _found(ans: dict) -> set[str]:
    """The ids an ``ask --json`` answer cites or retrieved without citing."""
    return {s["paper_id"] for s in ans["citations"] + ans["also_retrieved"]}


def test_ingest_names_each_bad_entry_counts_the_abstractless_and_a_rerun_changes_nothing(tmp_path, monkeypatch,
                                                                                          capsys):
    files = write_library(tmp_path / "papers")
    args = [str(f) for f in files.values()] + ["--index", str(tmp_path / "idx")]
    code, out, err = run_main(monkeypatch, capsys, "ingest", *args)
    assert code == 1  # a malformed entry is an error to fix, not a reason to lose the rest of its file
    assert re.fullmatch(r"8 added, 0 updated, 0 unchanged, 0 removed, 0 skipped; 3 entries without an abstract "
                        r"skipped; 4 malformed entries skipped; index holds 8 papers in \d+ chunks\n", out), out
    bib, csv, arxiv = files["bib"], files["csv"], files["arxiv"]
    assert err.splitlines() == [
        f"skipped entry: {bib}:{line_of(BIB, '@article{mueller2023quokka', 2)}: citation key 'mueller2023quokka' is "
        f"used again (first on line {line_of(BIB, '@article{mueller2023quokka')}); keys must be unique",
        f"skipped entry: {bib}:{line_of(BIB, '@article{badyear')}: 'year' 30000.0 is not a plausible year "
        "(expected 1000–2100)",
        f"skipped entry: {csv}:5: 5 cells, but the header names 11 columns (a quote not closed, or a delimiter "
        "inside an unquoted cell?)",
        f"skipped entry: {arxiv}:3: invalid JSON (Unterminated string starting at; a line cut short?)"]
    code, out, _ = run_main(monkeypatch, capsys, "ingest", *args)
    assert out.startswith("0 added, 0 updated, 8 unchanged, 0 removed, 0 skipped; 3 entries without an abstract")


@pytest.mark.parametrize("question, expected", [
    ("What is QuokkaFormer?", "zotero#mueller2023quokka"),
    ("Which memory burrows through long contexts of a million tokens?", "zotero#chen2024marmot"),
    ("What is OtterGrad?", "zotero#okafor2024otter"),
    ("Which network maps wetlands from satellite images?", "library#ABCD2345"),
    ("What is BadgerDB?", "library#MNOP4567"),
    ("Which exploration bonus dives for sparse rewards in Atari games?", "arxiv:2401.00001"),
    ("What is FlamingoSeg?", "arxiv:2312.09999"),
    ("What is WombatLM?", "arxiv:2403.00004"),
])
def test_each_paper_of_the_library_is_answerable(library, monkeypatch, capsys, question, expected):
    code, ans = _ask(monkeypatch, capsys, library, question)
    assert code == 0 and ans["verdict"] == "answered", ans
    assert ans["citations"][0]["paper_id"] == expected, ans


def test_category_venue_and_year_filter_the_cli(library, monkeypatch, capsys):
    code, ans = _ask(monkeypatch, capsys, library, "What is OtterGrad?", "--category", "cs.lg")
    assert code == 0 and ans["citations"][0]["paper_id"] == "zotero#okafor2024otter", ans
    code, ans = _ask(monkeypatch, capsys, library, "What is FlamingoSeg?", "--category", "cs.LG")
    found = _found(ans)
    assert code == 0 and found <= CS_LG and "Only papers matching the filters (category cs.LG)" in ans["note"], ans
    code, ans = _ask(monkeypatch, capsys, library, "What is QuokkaFormer?", "--venue",
                     "journal of machine learning research")
    assert [c["paper_id"] for c in ans["citations"]] == ["zotero#mueller2023quokka"] and _found(ans) == {"zotero#mueller2023quokka"}
    code, ans = _ask(monkeypatch, capsys, library, "Which network maps wetlands?", "--year", "2022")
    assert _found(ans) == {"library#ABCD2345"}, ans
    code, err = _ask(monkeypatch, capsys, library, "What is PelicanRL?", "--category", "q-bio.NC")
    assert code == 2 and err == ("error: no indexed paper has category 'q-bio.NC'; the index has: cs.CL, cs.CV, cs.LG, "
                                 "stat.ML\n")
    code, out, _ = run_main(monkeypatch, capsys, "list", "Which papers propose an exploration bonus for sparse rewards?",
                            "--category", "stat.ML", "--index", str(library.settings.index), "--json")
    assert code == 0 and [p["paper_id"] for p in json.loads(out)["papers"]] == ["arxiv:2401.00001"]


def test_category_filters_mcp_and_the_page(library):
    from assistant.answer.pipeline import Assistant
    from assistant.mcp.tools import Backend, index_summary, paper_record, search_papers
    from assistant.page.chat import facet_choices, list_all
    from assistant.page.state import Page

    backend = Backend(library.settings, ingest_default=False)
    hits = search_papers(backend, "exploration for sparse rewards", k=5, category="stat.ml").papers
    assert [(h.paper_id, h.categories) for h in hits] == [("arxiv:2401.00001", ["cs.LG", "stat.ML"])]
    assert paper_record(backend, "arxiv:2403.00004").categories == ["cs.CL", "cs.LG"]
    assert index_summary(backend)["categories"] == {"cs.CL": 1, "cs.CV": 1, "cs.LG": 3, "stat.ML": 1}
    page = Page(library.settings, Assistant(library.settings, library.index))
    assert facet_choices(page)["category"] == ["any", "cs.CL", "cs.CV", "cs.LG", "stat.ML"]
    *_, listed = list_all(page, "Which papers segment pink objects in aerial photographs?", [], [], category="cs.CV")
    assert [p.paper.id for p in listed.papers] == ["arxiv:2312.09999"]


def test_an_ingested_bib_entry_exports_as_itself(library, tmp_path, monkeypatch, capsys):
    from vectorstore.papers import load_bibtex

    out = tmp_path / "quokka.bib"
    code, _ = _ask(monkeypatch, capsys, library, "What is QuokkaFormer?", "--export", str(out))
    assert code == 0
    stored = library.index.store.get_papers(["zotero#mueller2023quokka"])["zotero#mueller2023quokka"]
    back = next(p for p in load_bibtex(out) if p.bibtex["paperid"] == stored.id)  # read as the library file it was
    assert back.id == "quokka#mueller2023quokka" and back.text == stored.text and back.title == stored.title
    assert {k: v for k, v in back.bibtex.items() if k != "paperid"} == stored.bibtex  # type, key, every field
    assert back.bibtex["paperid"] == "zotero#mueller2023quokka"
    arxiv = tmp_path / "pelican.bib"
    code, _ = _ask(monkeypatch, capsys, library, "What is PelicanRL?", "--export", str(arxiv))
    entry = next(p for p in load_bibtex(arxiv) if p.bibtex["paperid"] == "arxiv:2401.00001")
    assert {k: entry.bibtex.get(k) for k in ("eprint", "archiveprefix", "primaryclass")} == \
        {"eprint": "2401.00001", "archiveprefix": "arXiv", "primaryclass": "cs.LG"}


def test_an_emptied_or_cut_file_keeps_its_papers_and_replace_and_remove_work_by_file(tmp_path, encoder):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest, remove_sources

    files = write_library(tmp_path / "papers")
    idx = open_index(tmp_path / "idx", encoder)
    assert ingest(list(files.values()), idx).added == 8
    files["bib"].write_text("\n\n", encoding="utf-8")  # a save that failed
    report = ingest([files["bib"]], idx)
    assert report.skipped == ["zotero.bib: no papers in this file, but 3 papers of it are indexed; they were kept (to "
                              "drop them: paper-assistant remove zotero.bib)"]
    text = files["arxiv"].read_text()
    files["arxiv"].write_text(text[: text.rindex("digs burrows")], encoding="utf-8")  # a copy cut off mid-record
    report = ingest([files["arxiv"]], idx)
    assert report.skipped == ["arxiv.json: 1 of its 3 indexed papers is no longer in it; nothing of it "
                              "was changed. To take the file as it is now: paper-assistant ingest --replace arxiv.json"]
    assert report.entries.skipped[-1].startswith(f"{files['arxiv']}:5: invalid JSON")
    csv = files["csv"].read_bytes()
    files["csv"].write_bytes(csv[: csv.rindex(b"sorted keys")])
    assert ingest([files["csv"]], idx).skipped[0].startswith("library.csv: 1 of its 2 indexed papers is no longer in it")
    assert idx.store.counts()[0] == 8
    report = ingest([files["arxiv"]], idx, replace=True)
    assert report.removed == 1 and "arxiv:2403.00004" not in idx.store.paper_hashes()
    assert remove_sources(["zotero.bib"], idx) == {"zotero.bib": 3}
    assert set(idx.store.paper_hashes()) == LIB_IDS - {"arxiv:2403.00004"} - {i for i in LIB_IDS if "zotero" in i}


def test_a_selection_reads_only_its_papers_and_leaves_the_others_as_they_are(tmp_path, encoder, monkeypatch,
                                                                             capsys):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest
    from vectorstore.papers import Selection

    snap = write_library(tmp_path / "papers")["arxiv"]
    idx = open_index(tmp_path / "idx", encoder)
    report = ingest([snap], idx, selection=Selection(category="cs.LG", since=date(2024, 1, 1)))
    assert report.added == 2 and set(idx.store.paper_hashes()) == {"arxiv:2401.00001", "arxiv:2403.00004"}
    assert "1 entry without an abstract skipped; 1 malformed entry skipped; 1 entry left out by the selection" in \
        report.summary()
    assert (ingest([snap], idx).added, idx.store.counts()[0]) == (1, 3)  # the rest, without a selection
    for replace in (False, True):  # what a selection leaves out is neither cut from the file nor gone from it
        report = ingest([snap], idx, selection=Selection(category="cs.CV"), replace=replace)
        assert (report.unchanged, report.removed, report.skipped, idx.store.counts()[0]) == (1, 0, [], 3)
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(snap), "--since", "2099-01-01", "--index",
                              str(tmp_path / "idx"))
    assert code == 1 and "warning: arxiv.json: no paper in it passes the selection (4 entries left out by the " \
        "selection, 1 malformed entry)" in err and out.startswith("0 added, 0 updated, 0 unchanged, 0 removed")
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(snap), "--since", "last week")
    assert code == 2 and "'last week' is not a date: give it as YYYY-MM-DD" in err


def _bib_of(records: list[dict]) -> str:
    from assistant.research.export import bib_value

    return "".join(f"@article{{key{i},\n  title = {{{bib_value(r['title'])}}},\n  year = {{2024}},\n"
                   f"  abstract = {{{bib_value(r['abstract'])}}},\n}}\n\n" for i, r in enumerate(records))


def test_a_sigkill_during_a_bib_ingest_resumes_to_the_clean_result(tmp_path, encoder):
    from tests.kill_replace import synthetic_papers
    from tests.test_scale import Writer
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    bib = tmp_path / "library.bib"
    bib.write_text(_bib_of(synthetic_papers(120)), encoding="utf-8")
    writer = Writer(tmp_path, bib, tmp_path / "killed", block_at=0)  # 10 papers a commit
    writer.wait_for(lambda lines: any(line.startswith("COMMITTED") for line in lines))
    time.sleep(0.3)  # inside a later batch: embedding, chunk writes or commit marks
    writer.kill()
    assert writer.proc.returncode == -signal.SIGKILL and "DONE" not in writer.lines
    killed = open_index(tmp_path / "killed", encoder, create=False)
    assert 10 <= killed.store.counts()[0] < 120
    resumed = ingest([bib], killed)
    clean = open_index(tmp_path / "clean", encoder)
    assert ingest([bib], clean).added == 120 == resumed.added + resumed.unchanged
    assert killed.store.paper_hashes() == clean.store.paper_hashes()
    a, b = (i.store.chunks.get(include=["embeddings"]) for i in (killed, clean))
    assert sorted(a["ids"]) == sorted(b["ids"])
    va, vb = (np.asarray(x["embeddings"])[np.argsort(x["ids"])] for x in (a, b))
    # The same vectors up to the int8 encoder's batch: it quantizes each batch's activations with a scale of its own
    # (one sentence encoded alone and beside a longer one: cosine 0.994), and a resumed run batches otherwise.
    assert (va * vb).sum(axis=1).min() > 0.98


def test_the_library_files_live_under_their_own_names(library):
    assert {Path(f).name for f in library.files.values()} == {p.source for p in library.index.store.all_papers()[0]}
