"""Cheap looks at a local index's own files: Chroma's SQLite database, the HNSW files of its collections
and the writer's lock file, made when the index is opened or its lock taken.

Each finds damage that Chroma reports late, as a raw SQLite error, or not at all (a search that fails or
silently misses papers, a crash on the lock), and says what it found naming the file (None: nothing); the
caller raises a line ending with the remedy as :class:`~vectorstore.store.StoreError` (exit 2). Only file sizes,
``stat`` and headers (100 bytes each) are read, never a vector: well under a millisecond on any index.
Nothing is deleted or repaired here: the user decides. Imports nothing of the package (``store`` and
``index`` both call in).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

SQLITE_MAGIC = b"SQLite format 3\x00"
SETTLE_S = 0.25
"""Seconds to wait before looking again at a file that seems cut short: a writer in another process
(an ingest) writes a header before the data it counts, so a reader may catch the two out of step for a
few milliseconds. Damage is reported only when the second look agrees."""


def rebuild(directory: Path) -> str:
    """The remedy for an index whose files are damaged (the words every such error ends with)."""
    return f"delete {directory} and run `paper-assistant ingest` again (the paper files are not touched)"


def settled(look: Callable[[], str | None]) -> str | None:
    """``look()``, and if it finds a problem, its second opinion after :data:`SETTLE_S` (see there)."""
    if look() is None:
        return None
    time.sleep(SETTLE_S)
    return look()


# --- Chroma's SQLite database ---------------------------------------------------------------------
def database_damage(db: Path) -> str | None:
    """Why the SQLite file ``db`` cannot be a sound Chroma database, or None (sound, absent, or being
    written). Judged from its size and its 100-byte header: an empty file while HNSW folders remain
    beside it, a file not starting with SQLite's magic (overwritten), or one shorter than its header's
    page count times page size (truncated). A hot journal or WAL beside it (a crash, or a writer
    mid-commit) is SQLite's to resolve: not judged."""
    try:
        size = db.stat().st_size
        with open(db, "rb") as fh:
            head = fh.read(100)
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None  # no index yet: Chroma creates it (a folder there fails in Chroma, with its own line)
    if size == 0:
        return "empty, while its HNSW folders remain" if any(p.is_dir() for p in db.parent.iterdir()) else None
    if not head.startswith(SQLITE_MAGIC):
        return "its first bytes are not an SQLite header: overwritten"
    if len(head) < 100:
        return f"cut short to {size:,} bytes"
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    # The page count is valid only while the header's "version-valid-for" equals its change counter.
    if not pages or head[92:96] != head[24:28] or size >= pages * page_size:
        return None
    if any(Path(f"{db}{suffix}").exists() for suffix in ("-journal", "-wal")):
        return None
    return f"cut short: {size:,} of its {pages * page_size:,} bytes"


def database_problem(directory: Path) -> str | None:
    """The one-line error for a damaged ``<directory>/chroma/chroma.sqlite3`` (:func:`database_damage`,
    :func:`settled`), or None. Chroma would stop with "file is not a database" or "database disk image
    is malformed" and no remedy, and read an emptied file as "no index yet"."""
    why = settled(lambda: database_damage(directory / "chroma" / "chroma.sqlite3"))
    return database_damaged(directory, why) if why else None


def database_damaged(directory: Path, why: str) -> str:
    """The one-line error for a damaged ``chroma.sqlite3`` in ``directory``; ``why`` says how."""
    return (f"the index database {directory / 'chroma' / 'chroma.sqlite3'} is damaged ({why}), so the index "
            f"cannot be read: {rebuild(directory)}")


SQLITE_CORRUPT = ("database disk image is malformed", "file is not a database")
"""SQLite's own words for a damaged database (codes 11 and 26), as Chroma passes them on."""


# --- the HNSW files ---------------------------------------------------------------------------------
HEADER = 100
"""Size of a Chroma 1.x HNSW ``header.bin`` (version 1): the version (int32), then hnswlib's fields as
little-endian size_t: offsetLevel0, max_elements, cur_element_count (byte 20), size_data_per_element
(byte 28), …"""


def hnsw_damage(folder: Path, header: bytes) -> str | None:
    """How a segment's HNSW files are cut short, or None: hnswlib reads ``data_level0.bin`` (each vector
    with its level-0 links, ``size_data_per_element`` bytes), ``length.bin`` (4 bytes a vector) and
    ``link_lists.bin`` (at least 4 bytes a vector) for every vector its header counts, and fills what a
    short file lacks with whatever memory held: search then fails ("Error finding id") or returns wrong
    chunks. The files are preallocated past that count, so a cut into the unused tail harms nothing
    and is not reported. ``header``: the folder's ``header.bin`` (:data:`HEADER` bytes)."""
    count = int.from_bytes(header[20:28], "little")
    per_vector = int.from_bytes(header[28:36], "little")
    if not count:
        return None  # nothing counted (or the folder gone: check_vector_files counts what it lacks)
    for name, need in (("data_level0.bin", count * per_vector), ("length.bin", 4 * count),
                       ("link_lists.bin", 4 * count)):
        try:
            size = (folder / name).stat().st_size
        except FileNotFoundError:
            size = None
        if size is None:
            return f"{folder / name} is missing (its header counts {count} vectors)"
        if size < need:
            return f"{folder / name} is cut short ({size:,} of the {need:,} bytes its {count} vectors need)"
    return None


def hnsw_problem(folder: Path) -> str | None:
    """:func:`hnsw_damage` of a segment folder as it is now (its header read afresh), judged :func:`settled`."""
    def look() -> str | None:
        try:
            header = (folder / "header.bin").read_bytes()
        except FileNotFoundError:
            return None  # the folder gone: the record count of check_vector_files finds that
        if len(header) != HEADER:  # hnswlib reads past a short header into whatever memory holds: a crash
            return f"{folder / 'header.bin'} is {len(header):,} bytes, not {HEADER}"
        return hnsw_damage(folder, header)

    return settled(look)


def foreign_folders(root: Path) -> list[str]:
    """HNSW folders under ``root`` (an index's ``chroma/``) that its database names no segment for:
    what is left when ``chroma.sqlite3`` was replaced by another index's (every question then answers
    from that index's papers, and doctor said ok). [] when the database cannot be read."""
    import re
    import sqlite3
    from contextlib import closing

    try:
        with closing(sqlite3.connect(f"file:{root / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            known = {r[0] for r in db.execute("SELECT id FROM segments")}
    except sqlite3.Error:
        return []
    uuid = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    return sorted(d.name for d in root.iterdir() if d.is_dir() and uuid.fullmatch(d.name) and d.name not in known
                  and (d / "header.bin").is_file())


# --- the writer's lock file -------------------------------------------------------------------------
def lock_file_problem(directory: Path) -> str | None:
    """Why ``<directory>/ingest.lock`` cannot serve as the writer's lock file (a folder, a broken link,
    a pipe…: the lock library would raise IsADirectoryError or the like), or None (absent or a file)."""
    path = directory / "ingest.lock"
    if path.is_file() or not (path.exists() or path.is_symlink()):
        return None
    what = ("a folder" if path.is_dir() else "a broken link" if path.is_symlink() and not path.exists()
            else "not a regular file")
    return (f"the writer's lock {path} is {what}, so no ingest can run: remove or rename it (it holds no index "
            "data; the lock file is made anew), then run the command again")
