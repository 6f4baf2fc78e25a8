"""A path that is not a paper file is named as what it is (hostile round #35, low 6: a FIFO, a link to
/dev/zero and a symbolic link loop were all "no such file or folder")."""

import os

import pytest

from vectorstore.papers import KINDS, CorpusError, iter_paper_files


def _error(path) -> str:
    with pytest.raises(CorpusError) as exc:
        list(iter_paper_files([path]))
    return str(exc.value)


def test_each_kind_of_non_file_is_named(tmp_path):
    fifo, zero, loop, dangling = tmp_path / "a.txt", tmp_path / "z.jsonl", tmp_path / "l.txt", tmp_path / "d.txt"
    os.mkfifo(fifo)
    zero.symlink_to("/dev/zero")
    loop.symlink_to(loop)
    dangling.symlink_to(tmp_path / "gone.txt")
    assert _error(fifo) == f"{fifo}: not a regular file (a FIFO, socket or device): give a paper file (" + KINDS + ")"
    assert _error(zero) == f"{zero}: not a regular file (a FIFO, socket or device): give a paper file (" + KINDS + ")"
    assert _error(loop) == f"{loop}: a symbolic link that leads nowhere (dangling, or a loop): point it at a paper file"
    assert _error(dangling).startswith(f"{dangling}: a symbolic link that leads nowhere")
    assert _error(tmp_path / "nope.txt") == f"{tmp_path / 'nope.txt'}: no such file or folder"


def test_a_file_name_with_a_line_break_is_skipped_and_shown_escaped(tmp_path):
    """A newline in a file name reached the papers' ids and forged lines in the one-line errors (a third hostile
    round): such a file is skipped with its name escaped, and the rest read."""
    evil = tmp_path / "evil\nerror: forged.txt"
    evil.write_text("ICML 2026\n\nWe propose FooNet.\n")
    (tmp_path / "good.txt").write_text("ICML 2026\n\nWe propose BarNet.\n")
    skipped: list[str] = []
    assert [f.name for f in iter_paper_files([tmp_path], skipped)] == ["good.txt"]
    assert skipped == [f"{tmp_path}/evil\\nerror: forged.txt: its name holds a line break or other control "
                       "character: rename the file"]
    assert "\n" not in _error(evil) and _error(evil).endswith("forged.txt: its name holds a line break or other "
                                                               "control character: rename the file")
    assert "\n" not in _error(tmp_path / "gone\n.txt")


def test_an_entry_this_user_may_not_stat_is_skipped_and_the_folder_read(tmp_path, monkeypatch):
    """Fifth hostile round: as a user who may not search /root, a link `rl.jsonl -> /root/x.jsonl` inside an
    ingested folder made `is_file()` raise: "unexpected PermissionError", exit 2, nothing ingested. (The tests run
    as root, who may stat anything, so the refusal is made where the system would make it.)"""
    (tmp_path / "good.txt").write_text("ICML 2026\n\nWe propose BarNet.\n")
    denied = tmp_path / "rl.jsonl"
    denied.symlink_to("/root/x.jsonl")
    real_stat = os.stat

    def stat(path, *args, **kwargs):
        if str(path) == str(denied) and kwargs.get("follow_symlinks", True):
            raise PermissionError(13, "Permission denied", str(path))
        return real_stat(path, *args, **kwargs)

    monkeypatch.setattr(os, "stat", stat)
    skipped: list[str] = []
    assert [f.name for f in iter_paper_files([tmp_path], skipped)] == ["good.txt"]
    assert skipped == [f"{denied}: cannot be read (permission denied on it or on where it links): skipped; give this "
                       "user access to it"]


def test_ingest_of_a_path_that_is_not_there_creates_no_index(tmp_path):
    """A tenth hostile round: `ingest nope.jsonl --index NEW` said "no such file or folder" (exit 2) and left an empty
    index at NEW."""
    import subprocess
    import sys

    from tests.conftest import ROOT

    got = subprocess.run([sys.executable, "-m", "assistant", "ingest", str(tmp_path / "nope.jsonl"), "--index",
                          str(tmp_path / "new")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (got.returncode, got.stderr) == (2, f"error: {tmp_path / 'nope.jsonl'}: no such file or folder\n")
    assert not (tmp_path / "new").exists()


def test_a_first_line_of_40000_characters_is_refused_as_no_heading(tmp_path):
    """A thirteenth hostile round: the heading's venue regexes are quadratic; a 40,000-character first line took 63 s
    and one of 20 MB never ended. A line far past a heading's 200 characters is not parsed."""
    from vectorstore.papers import load_paper_list
    from vectorstore.papers.format_txt import parse_heading

    assert parse_heading("ICML 2026") == ("ICML", 2026)
    assert parse_heading("a" * 100_000) == ("a" * 100_000, None)
    (tmp_path / "long.txt").write_text("a" * 40_000 + " 2026\n\nWe propose LongNet.\n")
    with pytest.raises(CorpusError, match="the first line looks like an abstract, not a heading"):
        load_paper_list(tmp_path / "long.txt")
