"""What every paper loader checks of a file's text: that it is UTF-8 (:func:`read_text`), that a field
holds something one can see (:func:`visible`), and that an abstract is no longer than
:data:`MAX_ABSTRACT_CHARS` (:func:`check_length`). Each failure raises :class:`~vectorstore.papers.records.CorpusError`
naming the file (and line or abstract).
"""

from __future__ import annotations

import re
from pathlib import Path

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


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (a BOM is dropped). Raises CorpusError on invalid bytes, and on NUL
    bytes (UTF-16 text or a binary file decodes as "valid" UTF-8 full of NULs)."""
    data = path.read_bytes()
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
