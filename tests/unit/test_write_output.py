"""An export or map is written all or nothing (vectorstore.paths.write_output): a fourth hostile round filled the
disk during `--export FILE --force`; the old file was emptied first and 8 KiB of the new one left in its place,
with "unexpected OSError"."""

import errno
import os
import stat

import pytest

from vectorstore.paths import write_output


def _full_disk(f):
    f.write(b"half of the new export")
    raise OSError(errno.ENOSPC, "No space left on device")


def test_a_write_that_fails_leaves_the_old_file_and_no_part_file(tmp_path):
    old = tmp_path / "keep.md"
    old.write_bytes(b"ORIGINAL\n")
    with pytest.raises(ValueError) as err:
        write_output(old, _full_disk, "--export")
    assert str(err.value) == (f"{old}: cannot be written (no space left on device): choose another path for "
                              "--export; the file there is unchanged")
    assert old.read_bytes() == b"ORIGINAL\n" and sorted(p.name for p in tmp_path.iterdir()) == ["keep.md"]
    with pytest.raises(ValueError, match="no space left on device"):
        write_output(tmp_path / "new" / "map.png", _full_disk, "--out")
    assert not (tmp_path / "new" / "map.png").exists() and list((tmp_path / "new").iterdir()) == []


def test_a_plain_file_is_replaced_whole_keeping_its_mode_and_anything_else_is_refused_untouched(tmp_path):
    old = tmp_path / "papers.bib"
    old.write_bytes(b"old")
    old.chmod(0o640)
    write_output(old, lambda f: f.write(b"new export"))
    assert old.read_bytes() == b"new export" and stat.S_IMODE(old.stat().st_mode) == 0o640
    write_output(tmp_path / "sub" / "fresh.md", lambda f: f.write(b"x"))
    assert (tmp_path / "sub" / "fresh.md").read_bytes() == b"x"
    target, link, fifo = tmp_path / "target.md", tmp_path / "link.md", tmp_path / "pipe.md"
    target.write_bytes(b"elsewhere")
    link.symlink_to(target)
    os.mkfifo(fifo)
    for path in (link, fifo, tmp_path / "sub"):
        with pytest.raises(ValueError, match="is not a plain file"):
            write_output(path, lambda f: f.write(b"x"))
    assert target.read_bytes() == b"elsewhere" and link.is_symlink() and stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_the_part_file_a_killed_writer_left_is_removed_by_the_next_write(tmp_path):
    """A hostile round: a kill -9 during an export left ``.out.md.….part`` beside the file for good. The next write
    to that file removes it; a running writer's (this process's) is left alone."""
    import subprocess
    import sys

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f".out.md.{dead.stdout.strip()}-abc123.part"
    running = tmp_path / f".out.md.{os.getpid()}-def456.part"
    other = tmp_path / ".other.md.1-x.part"
    for part in (stale, running, other):
        part.write_bytes(b"half")
    write_output(tmp_path / "out.md", lambda f: f.write(b"new\n"))
    assert (tmp_path / "out.md").read_bytes() == b"new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["out.md", running.name, other.name])


def test_an_export_under_a_link_loop_is_named_as_a_link_not_a_file(tmp_path):
    """A hostile round: `--export loop/a.md`, loop a symbolic link to itself, said "loop is a file, not a folder"."""
    from vectorstore.paths import creation_problem

    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    assert creation_problem(loop / "a.md", "--export") == (
        f"{loop / 'a.md'}: {loop} is a symbolic link that leads to no folder (a loop, or to nothing), so nothing can "
        "be created under it: choose a path in a folder for --export")
    (tmp_path / "file").write_text("x")
    assert "file is a file, not a folder" in creation_problem(tmp_path / "file" / "a.md", "--export")
