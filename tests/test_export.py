"""Export of cited / listed papers: BibTeX (bibtexparser) that parses back into the same papers, Markdown, CLI."""

import json

import bibtexparser
import pytest

from assistant.research.export import (ExportItem, bib_value, export_format, items_from_answer, items_from_list, read_bibtex,
                              to_bibtex, to_markdown, write_export)
from assistant.text.markup import plain
from assistant.research.lists import list_papers
from vectorstore.papers import Paper

LIST_Q = "Which papers make diffusion models faster or cheaper to run at sampling/inference time?"
ASK_Q = "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?"


@pytest.fixture(scope="module")
def listed(assistant):
    return list_papers(assistant, LIST_Q)


def test_bibtex_of_a_list_parses_back_into_the_same_papers(listed):
    items = items_from_list(listed)
    assert len(items) == listed.count >= 3
    text = to_bibtex(items)
    lib = bibtexparser.parse_string(text)
    assert not lib.failed_blocks and len(lib.entries) == len(items)
    back = read_bibtex(text)
    assert [r["paperid"] for r in back] == [it.paper.id for it in items]
    assert [r["title"] for r in back] == [it.paper.display() for it in items]
    assert [int(r["year"]) for r in back] == [it.paper.year for it in items]
    assert [r["abstract"] for r in back] == [" ".join(plain(it.paper.text).split()) for it in items]
    assert not any("\\" in r["abstract"] or "**" in r["abstract"] for r in back)
    assert len({r["key"] for r in back}) == len(back)
    assert all(r["type"] == "inproceedings" and r["booktitle"] == "International Conference on Machine Learning (ICML)"
               and r["year"] == "2026" for r in back)


def test_bibtex_escapes_latex_specials_and_balances_braces():
    papers = [Paper(id="x#1", text="We get 50% more {GPU} throughput & $x_i$ gains.", title="Q&A at 50% {speed}",
                    authors=["Ada Lovelace", "Alan Turing"], year=2025, url="http://127.0.0.1/a_b#c"),
              Paper(id="x#2", text="Unbalanced } brace and { another.", label="Same Label"),
              Paper(id="x#3", text="Another.", label="Same Label")]
    text = to_bibtex([ExportItem(i, p) for i, p in enumerate(papers, 1)])
    assert r"Q\&A at 50\% {speed}" in text and "xᵢ gains" in text  # the abstract as plain text
    back = read_bibtex(text)
    assert back[0]["title"] == "Q&A at 50% {speed}" and back[0]["author"] == "Ada Lovelace and Alan Turing"
    assert back[0]["url"] == "http://127.0.0.1/a_b#c" and back[0]["type"] == "misc"
    assert back[1]["abstract"] == "Unbalanced brace and another."
    assert back[1]["key"] != back[2]["key"]
    assert bib_value("a {b") == "a b"
    # _ and # typeset only inside math: escaped around it, kept inside it, undone on reading.
    assert bib_value("net_work #1 with $x_i$") == r"net\_work \#1 with $x_i$"
    # "$5 … $3" is not math (pandoc's rule: no space before a closing $): both dollars are escaped.
    assert bib_value("It costs $5 per run, 10% of_runs and $3 for #2") == r"It costs \$5 per run, 10\% of\_runs and \$3 for \#2"
    # % and # inside math are still escaped (a comment or an error in LaTeX).
    assert bib_value("a $50\\% #x$ b") == r"a $50\% \#x$ b"


def test_markdown_shows_titles_and_links_literally():
    from assistant.research.export import md_text

    p = Paper(id="m1", text="x", title="Attention [is] *all* you `need` <script>x</script>",
              url="http://127.0.0.1/a_(b) c")
    md = to_markdown([ExportItem(1, p, "Uses $x_i$ and <b>bold</b>.")])
    # Emphasis marks and math become plain text (a Markdown viewer renders no LaTeX); the rest is literal.
    assert "**[Attention \\[is\\] all you \\`need\\` \\<script\\>x\\</script\\>](<http://127.0.0.1/a_(b)%20c>)**" in md
    assert "> Uses xᵢ and \\<b\\>bold\\</b\\>." in md
    assert md_text("a * b") == "a \\* b"
    assert md_text("a|b") == "a\\|b"


def test_markdown_lists_each_paper_with_its_sentence(listed):
    from assistant.research.export import md_text

    md = to_markdown(items_from_list(listed), "Papers for: x")
    assert md.startswith("# Papers for: x") and f"{listed.count} papers." in md
    for p in listed.papers:
        assert p.id in md and md_text(p.sentence.text) in md


def test_export_format_by_suffix(tmp_path):
    assert export_format("a.bib") == "bibtex" and export_format("A.MD") == "markdown"
    with pytest.raises(ValueError, match=r"use a \.bib or \.md"):
        export_format("a.pdf")
    out = write_export(tmp_path / "sub" / "p.md", [ExportItem(1, Paper(id="a", text="t", label="L"))])
    assert out.read_text().startswith("# Papers")


def test_cli_ask_export_bib_matches_the_cited_sources(assistant, index_dir, tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from assistant import cli
    from assistant.answer import service

    monkeypatch.setattr(service, "get_assistant", lambda settings: assistant)
    runner = CliRunner()
    out = runner.invoke(cli.app, ["ask", ASK_Q, "--index", str(index_dir), "--json", "--export", str(tmp_path / "a.bib")])
    assert out.exit_code == 0, out.output
    sources = [s["paper_id"] for s in json.loads(out.stdout)["citations"]]
    back = read_bibtex((tmp_path / "a.bib").read_text())
    assert [r["paperid"] for r in back] == sources and sources[0] == "000_12a0d7b1c5c902c5#13"
    bad = runner.invoke(cli.app, ["ask", ASK_Q, "--index", str(index_dir), "--export", str(tmp_path / "a.pdf")])
    assert bad.exit_code == 2 and "use a .bib or .md" in bad.output


def test_items_from_answer_keep_citation_order(assistant):
    ans = assistant.ask("Which papers study personality in large language models?")
    items = items_from_answer(ans, assistant.index.store)
    assert [it.paper.id for it in items] == [s.paper_id for s in ans.sources] and len(items) >= 2
    assert [it.n for it in items] == [s.n for s in ans.sources]


def test_bibtex_uses_the_full_title_and_authors_and_marks_a_derived_label():
    titled = Paper(id="j#1", text="We propose SyPE, a positional encoding.", label="SyPE",
                   title="SyPE: Symplectic Positional Encoding for Long Contexts", authors=["Ada Lovelace"])
    untitled = Paper(id="t#2", text="We propose SyPE, a positional encoding.", label="SyPE")
    back = read_bibtex(to_bibtex([ExportItem(1, titled), ExportItem(2, untitled)]))
    assert back[0]["title"] == "SyPE: Symplectic Positional Encoding for Long Contexts"
    assert back[0]["author"] == "Ada Lovelace" and "note" not in back[0]
    assert back[1]["title"] == "SyPE" and "author" not in back[1]
    assert "short label derived from the abstract" in back[1]["note"]


def test_papers_with_code_come_from_the_abstracts_links_with_a_filter_and_their_links(assistant):
    """ "Papers that release code" found 0, with a message about the abstention rule's bar; at least 8
    of the 38 abstracts link their code."""
    from assistant.research.lists import list_papers
    from assistant.retrieval.hybrid import Filters

    ans = assistant.ask("Which papers release code?")
    assert ans.verdict.value == "answered" and ans.count == len(ans.sources) == 9
    assert all(s.links and s.links[0] in s.sentence for s in ans.sources)
    assert ans.answer.splitlines()[0] == "9 papers in the index match:"
    both = list_papers(assistant, "Which papers make their code publicly available?")
    assert [p.id for p in both.papers] == [s.paper_id for s in ans.sources]
    only = assistant.ask("Which papers are about machine unlearning?", filters=Filters(has_code=True))
    assert {s.paper_id for s in only.sources} <= {s.paper_id for s in ans.sources} and only.sources
    items = items_from_answer(ans, assistant.index.store)
    bib = read_bibtex(to_bibtex(items))
    assert [r["url"] for r in bib] == [s.links[0] for s in ans.sources]
    assert "   Code / project: <https://github.com/skyshoumeng/MapGR>" in to_markdown(items)


def test_an_export_of_a_refusal_writes_no_empty_file(index, index_dir, tmp_path, monkeypatch, capsys):
    """`ask … --export ocean.bib` under "No relevant abstract found" wrote a 0-byte file, so the next run
    needed --force."""
    from assistant.cli import main

    out = tmp_path / "ocean.bib"
    monkeypatch.setattr("sys.argv", ["paper-assistant", "ask", "Which papers measure ocean temperature with satellites?",
                                     "--index", str(index_dir), "--export", str(out)])
    try:
        main()
    except SystemExit as done:  # the console runner may exit 0 explicitly
        assert done.code in (0, None)
    assert not out.exists()
    assert f"nothing to export to {out}: the answer cites no paper" in capsys.readouterr().err
