"""The CSV loader (a Zotero or spreadsheet export): :func:`load_csv`, through the standard library's ``csv``.

The first row names the columns; ``title`` and ``abstract`` are required, the rest mapped when present, each by
its name ignoring case, spaces and underscores, or a common synonym (:data:`COLUMNS`: Zotero's ``Abstract Note``,
``Publication Year``, ``Author``, ``Publication Title``, ``Url``, ``DOI``, ``Key``). A paper's id is
``<file stem>#<key>`` from a ``Key`` or ``id`` column, else ``<file stem>#<row number>`` (data rows from 1).
UTF-8 with or without a BOM; quoted cells may hold line breaks; the delimiter is the header's commonest of comma,
semicolon and tab. A row without an abstract is counted; a malformed one (another number of cells than the header,
a key used again, a year no year can be, a field over its limit) is named with its line and skipped.
"""

from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from vectorstore.papers.checks import read_text, visible
from vectorstore.papers.fields import as_authors, as_text, as_year, entry_paper
from vectorstore.papers.records import CorpusError, Paper
from vectorstore.papers.selection import Tally

COLUMNS = {
    "title": ("title", "paper title", "article title", "document title"),
    "abstract": ("abstract", "abstract note", "abstractnote", "summary"),
    "authors": ("authors", "author", "author(s)", "creators", "author full names"),
    "year": ("year", "publication year", "pub year"),
    "date": ("date", "publication date", "published"),
    "venue": ("venue", "publication title", "journal", "booktitle", "conference", "source title", "publication"),
    "url": ("url", "link"),
    "doi": ("doi",),
    "id": ("key", "id", "paper id"),
    "categories": ("categories", "category", "subjects"),
}
"""Each field and the column names that give it, in order of preference (compared by :func:`_name`)."""

# An abstract past csv's default cell limit (131,072 characters) would stop the whole file with csv.Error;
# read, it is skipped with its line by the length check like any other.
csv.field_size_limit(16 * 2**20)


def _name(header: str) -> str:
    """A column name compared: ``"Abstract_Note "`` → ``"abstract note"``."""
    return " ".join(header.replace("_", " ").casefold().split())


def _columns(header: list[str], path: Path) -> dict[str, int]:
    """``{field: column index}`` for the fields :data:`COLUMNS` finds in ``header``; CorpusError without
    ``title`` or ``abstract``."""
    names = [_name(h) for h in header]
    found = {}
    for field, synonyms in COLUMNS.items():
        index = next((names.index(s) for s in synonyms if s in names), None)
        if index is not None:
            found[field] = index
    missing = [f for f in ("title", "abstract") if f not in found]
    if missing:
        shown = ", ".join(repr(h) for h in header[:12]) + (", …" if len(header) > 12 else "")
        raise CorpusError(f"{path}: no {' or '.join(repr(m) for m in missing)} column in its first row ({shown}); "
                          "a CSV needs a header with title and abstract columns (Zotero's 'Title' and 'Abstract Note')")
    return found


def _delimiter(text: str) -> str:
    first = text.split("\n", 1)[0]
    return max((",", ";", "\t"), key=first.count)


def load_csv(path: str | Path, tally: Tally | None = None) -> list[Paper]:
    """Papers of a CSV file with a header row, in file order. Rows that give no paper are added to ``tally``
    (without an abstract: counted; malformed: ``<file>:<line>: <reason>``). Raises CorpusError for a file that is
    not UTF-8 text (naming the line), has no title or abstract column, or that ``csv`` cannot read."""
    path = Path(path)
    tally = tally if tally is not None else Tally()
    text = re.sub(r"\r\n?", "\n", read_text(path))  # a Windows export's line breaks, inside quoted cells too
    if not visible(text):
        return []
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text))
    papers: list[Paper] = []
    first_line: dict[str, int] = {}
    try:
        header = next(reader)
        columns = _columns(header, path)
        row_number, line = 0, reader.line_num + 1
        for cells in reader:
            start, line = line, reader.line_num + 1
            if not any(c.strip() for c in cells):
                continue
            row_number += 1
            where = f"{path}:{start}"
            try:
                paper = _row_paper(path, cells, len(header), columns, row_number, where)
            except CorpusError as exc:
                tally.bad(str(exc))
                continue
            if paper is None:
                tally.no_abstract += 1
            elif paper.id in first_line:
                tally.bad(f"{where}: id {paper.id!r} is used again (first on line {first_line[paper.id]}); ids "
                          "must be unique")
            else:
                first_line[paper.id] = start
                papers.append(paper)
    except csv.Error as exc:
        raise CorpusError(f"{path}:{reader.line_num}: not readable as CSV ({exc}); nothing of it was read") from exc
    return papers


def _authors(cell: str) -> list[str]:
    """A CSV's author cell as names: Zotero's ``Smith, John; Doe, Jane`` (split at semicolons), ``A and B``, a
    comma list ``Alice Smith, Bob Jones``, or one ``Rossi, Paolo`` (one comma after a one-word surname)."""
    before, comma, after = cell.partition(",")
    if comma and ";" not in cell and " and " not in cell and "," not in after and len(before.split()) == 1:
        return [cell.strip()] if cell.strip() else []
    return as_authors(cell)


def _row_paper(path: Path, cells: list[str], width: int, columns: dict[str, int], row_number: int,
               where: str) -> Paper | None:
    """The paper of one data row, None when it has no abstract; CorpusError when it is malformed."""
    if len(cells) != width:
        raise CorpusError(f"{where}: {len(cells)} cells, but the header names {width} columns (a quote not closed, "
                          "or a delimiter inside an unquoted cell?)")
    cell = {field: cells[i].strip() for field, i in columns.items()}
    if not visible(cell["abstract"]):
        return None
    date_year = re.match(r"\s*((?:1|2)\d{3})\b", cell.get("date", ""))
    year = as_year(cell.get("year") or (date_year.group(1) if date_year else None), where)
    doi = cell.get("doi", "")
    key = cell.get("id", "")
    categories = [c for c in re.split(r"[\s,;]+", cell.get("categories", "")) if c]
    return entry_paper(f"{path.stem}#{key if visible(key) else row_number}", cell["abstract"], where,
                       title=as_text(cell["title"]), authors=_authors(cell.get("authors", "")), venue=cell.get("venue", ""),
                       year=year, url=cell.get("url") or (f"https://doi.org/{doi}" if doi else ""), source=path.name,
                       categories=categories)
