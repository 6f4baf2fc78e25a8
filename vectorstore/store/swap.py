"""The swap of a rebuilt local index into place (:func:`vectorstore.ingest.rebuild_vectors` builds it in
``<index>/rebuild.tmp/``): two renames, ``chroma/`` → ``chroma.damaged/`` then ``rebuild.tmp/chroma/`` →
``chroma/``. A process killed between them leaves no ``chroma/``; every open of a local index first calls
:func:`finish_swap` (:func:`vectorstore.store.client.make_client`), which completes it, so no open ever takes
the missing folder for "no index yet"."""

from __future__ import annotations

import shutil
from pathlib import Path

TMP = "rebuild.tmp"
"""Beside ``chroma/``: where a rebuild writes the new index."""
OLD = "chroma.damaged"
"""Beside ``chroma/``: the damaged index, moved away, deleted once the rebuilt one is in place."""
DONE = "complete"
"""Written in ``rebuild.tmp/`` once the rebuilt database is closed: only then may it be swapped in."""


def finish_swap(directory: Path, clean: bool = False) -> bool:
    """Complete a rebuild killed between its two renames (no ``chroma/``, the rebuilt one complete beside it);
    True when it did. ``clean`` (only under the writer's lock: a rebuild may be under way otherwise): also
    delete what a finished or abandoned rebuild left."""
    tmp = directory / TMP
    finished = False
    if not (directory / "chroma").exists() and (tmp / DONE).is_file() and (tmp / "chroma").is_dir():
        try:
            (tmp / "chroma").rename(directory / "chroma")
            finished = True
        except OSError:  # another process completed it in the meantime
            pass
    if clean and (directory / "chroma").exists():
        remove_tree(directory / OLD)
        remove_tree(tmp)
    return finished


def remove_tree(path: Path) -> None:
    """Remove the folder ``path`` and all in it; a link (or a file) put in its place is removed itself, never followed:
    a ``rebuild.tmp`` linked to another index had that index written into, and its database moved into this one (a
    thirteenth hostile round); ``rmtree`` refuses a link, and the error was ignored. Failures are ignored, as before."""
    import os

    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        try:
            os.unlink(path)
        except OSError:
            pass
        return
    shutil.rmtree(path, ignore_errors=True)
