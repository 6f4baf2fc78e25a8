"""The fields of a paper record, shared by the loaders: authors, text, year and their limits (:func:`as_authors`,
:func:`as_text`, :func:`as_year`, :func:`check_metadata`), and one entry's fields made a checked
:class:`~vectorstore.papers.records.Paper` (:func:`entry_paper`). Each problem is a
:class:`~vectorstore.papers.records.CorpusError` naming where the entry is (``<file>:<line>``)."""

from __future__ import annotations

import math
import re

from pydantic import ValidationError

from vectorstore.papers.checks import check_length, visible
from vectorstore.papers.records import CorpusError, Paper, derive_label


def as_authors(value) -> list[str]:
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


def as_text(value) -> str:
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


def as_year(value, where: str) -> int | None:
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


def check_metadata(title: str, venue: str, url: str, authors: list[str], where: str) -> None:
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


MAX_CATEGORIES, MAX_CATEGORY_CHARS = 100, 100
MAX_BIBTEX_FIELDS, MAX_BIBTEX_CHARS = 200, 10_000
"""Limits of an entry's categories and of the BibTeX fields kept for its export: far above a real entry's (a
Zotero note pasted into a field is a few thousand characters), so that one broken export is named, not stored."""


def check_extras(categories: list[str], bibtex: dict[str, str], where: str) -> None:
    """CorpusError naming ``where`` for categories or BibTeX fields over :data:`MAX_CATEGORIES`,
    :data:`MAX_BIBTEX_FIELDS` and their lengths, or holding a lone UTF-16 surrogate."""
    if len(categories) > MAX_CATEGORIES or any(len(c) > MAX_CATEGORY_CHARS for c in categories):
        raise CorpusError(f"{where}: 'categories' lists {len(categories):,} entries or one over "
                          f"{MAX_CATEGORY_CHARS} characters; the limit is {MAX_CATEGORIES}")
    if len(bibtex) > MAX_BIBTEX_FIELDS:
        raise CorpusError(f"{where}: {len(bibtex):,} fields; the limit is {MAX_BIBTEX_FIELDS}")
    for key, value in bibtex.items():
        if len(value) > MAX_BIBTEX_CHARS:
            raise CorpusError(f"{where}: field '{key}' is {len(value):,} characters long; the limit is "
                              f"{MAX_BIBTEX_CHARS:,}")


_SURROGATE = re.compile("[\ud800-\udfff]")  # no valid text: it would fail the hash of the whole ingest


def one_line(text: str) -> str:
    """``text`` with every run of whitespace (line breaks of a wrapped BibTeX value or arXiv abstract) one space."""
    return " ".join(text.split())


def entry_paper(pid: str, abstract: str, where: str, *, title: str = "", authors: list[str] | None = None,
                venue: str = "", year: int | None = None, url: str = "", source: str = "",
                categories: list[str] | None = None, bibtex: dict[str, str] | None = None) -> Paper:
    """One entry of a BibTeX, CSV or arXiv file as a checked Paper (``abstract`` stripped; the label derived).

    Raises CorpusError naming ``where`` (``<file>:<line>``) for an abstract over ``MAX_ABSTRACT_CHARS``,
    metadata over its limits (:func:`check_metadata`, :func:`check_extras`), or a value that is no valid text.
    """
    authors, categories, bibtex = authors or [], categories or [], bibtex or {}
    abstract = abstract.strip()
    if any(_SURROGATE.search(v) for v in (abstract, *categories, *bibtex.values())):
        raise CorpusError(f"{where}: holds an invalid character (a lone UTF-16 surrogate such as \\udc80); fix the entry")
    check_length(abstract, f"{where}: abstract", listing=False)
    check_metadata(title, venue, url, authors, where)
    check_extras(categories, bibtex, where)
    if not visible(pid):
        raise CorpusError(f"{where}: entry has no id")
    check_id(pid.strip(), where)
    try:
        return Paper(id=pid, text=abstract, title=title, label=title or derive_label(abstract), authors=authors,
                     venue=venue, year=year, url=url, source=source, categories=categories, bibtex=bibtex)
    except ValidationError as exc:  # e.g. a lone surrogate that is no valid text
        raise CorpusError(f"{where}: invalid entry ({exc.errors()[0].get('msg', 'invalid')})") from exc


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def check_id(pid: str, where: str) -> None:
    """Raise CorpusError naming ``where`` when the paper id ``pid`` holds a line break or other control character:
    ids are shown on one line in every answer, list and export (a JSONL id holding ``\n`` split its citation over
    two lines, a hostile round)."""
    if _CONTROL.search(pid):
        raise CorpusError(f"{where}: id {pid!r} holds a line break or other control character; give it an id on "
                          "one line")
