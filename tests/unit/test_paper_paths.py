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
