"""The one JSONL reader (vectorstore.jsonl) and its two callers: paper collections and question files."""

import json
import re

import pytest

from vectorstore.jsonl import JsonlError, iter_jsonl

BREAKS = "a\u2028b\u2029c\u0085d\x1ce\x1df\x1eg\x0bh\x0ci"  # every break str.splitlines() knows but "\n" and "\r"


def write_lines(path, *lines, newline="\n"):
    path.write_text(newline.join(lines) + newline, encoding="utf-8")
    return path


def test_a_line_break_character_inside_a_string_does_not_split_the_record(tmp_path):
    f = write_lines(tmp_path / "a.jsonl", json.dumps({"x": BREAKS}, ensure_ascii=False), '{"x": "next"}')
    assert list(iter_jsonl(f)) == [(1, {"x": BREAKS}), (2, {"x": "next"})]


def test_line_numbers_count_blank_lines_and_crlf_and_a_bom_are_read(tmp_path):
    f = tmp_path / "b.jsonl"
    f.write_bytes(b'\xef\xbb\xbf{"n": 1}\r\n\r\n   \r\n{"n": 2}\r\n')
    assert list(iter_jsonl(f)) == [(1, {"n": 1}), (4, {"n": 2})]


def test_given_text_is_read_instead_of_the_file(tmp_path):
    assert list(iter_jsonl(tmp_path / "never-read.jsonl", '{"n": 1}\n')) == [(1, {"n": 1})]


def test_a_bad_line_is_an_error_naming_file_and_line_after_the_good_lines_before_it(tmp_path):
    f = write_lines(tmp_path / "c.jsonl", '{"n": 1}', "", '{"n": 2', '{"n": 3}')
    records = iter_jsonl(f)
    assert next(records) == (1, {"n": 1})
    with pytest.raises(JsonlError) as err:
        next(records)
    assert str(err.value) == f"{f}:3: invalid JSON (Expecting ',' delimiter)"
    assert (err.value.path, err.value.line_no, err.value.problem) == (f, 3, "invalid JSON (Expecting ',' delimiter)")
    assert isinstance(err.value, ValueError)  # a user error for the CLI and the chat


@pytest.mark.parametrize("line, kind", [("[1, 2]", "list"), ('"text"', "str"), ("3", "int"), ("null", "NoneType")])
def test_a_line_that_is_no_object_is_an_error(tmp_path, line, kind):
    f = write_lines(tmp_path / "d.jsonl", line)
    with pytest.raises(JsonlError, match=rf"^{re.escape(str(f))}:1: expected a JSON object, got {kind}$"):
        list(iter_jsonl(f))


def test_papers_keep_a_line_break_character_and_name_a_bad_line_as_corpus_errors(tmp_path):
    from vectorstore.papers import CorpusError, load_jsonl

    f = write_lines(tmp_path / "p.jsonl", json.dumps({"id": "p1", "abstract": f"One {BREAKS} abstract."},
                                                     ensure_ascii=False))
    assert [(p.id, p.text) for p in load_jsonl(f)] == [("p1", f"One {BREAKS} abstract.")]
    bad = write_lines(tmp_path / "bad.jsonl", '{"id": "p1", "abstract": "fine"}', "[1]")
    with pytest.raises(CorpusError, match=rf"^{re.escape(str(bad))}:2: expected a JSON object, got list$"):
        load_jsonl(bad)
    nul = tmp_path / "nul.jsonl"
    nul.write_bytes(b'{"id": "p1", "abstract": "x"}\n\x00')
    with pytest.raises(CorpusError, match="NUL bytes"):  # the paper loader's own check of the text comes first
        load_jsonl(nul)


def test_questions_keep_a_line_break_character_and_name_a_bad_line(tmp_path):
    from assistant.learning.evalsets import load_questions

    q = {"question": f"Which paper {BREAKS}?", "gold": ["p1"]}
    f = write_lines(tmp_path / "q.jsonl", json.dumps(q, ensure_ascii=False), "", '{"question": "None?", "gold": []}')
    assert [(x["qid"], x["kind"], x["question"]) for x in load_questions(f)] == [
        ("q1", "lookup", q["question"]), ("q3", "none", "None?")]
    bad = write_lines(tmp_path / "bad.jsonl", '{"question": "a", "gold": []}', '{"question": ')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(bad))}:2: invalid JSON \(Expecting value\)$"):
        load_questions(bad)
    fields = write_lines(tmp_path / "fields.jsonl", '{"question": "a"}')
    with pytest.raises(ValueError, match=rf"^{re.escape(str(fields))}:1: expected an object with 'question' and 'gold'$"):
        load_questions(fields)
