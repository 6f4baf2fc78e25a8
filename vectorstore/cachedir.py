"""Caches kept beside an index (the BM25 index, the exact-search matrix), written all-or-nothing."""

from __future__ import annotations

import shutil
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
    shutil.rmtree(folder, ignore_errors=True)
    tmp.rename(folder)
