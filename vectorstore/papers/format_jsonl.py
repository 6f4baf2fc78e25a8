"""The JSONL paper loader: :func:`load_jsonl` and the checks of each record's fields.

Format: one object per line with ``id`` and ``abstract`` (required) and optionally ``title``,
``authors`` (list or string), ``year``, ``venue``, ``url``. Every problem is a
:class:`~vectorstore.papers.records.CorpusError` naming the file and line.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from vectorstore.jsonl import JsonlError, iter_jsonl
from vectorstore.papers.checks import check_length, read_text, visible
from vectorstore.papers.records import CorpusError, Paper, derive_label


def _as_authors(value) -> list[str]:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return []
    if isinstance(value, str):
        # "A and B" and "A; B" keep "Last, First" names whole; only a plain list splits on commas.
        sep = r"\s+and\s+" if re.search(r"\s+and\s+", value) else ";" if ";" in value else ","
        return [a.strip() for a in re.split(sep, value) if a.strip()]
    if isinstance(value, list):
        out = []
        for a in value:
            if a is None or (isinstance(a, float) and not math.isfinite(a)):
                continue
            if isinstance(a, dict):
                a = a.get("name") or " ".join(str(v) for v in a.values() if v)
            out.append(str(a).strip())
        return [a for a in out if a]
    return [str(value)]


def _as_text(value) -> str:
    """A metadata string: strings and numbers as text, ``{"name": ...}`` as its name; other nested values ""."""
    if isinstance(value, dict):
        value = value.get("name")
    if isinstance(value, float) and not math.isfinite(value):
        return ""  # a spreadsheet's empty cell exported as NaN is no title "nan"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip()
    return ""


MIN_YEAR, MAX_YEAR = 1000, 2100
"""Publication years a record may give. A year outside them (1e30, 2**63, Infinity: typing slips or
broken exports) is refused at load, since the store cannot hold one past 64 bits and a filter on it
would be meaningless."""


def _as_year(value, where: str) -> int | None:
    """A record's year as an int, or None when it gives none (null, "", or text such as "n/a").
    Raises CorpusError for a number that is no plausible year."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None  # "n/a", "forthcoming": no year
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if not (MIN_YEAR <= value <= MAX_YEAR):  # inf fails here, NaN too (every comparison is False)
        raise CorpusError(f"{where}: 'year' {value!r} is not a plausible year (expected {MIN_YEAR}–{MAX_YEAR})")
    return int(value)


MAX_FIELD_CHARS = {"title": 1_000, "venue": 500, "url": 2_000}
MAX_AUTHORS, MAX_AUTHOR_CHARS = 1_000, 300
"""Limits of a record's metadata: far above any real paper's, so that one broken export (a 2 MB
title, 100,000 authors) is refused naming its line instead of making every answer and MCP reply
that shows the paper megabytes long."""


def _check_metadata(title: str, venue: str, url: str, authors: list[str], where: str) -> None:
    for name, value in (("title", title), ("venue", venue), ("url", url), ("authors", " ".join(authors))):
        if any("\ud800" <= ch <= "\udfff" for ch in value):  # a lone surrogate: no valid text, and it
            # would fail the whole ingest when the record is hashed
            raise CorpusError(f"{where}: '{name}' holds an invalid character (a lone UTF-16 surrogate such as "
                              "\\udc80); fix the record")
    for name, value in (("title", title), ("venue", venue), ("url", url)):
        if len(value) > MAX_FIELD_CHARS[name]:
            raise CorpusError(f"{where}: '{name}' is {len(value):,} characters long; the limit is "
                              f"{MAX_FIELD_CHARS[name]:,}")
    if len(authors) > MAX_AUTHORS:
        raise CorpusError(f"{where}: 'authors' lists {len(authors):,} names; the limit is {MAX_AUTHORS:,}")
    longest = max(authors, key=len, default="")
    if len(longest) > MAX_AUTHOR_CHARS:
        raise CorpusError(f"{where}: an author name is {len(longest):,} characters long; the limit is "
                          f"{MAX_AUTHOR_CHARS:,}")


def load_jsonl(path: str | Path) -> list[Paper]:
    """Papers of a JSONL file of ``{id, title, abstract, authors, year, venue, url}`` records.

    ``abstract`` may also be called ``text``. Missing optional fields get defaults; ``authors`` may be
    a list (of strings or ``{"name": ...}`` objects), a string or null; nested extra fields are ignored.
    Raises CorpusError naming the line for invalid JSON, a missing id, an id used twice in the file,
    a missing/empty abstract, a year outside ``MIN_YEAR``–``MAX_YEAR``, or metadata over
    ``MAX_FIELD_CHARS`` / ``MAX_AUTHORS``.
    """
    path = Path(path)
    papers = []
    first_line: dict[str, int] = {}
    for lineno, rec in _jsonl_records(path):
        abstract = rec.get("abstract") or rec.get("text")
        if not isinstance(abstract, str) or not visible(abstract):
            raise CorpusError(f"{path}:{lineno}: record has no 'abstract' text")
        check_length(abstract.strip(), f"{path}:{lineno}: abstract", listing=False)
        pid = rec.get("id")
        if isinstance(pid, (dict, list, bool)):
            raise CorpusError(f"{path}:{lineno}: record 'id' must be a string or a number")
        if pid is None or not visible(str(pid)):
            raise CorpusError(f"{path}:{lineno}: record has no 'id'")
        year = _as_year(rec.get("year"), f"{path}:{lineno}")
        title = _as_text(rec.get("title"))
        key = str(pid).strip()
        if key in first_line:
            raise CorpusError(f"{path}:{lineno}: id {key!r} is used again (first on line {first_line[key]}); "
                              "ids must be unique")
        first_line[key] = lineno
        try:
            papers.append(_jsonl_paper(rec, pid, abstract, title, year, path, f"{path}:{lineno}"))
        except ValidationError as exc:  # e.g. a lone surrogate (\ud800) that is no valid text
            raise CorpusError(f"{path}:{lineno}: invalid record ({exc.errors()[0].get('msg', 'invalid')})") from exc
    return papers


def _jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """:func:`vectorstore.jsonl.iter_jsonl` over the checked text of ``path``, raising CorpusError."""
    try:
        yield from iter_jsonl(path, read_text(path))
    except JsonlError as exc:
        raise CorpusError(str(exc)) from exc


def _jsonl_paper(rec: dict, pid, abstract: str, title: str, year, path: Path, where: str = "") -> Paper:
    authors, venue, url = _as_authors(rec.get("authors")), _as_text(rec.get("venue")), _as_text(rec.get("url"))
    _check_metadata(title, venue, url, authors, where or str(path))
    return Paper(
        id=str(pid).strip(), text=abstract.strip(), title=title, label=title or derive_label(abstract),
        authors=authors, venue=venue, year=year, url=url, source=path.name,
    )
