import json

import pytest

from vectorstore.papers import CorpusError, load_jsonl, load_paper_list, load_papers


def test_bundled_corpus_has_38_papers_with_ids_venue_year(papers):
    assert len(papers) == 38
    assert papers[0].id == "000_12a0d7b1c5c902c5#1"
    assert papers[-1].id == "004_9268713af81d21d3#19"
    assert {p.venue for p in papers} == {"ICML"}
    assert {p.year for p in papers} == {2026}
    assert len({p.id for p in papers}) == 38
    assert all(p.text == p.text.strip() and p.text for p in papers)


def test_labels_name_what_the_abstract_introduces(papers):
    by_id = {p.id: p.label for p in papers}
    assert by_id["000_12a0d7b1c5c902c5#13"] == "OmniMoE"
    assert by_id["000_12a0d7b1c5c902c5#1"] == "Reward Auditor"
    assert by_id["000_12a0d7b1c5c902c5#15"] == "SyPE"
    # The name the verb introduces, not an acronym merely mentioned in an earlier "we propose" sentence.
    assert by_id["004_9268713af81d21d3#6"] == "U2A"  # "… linking PA with …", then "… Unlearning to Align (U2A)"
    assert all(by_id.values())


def test_paper_list_heading_only_and_empty(tmp_path):
    only = tmp_path / "only.txt"
    only.write_text("NeurIPS 2025 accepted papers\n")
    assert load_paper_list(only) == []
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    with pytest.raises(CorpusError, match="empty"):
        load_paper_list(empty)


def test_invalid_utf8_is_a_clear_error(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ICML 2026\n\nAn abstract \xff\xfe here.\n")
    with pytest.raises(CorpusError, match="invalid UTF-8 at byte"):
        load_paper_list(bad)


def test_jsonl_variants(tmp_path):
    f = tmp_path / "c.jsonl"
    rows = [
        {"id": "a", "title": "A", "abstract": "Alpha text.", "authors": ["X", None, {"name": "Y"}], "year": 2020,
         "venue": "NeurIPS", "url": "u", "extra": {"nested": [1, 2]}},
        {"id": "b", "abstract": "Beta text.", "authors": None},
        {"id": "c", "abstract": "Gamma.", "authors": "P and Q", "year": "n/a"},
    ]
    f.write_text("\n".join(json.dumps(r) for r in rows))
    ps = load_jsonl(f)
    assert [p.id for p in ps] == ["a", "b", "c"]
    assert ps[0].authors == ["X", "Y"] and ps[0].title == "A" and ps[0].year == 2020
    assert ps[1].authors == [] and ps[1].label
    assert ps[2].authors == ["P", "Q"] and ps[2].year is None
    f.write_text(json.dumps({"id": "z", "title": "no abstract"}))
    with pytest.raises(CorpusError, match=r":1: record has no 'abstract'"):
        load_jsonl(f)


def test_duplicate_abstracts_in_one_file_get_two_ids(tmp_path):
    f = tmp_path / "dup.txt"
    f.write_text("ICML 2026\n\nSame abstract text.\n\nSame abstract text.\n")
    ps = load_papers([f])
    assert [p.id for p in ps] == ["dup#1", "dup#2"]


def test_a_file_named_twice_is_read_once(tmp_path, monkeypatch):
    from vectorstore.papers import iter_paper_files

    folder = tmp_path / "lists"
    folder.mkdir()
    (folder / "a.txt").write_text("ICML 2026\n\nFirst abstract here.\n", encoding="utf-8")
    (folder / "b.jsonl").write_text('{"id": "x", "abstract": "An abstract."}\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    files = list(iter_paper_files([folder, folder / "a.txt", "./lists/a.txt", "lists"]))
    assert [f.name for f in files] == ["a.txt", "b.jsonl"]


def test_utf16_or_binary_file_is_refused_in_one_line(tmp_path):
    f = tmp_path / "utf16.txt"
    f.write_bytes("ICML 2024\n\nWe propose FooNet.\n".encode("utf-16-le"))
    with pytest.raises(CorpusError, match=r"NUL bytes \(line 1\): not UTF-8 text"):
        load_paper_list(f)
    g = tmp_path / "nul.jsonl"
    g.write_bytes(b'{"id": "x", "abstract": "ok"}\n' + b"\x00" * 50)
    with pytest.raises(CorpusError, match=r"NUL bytes \(line 2\)"):
        load_jsonl(g)


def test_a_stray_nul_byte_in_a_csv_cell_is_read_as_a_space_and_the_file_kept(tmp_path):
    """One NUL in a UTF-8 CSV skipped the whole file as "not UTF-8 text (UTF-16 or binary?)"."""
    from vectorstore.papers import load_csv

    f = tmp_path / "papers.csv"
    rows = ["id,title,abstract"] + [f"p{i},Title {i},We study graph coloring number {i} in depth." for i in range(5)]
    rows[2] = "p1,Title\x00 1,We study graph coloring number 1 in depth."
    f.write_bytes("\n".join(rows).encode())
    papers = load_csv(f)
    assert [p.id for p in papers] == [f"papers#p{i}" for i in range(5)] and papers[1].title == "Title  1"


def test_author_strings_keep_last_first_names_whole(tmp_path):
    f = tmp_path / "a.jsonl"
    rows = [{"id": "1", "abstract": "x", "authors": "Smith, John and Doe, Jane"},
            {"id": "2", "abstract": "x", "authors": "Vaswani, A.; Shazeer, N."},
            {"id": "3", "abstract": "x", "authors": "A Smith, B Jones"}]
    f.write_text("\n".join(json.dumps(r) for r in rows), encoding="utf-8")
    assert [p.authors for p in load_jsonl(f)] == [["Smith, John", "Doe, Jane"], ["Vaswani, A.", "Shazeer, N."],
                                                  ["A Smith", "B Jones"]]


def test_an_id_twice_in_one_jsonl_file_names_both_lines(tmp_path):
    f = tmp_path / "dup.jsonl"
    f.write_text('{"id": "d1", "abstract": "a"}\n{"id": "d2", "abstract": "b"}\n{"id": "d1", "abstract": "c"}\n')
    with pytest.raises(CorpusError, match=r"dup.jsonl:3: id 'd1' is used again \(first on line 1\)"):
        load_jsonl(f)


def test_blank_lines_holding_invisible_spaces_still_separate_abstracts(tmp_path):
    f = tmp_path / "web.txt"
    f.write_text("ICML 2026\nFirst abstract.\n\u00a0\nSecond abstract.\n\u3000 \nThird abstract.\n\u200b\nFourth.\n",
                 encoding="utf-8")
    assert [p.text for p in load_paper_list(f)] == ["First abstract.", "Second abstract.", "Third abstract.", "Fourth."]


@pytest.mark.parametrize("heading, expected", [
    ("ICML 2026 论文列表", ("ICML", 2026)), ("ICML-2024", ("ICML", 2024)), ("2024 ICML", ("ICML", 2024)),
    ("Papers from ICLR2025", ("ICLR", 2025)), ("My reading list", ("My reading list", None)),
    # Sixth break-it run: a multi-word venue was cut to its last word ("Systems"), or lost with its year.
    ("ICML 2026", ("ICML", 2026)), ("NeurIPS 2023", ("NeurIPS", 2023)),
    ("Advances in Neural Information Processing Systems 2016",
     ("Advances in Neural Information Processing Systems", 2016)),
    ("International Conference on Learning Representations (ICLR) 2021",
     ("International Conference on Learning Representations (ICLR)", 2021)),
    ("Proceedings of the 40th International Conference on Machine Learning 2023",
     ("International Conference on Machine Learning", 2023)),
    ("ACL\u2013IJCNLP 2021", ("ACL\u2013IJCNLP", 2021)), ("ML4H 2023", ("ML4H", 2023)),
    ("2016 Conference on Neural Information Processing Systems", ("Conference on Neural Information Processing Systems", 2016)),
    ("EMNLP 2023 Findings", ("EMNLP", 2023)),
])
def test_heading_venue_and_year(heading, expected):
    from vectorstore.papers import parse_heading

    assert parse_heading(heading) == expected


def test_a_list_under_a_multi_word_venue_keeps_the_whole_venue_on_each_paper(tmp_path):
    f = tmp_path / "nips.txt"
    f.write_text("Advances in Neural Information Processing Systems 2016\nFirst abstract.\n\nSecond abstract.\n")
    assert {(p.venue, p.year) for p in load_paper_list(f)} == {("Advances in Neural Information Processing Systems",
                                                               2016)}

def test_a_first_line_that_is_an_abstract_is_refused_even_with_a_year_in_it(tmp_path):
    f = tmp_path / "noheading.txt"
    first = ("We train detectors on COCO 2017 and evaluate on VOC 2012, showing that a simple recipe of "
             "augmentation and longer schedules closes most of the gap to much larger models at a fraction of the cost.")
    f.write_text(f"{first}\n\nSecond abstract.\n", encoding="utf-8")
    with pytest.raises(CorpusError, match="looks like an abstract"):
        load_paper_list(f)


def test_a_folder_is_read_with_its_subfolders_and_any_extension_case(tmp_path):
    (tmp_path / "2023").mkdir()
    (tmp_path / "2024" / "deep").mkdir(parents=True)
    (tmp_path / ".cache").mkdir()
    (tmp_path / "2023" / "a.txt").write_text("NeurIPS 2023\nA.\n", encoding="utf-8")
    (tmp_path / "2024" / "deep" / "b.JSONL").write_text('{"id": "b1", "abstract": "B."}\n', encoding="utf-8")
    (tmp_path / ".cache" / "c.txt").write_text("X 2020\nHidden.\n", encoding="utf-8")
    assert sorted(p.id for p in load_papers([tmp_path])) == ["a#1", "b1"]
