"""The JSONL paper loader: :func:`load_jsonl` and the checks of each record's fields.

Format: one object per line with ``id`` and ``abstract`` (required) and optionally ``title``,
``authors`` (list or string), ``year``, ``venue``, ``url``. Every problem is a
:class:`~vectorstore.papers.records.CorpusError` naming the file and line.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pydantic import ValidationError

from vectorstore.jsonl import JsonlError, iter_jsonl
from vectorstore.papers.checks import check_length, read_text, visible
from vectorstore.papers.fields import as_authors as _as_authors, as_text as _as_text, as_year as _as_year
from vectorstore.papers.fields import check_id as _check_id, check_metadata as _check_metadata
from vectorstore.papers.records import CorpusError, Paper, derive_label


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
        _check_id(key, f"{path}:{lineno}")
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
