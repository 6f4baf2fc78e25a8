"""Cheap looks at the HNSW files of an index's vector segments, read from the files alone before Chroma
loads them (a damaged file crashes hnswlib: a segfault). On open, file sizes, headers (100 bytes each),
every record of ``data_level0.bin`` and ``length.bin`` and a sample of the link lists are read (about
15 ms at 40,000 chunks once the files are cached); ``doctor`` reads every link list too."""

from __future__ import annotations

import os
from pathlib import Path

from vectorstore.integrity.database import repair, settled


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
"""Link lists of ``link_lists.bin`` whose links are looked at on open (the first ones, and the entry point's; every list's size is walked);
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
    a multiple of 4, so the walk reads the file as uint32 words; every vector's size is walked, so a file cut
    short anywhere is found."""
    import numpy as np

    raw = path.read_bytes()
    words = np.frombuffer(raw, "<u4", len(raw) // 4)
    per_layer, at, blocks = 4 + 4 * max_m, 0, []
    damaged = f"{path} holds link lists no HNSW index has (overwritten?)"
    # Every list's size is walked, on open too (about 10 ms at 100,000 vectors): a file cut past the lists
    # looked at was read by hnswlib as whatever memory held (a third hostile round: half the file cut, ask
    # answered as if nothing were wrong). Only the first ``limit`` lists' links are looked at.
    walk = count
    sizes = words.tolist() if walk > 64 else None  # a Python list: a quick walk
    for k in range(walk):
        if at >= len(words):
            return f"{path} is cut short (its link lists end before its {count:,} vectors' do)"
        size = sizes[at] if sizes is not None else int(words[at])
        if size:  # most vectors live on the bottom layer only: size 0
            if size % per_layer or size > top * per_layer:
                return damaged
            if 4 * (at + 1) + size > len(raw):
                return f"{path} is cut short (its link lists end before its {count:,} vectors' do)"
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


def _id_map(folder: Path) -> tuple[dict | None, str | None]:
    """``(the segment's index_metadata.pickle as read, why it cannot be read)``; ``(None, None)`` when it is not
    written yet. Read with no class allowed (``find_class`` refuses), so a pickle written by anyone else runs no
    code; the whole file must be one pickle of a dict (a cut one has no end)."""
    import io
    import pickle

    class DataOnly(pickle.Unpickler):
        def find_class(self, module: str, name: str):
            raise pickle.UnpicklingError(f"a class ({module}.{name}), which no index metadata holds")

    path = folder / "index_metadata.pickle"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, None
    stream = io.BytesIO(raw)
    try:
        value = DataOnly(stream).load()
    except Exception as exc:  # noqa: BLE001 - any failure to read it is damage (EOFError, UnpicklingError, …)
        return None, f"{path} cannot be read ({type(exc).__name__}: {str(exc)[:80] or 'cut short'})"
    if stream.tell() != len(raw) or not isinstance(value, dict):
        return None, f"{path} holds more than one index's metadata, or none (overwritten?)"
    return value, None


ID_SAMPLE = 8
"""Ids of a segment's id map looked up in its collection's records (:func:`id_map_problem`)."""


def id_map_problem(folder: Path, root: Path | None = None) -> str | None:
    """Why the id map (``index_metadata.pickle``) of the vector segment ``folder`` cannot be used, or None, from
    one read of it (:func:`_id_map`): it cannot be read (Chroma's reader stopped every command on it, "Error
    deserializing pickle file"), or, given ``root`` (the index's ``chroma/``), it is not its collection's: none
    of :data:`ID_SAMPLE` of its ids is a record of that collection. Two segments' maps swapped (each readable)
    made doctor fail with Chroma's "Error finding id" and "delete the index", while the stored papers could
    rebuild it (a third hostile round, #35). A sound map may hold ids deleted since it was written (records go
    at once, the map at the next sync), never only such ids: one id found is enough. None, too, while the map
    is not written yet."""
    import sqlite3
    from contextlib import closing

    value, why = _id_map(folder)
    if why or root is None:
        return why
    mapped = list((value or {}).get("id_to_label") or {})
    ids = mapped[:: max(1, len(mapped) // ID_SAMPLE)][:ID_SAMPLE]  # spread over the map: a remove takes a file's run
    if len(ids) < ID_SAMPLE or not all(isinstance(i, str) for i in ids):
        return None
    records = ("SELECT COUNT(*) FROM embeddings e JOIN segments m ON e.segment_id = m.id JOIN segments v "
               "ON v.collection = m.collection WHERE v.id = ? AND m.scope = 'METADATA'")
    try:
        with closing(sqlite3.connect(f"file:{root / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            found = db.execute(f"{records} AND e.embedding_id IN ({', '.join('?' * len(ids))})",
                               (folder.name, *ids)).fetchone()[0]
            # A collection emptied by `remove` keeps its old map (a fourth hostile round read that as damage).
            found = found or not db.execute(records, (folder.name,)).fetchone()[0]
    except sqlite3.Error:
        return None  # the database's own check names that
    if found:
        return None
    return (f"{folder / 'index_metadata.pickle'} maps ids none of which is a record of its collection (swapped "
            "with another segment's, or copied from another index?)")


HNSW_FILES = ("header.bin", "data_level0.bin", "length.bin", "link_lists.bin", "index_metadata.pickle")


def _special_file(folder: Path) -> str | None:
    """How the first of a segment folder's files that is there is no plain file (a FIFO, a link looped or leading
    nowhere, a folder), else None."""
    from vectorstore.integrity.database import no_plain_file

    for name in HNSW_FILES:
        why = no_plain_file(folder / name) or ("a folder" if (folder / name).is_dir() else None)
        if why:
            return f"{folder / name} is {why}"
    return None


def hnsw_problem(folder: Path, full: bool = False, root: Path | None = None) -> str | None:
    """:func:`hnsw_damage` of a segment folder as it is now (its header read afresh), then
    :func:`hnsw_content_damage` (``full``: every vector) and :func:`id_map_problem` (``root``: the index's
    ``chroma/``, to match the id map to its collection), judged :func:`settled`."""
    def look() -> str | None:
        odd = _special_file(folder)
        if odd:  # a FIFO there: every read of it waits for a writer, forever (a tenth hostile round's sqlite FIFO)
            return odd
        try:
            header = (folder / "header.bin").read_bytes()
        except FileNotFoundError:
            return None  # the folder gone: the record count of check_vector_files finds that
        if len(header) != HEADER:  # hnswlib reads past a short header into whatever memory holds: a crash
            return f"{folder / 'header.bin'} is {len(header):,} bytes, not {HEADER}"
        try:
            return (hnsw_damage(folder, header) or hnsw_content_damage(folder, header, full)
                    or id_map_problem(folder, root))
        except (FileNotFoundError, ValueError):
            return None  # replaced mid-look by a writer: the second look judges

    return settled(look)


def vector_segments(root: Path) -> list[Path] | None:
    """The HNSW folders of the vector segments the database ``<root>/chroma.sqlite3`` names (``root``: an
    index's ``chroma/``), read-only, without Chroma; None when the database cannot be read (Chroma then
    says so itself)."""
    import sqlite3
    from contextlib import closing

    from vectorstore.integrity.database import odd_companion

    if not (root / "chroma.sqlite3").is_file() or odd_companion(root):  # SQLite would open a FIFO journal and wait
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
        # A segment whose header.bin is gone while its other files remain is damage to rebuild, not an index to
        # delete (every command said "delete the index", the papers all intact: an eleventh hostile round).
        lost = settled(lambda f=folder: f"{f / 'header.bin'} is missing" if not os.path.lexists(f / "header.bin") and any(
            (f / n).exists() for n in HNSW_FILES[1:4]) else None)  # looked at twice: a writer may be mid-save
        from vectorstore.integrity.database import no_plain_file

        looped = no_plain_file(folder)  # the folder itself a link to nowhere: rebuilt, not "delete" (a 13th round)
        if looped or (folder / "header.bin").is_file() or _special_file(folder) or lost:
            why = f"{folder} is {looped}" if looped else lost or hnsw_problem(folder, full, directory / "chroma")
            if why:
                return (f"the vector index at {directory} is damaged: {why}, so search would fail or return "
                        f"wrong papers: {repair(directory)}")
    return None


def own_folders_missing(root: Path, foreign: list[str] | None = None) -> bool:
    """True when the :func:`foreign_folders` of ``root`` (an index's ``chroma/``; ``foreign`` when already read) look
    like another index's: one
    holds more vectors than any vector folder its database names (or it names none with vectors); False when
    they look like stray copies the index does not use (a sixth hostile round: doctor said to delete a sound index
    for one) or the database cannot be read."""
    import sqlite3
    from contextlib import closing

    def vectors(folder: Path) -> int:
        try:
            return int.from_bytes((folder / "header.bin").read_bytes()[20:28], "little")  # cur_element_count
        except OSError:
            return -1

    try:
        with closing(sqlite3.connect(f"file:{root / 'chroma.sqlite3'}?mode=ro", uri=True)) as db:
            own = [r[0] for r in db.execute("SELECT id FROM segments WHERE scope = 'VECTOR'")]
    except sqlite3.Error:
        return False
    # Opening the index makes its own folders, so their presence tells nothing: a stray copy holds no more vectors
    # than the index's own folders, another index's folders (the database swapped) usually far more.
    most = max((vectors(root / seg) for seg in own), default=-1)
    foreign = foreign_folders(root) if foreign is None else foreign
    return most <= 0 or any(vectors(root / name) > most for name in foreign)  # 0: cannot tell


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
