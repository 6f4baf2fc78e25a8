"""Several question files for `train` and `eval --cv` (assistant.learning.evalsets.load_question_files): read in
order, each question tagged with its file, a qid taken by an earlier file made unique; the CV prints a
line per file (assistant.learning.evalsets.file_lines)."""

import json

import pytest

from assistant.learning.evalsets import file_lines, load_question_files


def _write(path, *qs):
    path.write_text("".join(json.dumps(q) + "\n" for q in qs), encoding="utf-8")
    return path


def test_several_files_are_read_in_order_and_each_question_is_tagged_with_its_file(tmp_path):
    a = _write(tmp_path / "train.jsonl", {"qid": "c1", "kind": "concept", "question": "Which paper?", "gold": ["p1"]},
               {"qid": "n1", "kind": "none", "question": "Nothing?", "gold": []})
    b = _write(tmp_path / "written.jsonl", {"qid": "c1", "kind": "concept", "question": "Another?", "gold": ["p2"]},
               {"qid": "w2", "question": "Absent?", "gold": []})
    qs = load_question_files([a, b])
    assert [(q["qid"], q["source"], q["kind"]) for q in qs] == [
        ("c1", "train.jsonl", "concept"), ("n1", "train.jsonl", "none"),
        ("written:c1", "written.jsonl", "concept"), ("w2", "written.jsonl", "none")]
    assert len({q["qid"] for q in qs}) == len(qs)  # folds and simulated copies key on qids
    one = load_question_files(a)  # the single-file form still works (a path, not a list)
    assert [q["qid"] for q in one] == ["c1", "n1"] and {q["source"] for q in one} == {"train.jsonl"}
    assert load_question_files([a]) == one


def test_a_missing_or_empty_file_among_several_is_named(tmp_path):
    a = _write(tmp_path / "a.jsonl", {"question": "Which?", "gold": ["p1"]})
    with pytest.raises(FileNotFoundError, match="nope.jsonl"):
        load_question_files([a, tmp_path / "nope.jsonl"])
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="no questions"):
        load_question_files([a, empty])


def test_the_cv_prints_one_line_per_file():
    b = {"index": "written.jsonl", "answerable": 90, "none": 60, "answerable_abstained": 0.1,
         "none_abstained": 0.5, "none_flagged": 0.75}
    assert file_lines([b], "  ") == ["  per question file (whole index):", "    written.jsonl: answerable (90) 10.0% refused; 'none' (60) 50% refused, "
                                     "75% at least flagged"]
    assert file_lines([]) == []


def test_a_question_file_that_is_no_regular_file_or_too_large_is_refused_unread(tmp_path):
    """A FIFO was "no such question file" (and read, it would block); a 200 MiB file was read whole."""
    import os

    import pytest

    from assistant.learning.evalsets import MAX_QUESTION_BYTES, load_questions

    fifo, big = tmp_path / "q.fifo", tmp_path / "big.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ValueError, match=r"q\.fifo: not a regular file \(a FIFO, socket or device\)"):
        load_questions(fifo)
    with big.open("wb") as f:
        f.truncate(MAX_QUESTION_BYTES + 1)  # sparse: nothing is written, and nothing may be read
    with pytest.raises(ValueError, match=r"big\.jsonl: 32\.0 MiB, over the 32 MiB a question file may have"):
        load_questions(big)
    with pytest.raises(ValueError, match="cannot be read as a question file"):
        load_questions(tmp_path)
    with pytest.raises(FileNotFoundError, match="no such question file"):
        load_questions(tmp_path / "nope.jsonl")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"question": "caf\xe9?", "gold": []}\n')
    with pytest.raises(ValueError, match=r"latin1\.jsonl: invalid UTF-8 at byte 17"):
        load_questions(tmp_path / "latin1.jsonl")


def test_a_gold_that_is_no_list_of_ids_is_refused_naming_the_line(tmp_path):
    """A fourth hostile round: `"gold": "notalist"` was scored as the gold ids n, o, t, a, l, i, s."""
    from assistant.learning.evalsets import load_questions

    f = _write(tmp_path / "q.jsonl", {"question": "Which paper?", "gold": ["p1"]}, {"question": "Bad?", "gold": "p1"})
    with pytest.raises(ValueError, match=r"q\.jsonl:2: 'question' must be a string and 'gold' a list of paper ids"):
        load_questions(f)


@pytest.mark.parametrize("bad, why", [({"qid": {"a": 1}}, "'qid' must be a string"), ({"qid": ["x"]}, "'qid' must be"),
                                      ({"question": "  "}, "the question is empty"),
                                      ({"kind": {"x": 1}}, "'kind' must be a string"),
                                      ({"evidence": {"a": 1}}, "'evidence' must be a string"),
                                      ({"question": "why " * 1001}, "the question is 4,003 characters long; the limit "
                                                                    "is 4,000")])
def test_a_bad_qid_or_an_empty_question_is_refused_naming_the_line(tmp_path, bad, why):
    """Fifth hostile round: a dict qid ended eval with "unexpected TypeError: unhashable type"; an empty question
    gave an error naming no file or line."""
    from assistant.learning.evalsets import load_questions

    f = _write(tmp_path / "q.jsonl", {"question": "Which paper?", "gold": ["p1"]},
               {"question": "Which other?", "gold": ["p2"], **bad})
    with pytest.raises(ValueError, match=rf"q\.jsonl:2: {why}"):
        load_questions(f)
