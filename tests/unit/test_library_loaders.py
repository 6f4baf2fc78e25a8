"""The loaders of a user's own library (issue 34): a Zotero BibTeX export, a Zotero CSV, arXiv snapshot lines. Each
entry becomes a paper or is accounted for: without an abstract (counted), malformed (named with its file and line,
the rest of the file read). No model: the files are read, nothing is embedded."""

from datetime import date
from pathlib import Path

import pytest

from tests.library_files import ARXIV, BIB, CSV_ROWS, arxiv_record, arxiv_text, csv_text, line_of, write_library
from vectorstore.papers import CorpusError, Selection, Tally, file_format, iter_paper_files, read_file


def _read(path: Path, selection: Selection | None = None, known=frozenset()) -> tuple[dict, Tally]:
    tally = Tally()
    return {p.id: p for p in read_file(path, selection, known, tally)}, tally


def test_bibtex_entries_become_papers_with_macros_expanded_and_latex_as_unicode(tmp_path):
    papers, tally = _read(write_library(tmp_path)["bib"])
    assert list(papers) == ["zotero#mueller2023quokka", "zotero#chen2024marmot", "zotero#okafor2024otter"]
    quokka, marmot, otter = papers.values()
    assert quokka.title == "QuokkaFormer: Sparse Attention for München Street Scenes"  # braces gone, {\"u} → ü
    assert quokka.authors == ["Müller, Jörg", "García, Ana"]
    assert quokka.venue == "Journal of Machine Learning Research" and quokka.year == 2023  # @string jmlr
    assert quokka.text == ("We introduce QuokkaFormer, a sparse attention transformer for street scene parsing. "
                           "QuokkaFormer attends to 12% of the tokens and keeps its accuracy on the München benchmark.")
    assert quokka.url == "https://doi.org/10.5555/quokka.2023"  # the DOI as its link
    assert marmot.venue == "Advances in Neural Information Processing Systems 37"  # neurips # " 37"
    assert "$O(\\log n)$" in marmot.text  # math is kept for the page's KaTeX and the CLI's Unicode
    assert marmot.authors == ["Chen, Li", "Dubois, François"] and marmot.year == 2024
    assert otter.url == "https://arxiv.org/abs/2405.01234" and otter.categories == ["cs.LG"] and otter.venue == ""
    assert quokka.bibtex == {"ENTRYTYPE": "article", "ID": "mueller2023quokka", "title": quokka.title,
                             "author": "Müller, Jörg and García, Ana", "journal": "Journal of Machine Learning Research",
                             "year": "2023", "doi": "10.5555/quokka.2023"}
    assert tally.no_abstract == 1  # nobody2022


def test_bad_bibtex_entries_are_named_with_their_line_and_the_rest_is_read(tmp_path):
    broken = BIB.replace("@misc{okafor2024otter,\n  title = {Otter", "@misc{okafor2024otter,\n  title = {Otter {")
    path = tmp_path / "refs.bib"
    path.write_text(broken, encoding="utf-8")
    papers, tally = _read(path)
    assert list(papers) == ["refs#mueller2023quokka", "refs#chen2024marmot"]
    dup, bad_year = line_of(BIB, "@article{mueller2023quokka", 2), line_of(BIB, "@article{badyear")
    assert tally.skipped[0].startswith(f"{path}:{line_of(BIB, '@misc{okafor2024otter')}: entry does not parse (")
    assert tally.skipped[1:] == [
        f"{path}:{dup}: citation key 'mueller2023quokka' is used again (first on line "
        f"{line_of(BIB, '@article{mueller2023quokka')}); keys must be unique",
        f"{path}:{bad_year}: 'year' 30000.0 is not a plausible year (expected 1000–2100)"]


def test_a_zotero_csv_maps_its_columns_and_names_its_bad_rows(tmp_path):
    path = write_library(tmp_path)["csv"]
    papers, tally = _read(path)
    assert list(papers) == ["library#ABCD2345", "library#MNOP4567"]  # the Key column, the BOM before it read
    heron, badger = papers.values()
    assert heron.title == "HeronNet for Wetland Mapping" and heron.year == 2022 and heron.venue == "Remote Sensing Letters"
    assert heron.authors == ["Ivanova, Mila", "Tanaka, Kenji"] and heron.url == "https://doi.org/10.1000/heron"
    assert heron.text.endswith("satellite images.\nHeronNet labels reeds, open water and mud at ten metre resolution.")
    assert badger.authors == ["Rossi, Paolo"] and badger.url == "https://example.org/badger"
    assert tally.no_abstract == 1
    assert tally.skipped == [f"{path}:5: 5 cells, but the header names 11 columns (a quote not closed, or a "
                             "delimiter inside an unquoted cell?)"]  # the row after the one spanning lines 2-3


def test_a_csv_without_keys_numbers_its_rows_and_a_bad_csv_is_one_line(tmp_path):
    plain = tmp_path / "sheet.csv"
    plain.write_text("title;abstract;year\nA;We study ants.;2020\nB;;2021\nC;We study bees.;\n", encoding="utf-8")
    papers, tally = _read(plain)
    assert {pid: p.title for pid, p in papers.items()} == {"sheet#1": "A", "sheet#3": "C"}  # ";" found, rows counted
    assert tally.no_abstract == 1
    latin = tmp_path / "latin.csv"
    latin.write_bytes("title,abstract\nCafé,We study cafés.\n".encode("latin-1"))
    with pytest.raises(CorpusError, match=rf"^{latin}: invalid UTF-8 at byte 18 \(line 2\); re-save the file as UTF-8"):
        read_file(latin)
    headless = tmp_path / "headless.csv"
    headless.write_text("name,summary text\nA,B\n", encoding="utf-8")
    with pytest.raises(CorpusError, match=rf"^{headless}: no 'title' or 'abstract' column in its first row"):
        read_file(headless)


def test_arxiv_lines_are_known_by_their_first_record_in_json_and_jsonl(tmp_path):
    snap = write_library(tmp_path)["arxiv"]
    lines = tmp_path / "snapshot.jsonl"
    lines.write_text(snap.read_text(), encoding="utf-8")
    own = tmp_path / "own.jsonl"
    own.write_text('{"id": "p1", "abstract": "We study owls.", "categories": "x"}\n', encoding="utf-8")
    assert (file_format(snap), file_format(lines), file_format(own)) == ("arxiv", "arxiv", "jsonl")
    papers, tally = _read(snap)
    assert list(papers) == ["arxiv:2401.00001", "arxiv:2312.09999", "arxiv:2403.00004"]
    pelican = papers["arxiv:2401.00001"]
    assert pelican.title == "PelicanRL: Diving for Sparse Rewards"  # the snapshot's line break gone
    assert pelican.authors == ["A. Balázs", "B. Nowak"] and pelican.year == 2024
    assert pelican.categories == ["cs.LG", "stat.ML"] and pelican.url == "https://arxiv.org/abs/2401.00001"
    assert pelican.text == ("We propose PelicanRL, an exploration bonus that dives for sparse rewards in Atari games. "
                            "PelicanRL doubles the score on Montezuma's Revenge.")
    assert tally.no_abstract == 1
    assert tally.skipped == [f"{snap}:3: invalid JSON (Unterminated string starting at; a line cut short?)"]
    (tmp_path / "settings.json").write_text('{"theme": "dark"}\n')  # a folder's other .json files are not papers
    assert sorted(f.name for f in iter_paper_files([tmp_path]) if f.suffix == ".json") == ["arxiv.json"]


def test_a_selection_filters_arxiv_lines_while_reading(tmp_path):
    snap = write_library(tmp_path)["arxiv"]
    papers, tally = _read(snap, Selection(category="CS.lg", since=date(2024, 1, 1)), known={"arxiv:2312.09999"})
    assert list(papers) == ["arxiv:2401.00001", "arxiv:2403.00004"]
    assert tally.left_out == 1 and tally.passed_over == {"arxiv:2312.09999"}  # indexed, left out: kept as it is
    assert tally.no_abstract == 1  # 2402.00002 passes the selection, and has no abstract
    papers, tally = _read(snap, Selection(since=date(2024, 2, 1)))
    assert list(papers) == ["arxiv:2403.00004"] and tally.left_out == 2 and tally.no_abstract == 1  # 02-01 counts
    bib, _ = _read(write_library(tmp_path)["bib"], Selection(category="cs.LG"))  # other formats: their categories
    assert list(bib) == ["zotero#okafor2024otter"]


def test_snapshot_lines_are_streamed_and_a_paper_edited_between_readings_is_left_out(tmp_path):
    from vectorstore.ingest.reading import read_paper_file

    snap = tmp_path / "arxiv.json"
    snap.write_text(arxiv_text(ARXIV, broken_line=None), encoding="utf-8")
    read = read_paper_file(snap, lambda p: p.text)
    assert read.held is None and list(read.hashes) == ["arxiv:2401.00001", "arxiv:2312.09999", "arxiv:2403.00004"]
    assert [p.id for p in read.head] == list(read.hashes) and read.last.id == "arxiv:2403.00004"
    edited = [dict(r, abstract="We now propose something else.") if r["id"] == "2312.09999" else r for r in ARXIV]
    snap.write_text(arxiv_text(edited, broken_line=None), encoding="utf-8")
    assert [p.id for p in read.papers({"arxiv:2401.00001", "arxiv:2312.09999"})] == ["arxiv:2401.00001"]
    assert read.changed == 1


def test_a_record_without_an_arxiv_id_or_with_a_lone_surrogate_is_named(tmp_path):
    snap = tmp_path / "a.jsonl"
    good = arxiv_record("2405.00001", "T", "We study owls.", "cs.LG", "2024-05-01", "", [["O", "W", ""]])
    snap.write_text("\n".join([
        '{"id": "2405.00001", "title": "T", "abstract": "A", "authors": "", "categories": "", "update_date": ""}',
        '{"id": 2405.00002, "title": "T", "abstract": "B", "authors": "", "categories": "", "update_date": ""}',
        '{"id": "2405.00003", "title": "T", "abstract": "C \\ud800", "authors": "", "categories": "", "update_date": ""}',
        '[1, 2]', __import__("json").dumps(dict(good, id="2405.00004"))]) + "\n", encoding="utf-8")
    papers, tally = _read(snap)
    assert list(papers) == ["arxiv:2405.00001", "arxiv:2405.00004"]
    assert [line.split(": ", 1)[0] for line in tally.skipped] == [f"{snap}:2", f"{snap}:3", f"{snap}:4"]
    assert "no 'id' string" in tally.skipped[0] and "lone UTF-16 surrogate" in tally.skipped[1]
    assert tally.skipped[2].endswith("expected a JSON object, got list")


def test_blank_lines_between_csv_rows_are_no_rows(tmp_path):
    path = tmp_path / "z.csv"
    path.write_text(csv_text(CSV_ROWS[:2]) + "\r\n\r\n" + csv_text(CSV_ROWS[4:]), encoding="utf-8")
    papers, tally = _read(path)
    assert list(papers) == ["z#ABCD2345", "z#MNOP4567"] and tally.malformed == 0


def test_latex_pylatexenc_stumbles_on_keeps_its_text_and_its_links(tmp_path):
    path = tmp_path / "links.bib"
    path.write_text("@misc{k, title = {T}, abstract = {Code at \\href{https://github.com/a/b}{\\texttt{github.com/a/b}}. "
                    "We gain 5% with \\textsf{Fast} and 3\\% with \\cite{x}.}}\n", encoding="utf-8")
    papers, tally = _read(path)
    assert tally.malformed == 0  # \href broke pylatexenc's text conversion (IndexError): the entry was lost
    (paper,) = papers.values()
    assert paper.text == "Code at github.com/a/b <https://github.com/a/b>. We gain 5% with Fast and 3% with <cit.>."
    assert paper.links == ["https://github.com/a/b"]


def test_an_id_holding_a_line_break_is_refused_with_its_file_and_line(tmp_path):
    """A hostile round: a JSONL id holding ``\\n`` was ingested, and every citation of it came out over two lines."""
    import json

    path = tmp_path / "ids.jsonl"
    path.write_text(json.dumps({"id": "zeta\nnet", "abstract": "ZetaNet is a network."}) + "\n", encoding="utf-8")
    with pytest.raises(CorpusError) as err:
        read_file(path, None, frozenset(), Tally())
    assert str(err.value) == (f"{path}:1: id 'zeta\\nnet' holds a line break or other control character; give it an "
                              "id on one line")
    path.write_text(json.dumps({"id": "zeta net", "abstract": "ZetaNet is a network."}) + "\n", encoding="utf-8")
    assert [p.id for p in read_file(path, None, frozenset(), Tally())] == ["zeta net"]
