"""Cheap looks at Chroma's SQLite database, the age of the database against the vector files, and the
writer's lock file; and the remedies a damaged-index error ends with (:func:`rebuild`: the database is damaged;
:func:`repair`: only the vector files are).

Each finds damage that Chroma reports late or not at all and says what it found naming the file
(None: nothing); the caller raises a line ending with the remedy. Nothing is deleted or repaired here."""

from __future__ import annotations

import os
import stat
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


def repair(directory: Path) -> str:
    """The remedy for vector files that disagree with a sound database (the words such an error ends with):
    the database holds every committed paper, so nothing needs deleting."""
    return (f"run `paper-assistant doctor --index {directory}` to rebuild it from the papers the index stores "
            "(`paper-assistant ingest` does it too; the paper files are not read)")


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
        st = db.stat()
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            # A FIFO there: opening it waited for a writer, forever, in every command (a tenth hostile round).
            return "it is no plain file (a FIFO, socket or device)"
        size = st.st_size
        with open(db, "rb") as fh:
            head = fh.read(100)
    except FileNotFoundError:  # no index yet (Chroma creates it), unless its HNSW folders remain: deleted
        held = db.parent.is_dir() and any((d / "header.bin").is_file() for d in db.parent.iterdir() if d.is_dir())
        return MISSING if held else None
    except IsADirectoryError:  # Chroma said "unable to open database file (code 14)": no remedy
        return "it is a folder, not SQLite's file"
    except NotADirectoryError:  # Chroma said "File exists (os error 17)"
        return f"{db.parent} is a file, not the folder that holds it"
    except PermissionError:
        raise
    except OSError as exc:  # a link looped to itself: "unexpected OSError: [Errno 40]" (an eleventh hostile round)
        return f"it cannot be reached ({(exc.strerror or type(exc).__name__).lower()})"
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


MISSING = "missing, while its HNSW folders remain"


def database_problem(directory: Path) -> str | None:
    """The one-line error for a damaged ``<directory>/chroma/chroma.sqlite3`` (:func:`database_damage`,
    :func:`settled`), or None. Chroma would stop with "file is not a database" or "database disk image
    is malformed" and no remedy, and read an emptied file as "no index yet"."""
    odd = odd_companion(directory / "chroma")
    if odd:
        return odd
    why = settled(lambda: database_damage(directory / "chroma" / "chroma.sqlite3"))
    return database_damaged(directory, why) if why else None


def no_plain_file(path: Path) -> str | None:
    """How ``path`` is no plain file (after links): a FIFO, socket or device, or a link that leads nowhere (a loop, or
    a missing target); None for a plain file, a folder or nothing there. Reading such a path waits forever (a FIFO)
    or fails with the system's own words (an eleventh hostile round)."""
    try:
        os.lstat(path)
    except OSError:
        return None  # nothing there
    try:
        mode = os.stat(path).st_mode
    except PermissionError:
        return None  # opening says how
    except OSError:
        return "a symbolic link that leads nowhere (a loop, or a missing target)"
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else "no plain file (a FIFO, socket or device)"


COMPANIONS = ("chroma.sqlite3-journal", "chroma.sqlite3-wal", "chroma.sqlite3-shm")
"""SQLite's files beside the database (and :data:`WRITTEN`, the index's): each must be a plain file when there."""


def odd_companion(root: Path) -> str | None:
    """The one-line error for a file of :data:`COMPANIONS` (or :data:`WRITTEN`) in ``root`` (an index's ``chroma/``) that is there but is
    no plain file: SQLite opened a FIFO journal and waited forever, in every command (an eleventh hostile round).
    Such a file holds nothing of the index: removing it is the remedy."""
    for name in (*COMPANIONS, WRITTEN):
        why = no_plain_file(root / name)
        if why:
            return (f"{root / name} is {why}, where the index keeps a plain file: remove it (it holds nothing of the "
                    "index) and run the command again")
    return None


def database_damaged(directory: Path, why: str) -> str:
    """The one-line error for a damaged ``chroma.sqlite3`` in ``directory``; ``why`` says how."""
    if why == MISSING:  # Chroma would start an empty database and say "no index yet"
        return (f"the index database {directory / 'chroma' / 'chroma.sqlite3'} is missing (deleted?) while the "
                f"index's vector folders remain beside it, so the index cannot be read: {rebuild(directory)}")
    return (f"the index database {directory / 'chroma' / 'chroma.sqlite3'} is damaged ({why}), so the index "
            f"cannot be read: {rebuild(directory)}")


SQLITE_CORRUPT = ("database disk image is malformed", "file is not a database")
"""SQLite's own words for a damaged database (codes 11 and 26), as Chroma passes them on."""


# --- the database's age -----------------------------------------------------------------------------
WRITTEN = "written.json"
"""Beside ``chroma.sqlite3``: the chunks collection's id and generation at the last completed write
(:meth:`vectorstore.store.chunk_store.ChunkStore.bump_generation`). The HNSW files carry no generation of their own,
so a database older than they are (a ``chroma.sqlite3`` restored from a backup, the folder kept) is
told by its generation being below the recorded one; doctor said ok and searches returned wrong papers."""


def record_generation(root: Path, collection: str, generation: int) -> None:
    """Record a completed write in ``<root>/written.json`` (``root``: an index's ``chroma/``); best effort
    (a read-only or full disk leaves the older record, which never gives a false alarm)."""
    import json
    import os

    tmp = root / f".{WRITTEN}.{os.getpid()}"
    try:
        tmp.write_text(json.dumps({"collection": collection, "generation": generation}))
        os.replace(tmp, root / WRITTEN)
    except OSError:
        tmp.unlink(missing_ok=True)


def older_database(directory: Path, collection: str, generation: Callable[[bool], int]) -> str | None:
    """The one-line error when the database of the index in ``directory`` (its chunks collection
    ``collection``, whose generation ``generation(fresh)`` reads, afresh when ``fresh``) is older than the
    last write recorded beside it (:func:`record_generation`), or None. Another collection id (made anew)
    or no record: not judged; a higher generation is a write under way, or one killed before its record.
    A generation read before a writer's last bump is read again after the record (written after that bump)."""
    import json

    then = None
    for fresh in (False, True):
        if no_plain_file(directory / "chroma" / WRITTEN):  # named by database_problem; a FIFO read would wait
            return None
        try:
            if (directory / "chroma" / WRITTEN).stat().st_size > 4096:  # a record is ~100 bytes: not one of ours
                return None
            rec = json.loads((directory / "chroma" / WRITTEN).read_text())
            then = int(rec["generation"]) if rec.get("collection") == collection else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):  # "[" * 10**6: 13th round
            return None
        if then is None or generation(fresh) >= then:
            return None
    return (f"the index database {directory / 'chroma' / 'chroma.sqlite3'} is older than the index's vector files "
            f"(its last write is not in it: an older copy restored?), so search would return "
            f"wrong papers: {repair(directory)}")


# --- the writer's lock file -------------------------------------------------------------------------
def lock_file_problem(directory: Path) -> str | None:
    """Why ``<directory>/ingest.lock`` cannot serve as the writer's lock file (a folder, a symbolic link,
    a pipe…: the lock library would raise IsADirectoryError or the like), or None (absent or a file)."""
    path = directory / "ingest.lock"
    if path.is_symlink():  # whatever it points to: the lock library never follows one (O_NOFOLLOW: ELOOP)
        try:
            target = f" to {path.readlink()}"
        except OSError:
            target = ""
        what = f"a symbolic link{target}" if path.exists() else f"a broken symbolic link{target}"
    elif path.is_file() or not path.exists():
        return None
    else:
        what = "a folder" if path.is_dir() else "not a regular file"
    return (f"the writer's lock {path} is {what}, so no ingest can run: remove or rename it (it holds no index "
            "data; the lock file is made anew), then run the command again")
