"""Cheap looks at a local index's own files: Chroma's SQLite database, the HNSW files of its collections
and the writer's lock file, made when the index is opened or its lock taken.

Each finds damage that Chroma reports late, as a raw SQLite error, or not at all (a search that fails or
silently misses papers, a crash on the lock), and says what it found naming the file (None: nothing); the
caller raises a line ending with the remedy as :class:`~vectorstore.store.StoreError` (exit 2). On open, file
sizes, ``stat``, headers (100 bytes each), every record of ``data_level0.bin`` and ``length.bin`` and a
sample of the link lists are read, from the files alone before Chroma loads them (about 15 ms at 40,000
chunks once the files are cached); ``doctor`` reads every link list too (a few ms more).
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
    except FileNotFoundError:  # no index yet (Chroma creates it), unless its HNSW folders remain: deleted
        held = db.parent.is_dir() and any((d / "header.bin").is_file() for d in db.parent.iterdir() if d.is_dir())
        return MISSING if held else None
    except (IsADirectoryError, NotADirectoryError):
        return None  # a folder there fails in Chroma, with its own line
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
    why = settled(lambda: database_damage(directory / "chroma" / "chroma.sqlite3"))
    return database_damaged(directory, why) if why else None


def database_damaged(directory: Path, why: str) -> str:
    """The one-line error for a damaged ``chroma.sqlite3`` in ``directory``; ``why`` says how."""
    if why == MISSING:  # Chroma would start an empty database and say "no index yet"
        return (f"the index database {directory / 'chroma' / 'chroma.sqlite3'} is missing (deleted?) while the "
                f"index's vector folders remain beside it, so the index cannot be read: {rebuild(directory)}")
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
    if count > int.from_bytes(header[12:20], "little") or per_vector > 2**20:  # more vectors than it has room for
        return f"{folder / 'header.bin'} holds values no HNSW index has (overwritten?)"
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


SAMPLE = 256
"""Link lists of ``link_lists.bin`` looked at on open (the first ones, and the walk to the entry point's);
``doctor`` looks at all of them. Every record of ``data_level0.bin`` is looked at in both."""


def hnsw_content_damage(folder: Path, header: bytes, full: bool = False) -> str | None:
    """How a segment's HNSW files of the right sizes hold what no hnswlib wrote (random bytes written over
    them), or None. hnswlib follows the links it reads without a check: a link count past the layer's
    maximum or a link to no vector crashes the process (a segfault: exit 139, no word said) or returns
    wrong chunks. Looked at: the header's own fields; in ``data_level0.bin``, for every vector (on open
    too: about 12 ms at 40,000 chunks, and hnswlib reads the whole file right after), the link count and
    its flags, each link, the label and the vector's floats; in ``link_lists.bin`` (a size, then that many
    bytes of upper-layer links, per vector), the sizes and links of the first :data:`SAMPLE` vectors' lists
    and the entry point's (all when ``full``); and that ``length.bin`` holds positive norms. Call after :func:`hnsw_damage` (the sizes) found nothing."""
    import numpy as np

    field = [int.from_bytes(header[4 + 8 * k: 12 + 8 * k], "little") for k in range(6)]
    _, _, count, per, label_at, data_at = field
    top, entry = int.from_bytes(header[52:56], "little", signed=True), int.from_bytes(header[56:60], "little")
    max_m, max_m0 = (int.from_bytes(header[k: k + 8], "little") for k in (60, 68))
    if not count:
        return None
    dim = (label_at - data_at) // 4
    if not (0 < max_m <= max_m0 <= 4096 and data_at == 4 + 4 * max_m0 and label_at + 8 == per and dim > 0
            and 0 <= top < 64 and entry < count):
        return f"{folder / 'header.bin'} holds values no HNSW index has (overwritten?)"
    # A vector's record: its link count (uint16), deleted mark (a byte), a spare byte, its links, its floats, its label.
    record = np.dtype([("n", "<u2"), ("deleted", "u1"), ("spare", "u1"), ("links", "<u4", (max_m0,)),
                       ("vec", "<f4", (dim,)), ("label", "<u8")])
    if record.itemsize != per:
        return f"{folder / 'header.bin'} holds values no HNSW index has (overwritten?)"
    data = np.memmap(folder / "data_level0.bin", dtype=record, mode="r", shape=(count,))
    for start in range(0, count, 65536):  # every record, on open too: hnswlib loads them all next anyway
        block = data[start: start + 65536]
        used = np.arange(max_m0)[None, :] < np.minimum(block["n"], max_m0)[:, None]
        if ((block["n"] > max_m0).any() or (block["deleted"] > 1).any() or block["spare"].any()
                or (block["links"][used] >= count).any() or (block["label"] >= 2**40).any()
                or not np.isfinite(block["vec"]).all()):
            return f"{folder / 'data_level0.bin'} holds links or vectors no HNSW index has (overwritten?)"
    norms = np.fromfile(folder / "length.bin", dtype="<f4", count=count)
    if not (np.isfinite(norms).all() and (norms > 0).all()):
        return f"{folder / 'length.bin'} holds norms no vector has (overwritten?)"
    return _link_lists_damage(folder / "link_lists.bin", count, max_m, top, entry, None if full else SAMPLE)


def _link_lists_damage(path: Path, count: int, max_m: int, top: int, entry: int, limit: int | None) -> str | None:
    """:func:`hnsw_content_damage` of ``link_lists.bin``: per vector a uint32 size (its upper layers times
    ``4 + 4 * max_m`` bytes, at most ``top`` layers), then each layer's link count (≤ ``max_m``) and links
    (< ``count``). The first ``limit`` vectors' lists (all when None), and always the walk to the entry
    point ``entry``, whose list must hold all ``top`` upper layers: hnswlib starts every search there, and
    a list emptied (zeros written over the file) sends it to no memory at all (a segfault). Every size is
    a multiple of 4, so the walk reads the file as uint32 words."""
    import numpy as np

    raw = path.read_bytes()
    words = np.frombuffer(raw, "<u4", len(raw) // 4)
    per_layer, at, blocks = 4 + 4 * max_m, 0, []
    damaged = f"{path} holds link lists no HNSW index has (overwritten?)"
    walk = count if limit is None else min(count, max(limit, entry + 1))
    sizes = words.tolist() if walk > 64 else None  # a Python list: a quick walk (about 10 ms at 100,000 vectors)
    for k in range(walk):
        if at >= len(words):
            return damaged
        size = sizes[at] if sizes is not None else int(words[at])
        if size:  # most vectors live on the bottom layer only: size 0
            if size % per_layer or size > top * per_layer or 4 * (at + 1) + size > len(raw):
                return damaged
            if limit is None or k < limit or k == entry:
                blocks.append(words[at + 1: at + 1 + size // 4])
        if k == entry and size != top * per_layer:
            return damaged
        at += 1 + size // 4
    if blocks:
        layers = np.concatenate(blocks).reshape(-1, 1 + max_m)
        n_links = layers[:, 0] & 0xFFFF
        if (n_links > max_m).any() or (layers[:, 1:][np.arange(max_m)[None, :] < n_links[:, None]] >= count).any():
            return damaged
    return None


def hnsw_problem(folder: Path, full: bool = False) -> str | None:
    """:func:`hnsw_damage` of a segment folder as it is now (its header read afresh), then
    :func:`hnsw_content_damage` (``full``: every vector), judged :func:`settled`."""
    def look() -> str | None:
        try:
            header = (folder / "header.bin").read_bytes()
        except FileNotFoundError:
            return None  # the folder gone: the record count of check_vector_files finds that
        if len(header) != HEADER:  # hnswlib reads past a short header into whatever memory holds: a crash
            return f"{folder / 'header.bin'} is {len(header):,} bytes, not {HEADER}"
        try:
            return hnsw_damage(folder, header) or hnsw_content_damage(folder, header, full)
        except (FileNotFoundError, ValueError):
            return None  # replaced mid-look by a writer: the second look judges

    return settled(look)


def vector_segments(root: Path) -> list[Path] | None:
    """The HNSW folders of the vector segments the database ``<root>/chroma.sqlite3`` names (``root``: an
    index's ``chroma/``), read-only, without Chroma; None when the database cannot be read (Chroma then
    says so itself)."""
    import sqlite3
    from contextlib import closing

    if not (root / "chroma.sqlite3").is_file():
        return None
    try:
        with closing(sqlite3.connect(f"file:{root / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            return [root / str(r[0]) for r in db.execute("SELECT id FROM segments WHERE scope = 'VECTOR' ORDER BY id")]
    except sqlite3.Error:
        return None


def vector_files_problem(directory: Path, full: bool = False) -> str | None:
    """The one-line error for damaged HNSW files of the local index in ``directory`` (:func:`hnsw_problem`
    of every vector segment its database names; ``full``: every record, else a sample), or None. Read from
    the files alone: run it before any Chroma call that can load a vector segment (opening a collection,
    ``count``, ``get``, ``query``), since hnswlib loading damaged files crashes the process (a segfault:
    exit 139, no word said)."""
    for folder in vector_segments(directory / "chroma") or []:
        if (folder / "header.bin").is_file():
            why = hnsw_problem(folder, full)
            if why:
                return (f"the vector index at {directory} is damaged: {why}, so search would fail or return "
                        f"wrong papers: {rebuild(directory)}")
    return None


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


# --- the database's age -----------------------------------------------------------------------------
WRITTEN = "written.json"
"""Beside ``chroma.sqlite3``: the chunks collection's id and generation at the last completed write
(:meth:`vectorstore.chunk_store.ChunkStore.bump_generation`). The HNSW files carry no generation of their own,
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
        try:
            rec = json.loads((directory / "chroma" / WRITTEN).read_text())
            then = int(rec["generation"]) if rec.get("collection") == collection else None
        except (OSError, ValueError, TypeError, KeyError, AttributeError):
            return None
        if then is None or generation(fresh) >= then:
            return None
    return (f"the index database {directory / 'chroma' / 'chroma.sqlite3'} is older than the index's vector files "
            f"(its last write is not in it: an older copy restored?), so search would return "
            f"wrong papers: {rebuild(directory)}")


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
