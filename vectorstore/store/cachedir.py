"""Caches kept beside an index (the BM25 index, the exact-search matrix), written all-or-nothing."""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def replace_folder(folder: Path) -> Iterator[Path]:
    """Yield an empty temp folder beside ``folder``; on success it replaces ``folder``.

    A reader never sees half a write: the files appear by one rename. On an error the temp folder is
    left for the next write to clear, and ``folder`` keeps its old contents. Raises OSError.
    """
    tmp = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    yield tmp
    try:
        mode = os.lstat(folder).st_mode
    except FileNotFoundError:
        mode = None
    if mode is not None and not stat.S_ISDIR(mode):
        folder.unlink()  # a file, a link or a FIFO where the cache folder belongs (rmtree leaves it: rename failed)
    else:
        try:  # its own error (permission denied), not the rename's "Directory not empty" (a fourth hostile round)
            shutil.rmtree(folder)
        except FileNotFoundError:
            pass
    tmp.rename(folder)


def not_a_file(folder: Path) -> str | None:
    """The first entry under ``folder`` that is not a plain file or folder (a symbolic link, a FIFO, a
    device, a socket), named relative to ``folder``; None when there is none or ``folder`` is missing.

    Checked before a cache is read: a cache file swapped for a link to /dev/zero was read until the
    kernel killed the process for memory, and a FIFO blocked every question forever. Nothing here
    follows a link or opens a file (``lstat`` only)."""
    try:
        top = os.lstat(folder)
    except FileNotFoundError:
        return None
    if not stat.S_ISDIR(top.st_mode):
        return "."
    for root, dirs, files in os.walk(folder):  # os.walk never descends into a linked folder
        for name in dirs + files:
            mode = os.lstat(os.path.join(root, name)).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return os.path.relpath(os.path.join(root, name), folder)
    return None


def cannot_write(folder: Path) -> str | None:
    """Why this user cannot replace the cache ``folder`` (``"permission denied"``…), or None: a probe file is
    made and removed in it (or beside it, when it is missing), and each of its entries must be listable.
    A cache that cannot be written is rebuilt in memory by every process, so nothing may promise that the
    next question rebuilds it on disk (hostile round #35, low 8)."""
    import tempfile

    try:
        if folder.is_dir():
            for _ in os.scandir(folder):
                pass
        with tempfile.NamedTemporaryFile(dir=folder if folder.is_dir() else folder.parent, prefix=".probe-"):
            pass
    except PermissionError:
        return "permission denied"
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return None
