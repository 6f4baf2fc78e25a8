"""What every paper loader checks of a file's text: that it is a regular file of at most :data:`MAX_FILE_BYTES`
and UTF-8 (:func:`read_text`, :func:`open_regular`), that a field holds something one can see (:func:`visible`),
and that an abstract is no longer than :data:`MAX_ABSTRACT_CHARS` (:func:`check_length`). Each failure raises
:class:`~vectorstore.papers.records.CorpusError` naming the file (and line or abstract).
"""

from __future__ import annotations

import errno
import os
import re
import stat
from pathlib import Path
from typing import BinaryIO

from vectorstore.papers.records import CorpusError


MAX_ABSTRACT_CHARS = 50_000
"""Longest abstract accepted (real ones are under 5,000 characters). A longer one is almost always
a paper list whose blank lines were lost, or a full text pasted in; its file is skipped with a
one-line reason instead of flooding the index and every answer that retrieves it."""


def check_length(text: str, where: str, listing: bool = True) -> None:
    """CorpusError for an abstract over :data:`MAX_ABSTRACT_CHARS`; the hint fits the file's format
    (``listing``: a .txt paper list, whose abstracts blank lines separate; else a JSONL record)."""
    if len(text) > MAX_ABSTRACT_CHARS:
        hint = ("are the abstracts separated by blank lines?" if listing
                else "is a full text, or several abstracts, in this record's abstract field?")
        raise CorpusError(f"{where} is {len(text):,} characters long; the limit is {MAX_ABSTRACT_CHARS:,} ({hint})")


MAX_FILE_BYTES = 128 * 2**20
"""Largest paper file read whole (.txt, .jsonl, .bib, .csv), in bytes: about 85,000 JSONL papers of 1.5 KB. Its
reading takes up to 20 times its size in memory (a .txt list: bytes, text, lines, blocks, papers), so a larger
file is refused by its size before a byte is read (hostile round #35, F4: a 65 MB list took 1.3 GB before its
length check refused it). arXiv snapshot lines are read a line at a time and have no such limit."""


def open_regular(path: Path) -> BinaryIO:
    """``path`` opened for binary reading, refused unless it is a regular file: a FIFO (opened without waiting for a
    writer, so it never hangs), socket or device raises CorpusError, a folder IsADirectoryError; other OSErrors
    (permissions, a name too long) as ``open``. Checked on the opened file, so a file swapped meanwhile is seen."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    f = os.fdopen(fd, "rb")
    mode = os.fstat(fd).st_mode
    if stat.S_ISREG(mode):
        return f
    f.close()
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", str(path))
    raise CorpusError(f"{path}: not a regular file (a FIFO, socket or device): skipped; give a paper file")


def read_bytes(path: Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), refused with CorpusError by its size when over
    ``limit`` bytes (default :data:`MAX_FILE_BYTES`) before any is read; at most ``limit`` + 1 bytes are ever read
    (a file growing meanwhile is refused as well)."""
    limit = MAX_FILE_BYTES if limit is None else limit
    with open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        data = f.read(limit + 1) if size <= limit else b""
    if size > limit or len(data) > limit:
        raise CorpusError(f"{path}: {max(size, len(data)) / 2**20:,.1f} MiB, over the {limit / 2**20:,.0f} MiB a "
                          f"paper file read whole may have (.txt, .jsonl, .bib, .csv): skipped unread, its indexed "
                          "papers are kept; split it into smaller files")
    return data


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (a BOM is dropped), read by :func:`read_bytes` (a regular file of at most
    :data:`MAX_FILE_BYTES`). Raises CorpusError on invalid bytes, and on NUL bytes in 1 % of the bytes or more
    (UTF-16 text or a binary file decodes as "valid" UTF-8 full of NULs). Rarer NULs (a stray one in a CSV
    cell skipped the whole file, a third hostile round) are read as spaces."""
    data = read_bytes(path)
    if b"\x00" in data and data.count(b"\x00") * 100 < len(data):
        data = data.replace(b"\x00", b" ")
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise CorpusError(f"{path}: NUL bytes (line {line}): not UTF-8 text (UTF-16 or binary?); re-save the "
                          "file as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CorpusError(f"{path}: invalid UTF-8 at byte {exc.start} (line {line}); re-save the file as UTF-8") from exc


INVISIBLE_CHARS = "\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
"""A regex class body: characters that take no space (zero-width space, non-joiner and joiner, word joiner,
BOM, soft hyphen, direction marks and embeddings); whitespace aside, a line of only these looks blank."""
_INVISIBLE = re.compile(rf"[\s{INVISIBLE_CHARS}]+")


def visible(text: str) -> bool:
    """True when ``text`` holds a character one can see: whitespace, zero-width characters, no-break
    spaces and BOMs alone are no abstract, title or id (a list "emptied" to them must not replace its
    papers with one invisible paper)."""
    return bool(_INVISIBLE.sub("", text))
