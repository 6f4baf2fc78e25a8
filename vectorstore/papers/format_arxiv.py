"""The arXiv metadata snapshot loader (Kaggle's ``arxiv-metadata-oai-snapshot.json``: one JSON object a line, about
4 GB): :func:`iter_arxiv`, which streams the file a line at a time and never holds it whole.

A ``.json`` or ``.jsonl`` file is read as a snapshot when its first record has the fields of :data:`ARXIV_FIELDS`
(:func:`is_arxiv_file`). Each record is a paper: id ``arxiv:<id>``, title and abstract (LaTeX accents as Unicode,
line breaks as spaces: :mod:`vectorstore.papers.latex`), authors (from ``authors_parsed`` when present), year of
the first version (else of ``update_date``), link ``https://arxiv.org/abs/<id>``, categories (``cs.LG stat.ML`` →
``["cs.LG", "stat.ML"]``). A :class:`~vectorstore.papers.selection.Selection` is applied while reading, on the
record's ``categories`` and ``update_date``, before anything else is made of it. A record without an abstract is
counted; a malformed one (not JSON, not an object, no id, an id used again, a field over its limit) is named with
its line and skipped, and the rest of the file is read.
"""

from __future__ import annotations

import json
import re
from collections.abc import Container, Iterator
from pathlib import Path

from vectorstore.papers.checks import open_regular, visible
from vectorstore.papers.fields import as_text, as_year, entry_paper, one_line
from vectorstore.papers.latex import accents
from vectorstore.papers.records import CorpusError, Paper
from vectorstore.papers.selection import Selection, Tally

ARXIV_FIELDS = frozenset({"id", "title", "abstract", "authors", "categories", "update_date"})
"""The fields whose presence in a file's first record makes it an arXiv snapshot."""
ID_PREFIX = "arxiv:"
FIRST_LINE_BYTES = 1 << 20
"""How much of a file is read to find its first record (a snapshot record is about 2 KB)."""
MAX_LINE_BYTES = 4 * 2**20
"""Longest snapshot line read, in bytes (a record is about 2 KB; its abstract may have 50,000 characters, its
authors 1,000 names). A longer line is named as malformed and passed over in pieces, never held whole: a file of
one endless line (its line breaks lost) costs no more memory than a record (hostile round #35, F4)."""


def is_arxiv_file(path: Path) -> bool:
    """True when the first non-blank line of ``path`` is a JSON object with every field of :data:`ARXIV_FIELDS`;
    False for any other file, or one that cannot be read (its loader then says why)."""
    try:
        with open_regular(path) as f:  # a FIFO is no snapshot, and waiting for its writer would hang
            for _ in range(1000):
                line = f.readline(FIRST_LINE_BYTES)
                if not line:
                    return False
                if line.strip():
                    record = json.loads(line.decode("utf-8-sig"))
                    return isinstance(record, dict) and ARXIV_FIELDS <= record.keys()
    except (OSError, ValueError, RecursionError):
        return False
    return False


def iter_arxiv(path: str | Path, tally: Tally | None = None, selection: Selection | None = None,
               known: Container[str] = frozenset()) -> Iterator[Paper]:
    """The papers of an arXiv snapshot file, in file order, read a line at a time. Records that give no paper are
    added to ``tally``: left out by ``selection`` (and, when their id is in ``known``, to ``tally.passed_over``),
    without an abstract (counted), malformed (``<file>:<line>: <reason>``; a line over :data:`MAX_LINE_BYTES`
    too). Raises OSError when the file cannot be opened, CorpusError when it is no regular file."""
    path = Path(path)
    tally = tally if tally is not None else Tally()
    seen: dict[str, int] = {}
    with open_regular(path) as f:
        for lineno, raw in enumerate(_lines(f), 1):
            where = f"{path}:{lineno}"
            if raw is None:
                tally.bad(f"{where}: a line of over {MAX_LINE_BYTES // 2**20} MiB, no record (line breaks lost?)")
                continue
            if not raw.strip():
                continue
            rec = _record(raw, where, tally, first=lineno == 1)
            if rec is None:
                continue
            pid = ID_PREFIX + rec["id"].strip()
            if selection is not None and selection.active() and not selection.admits(
                    str(rec.get("categories") or "").split(), str(rec.get("update_date") or "")):
                tally.left_out += 1
                if pid in known:
                    tally.passed_over.add(pid)
                continue
            if not isinstance(rec.get("abstract"), str) or not visible(rec["abstract"]):
                tally.no_abstract += 1
            elif pid in seen:
                tally.bad(f"{where}: id {rec['id']!r} is used again (first on line {seen[pid]}); ids must be unique")
            else:
                try:
                    paper = _paper(rec, pid, path, where)
                except CorpusError as exc:
                    tally.bad(str(exc))
                    continue
                seen[pid] = lineno
                yield paper


def _lines(f, limit: int = MAX_LINE_BYTES) -> Iterator[bytes | None]:
    """The lines of the binary file ``f`` (with their line break), None for one over ``limit`` bytes, whose rest
    is read and dropped a MiB at a time."""
    while line := f.readline(limit + 1):
        if len(line) <= limit or line.endswith(b"\n"):
            yield line
            continue
        while (rest := f.readline(2**20)) and not rest.endswith(b"\n"):
            pass
        yield None


def _record(raw: bytes, where: str, tally: Tally, first: bool) -> dict | None:
    """One line's record, or None after naming in ``tally`` why it is none."""
    try:
        rec = json.loads(raw.rstrip(b"\r\n").decode("utf-8-sig" if first else "utf-8"))
    except UnicodeDecodeError as exc:
        tally.bad(f"{where}: invalid UTF-8 at byte {exc.start} of the line")
        return None
    except (ValueError, RecursionError) as exc:
        why = exc.msg if isinstance(exc, json.JSONDecodeError) else "nested too deeply"
        tally.bad(f"{where}: invalid JSON ({why}; a line cut short?)")
        return None
    if not isinstance(rec, dict):
        tally.bad(f"{where}: expected a JSON object, got {type(rec).__name__}")
        return None
    if not isinstance(rec.get("id"), str) or not visible(rec["id"]):
        tally.bad(f"{where}: record has no 'id' string (an arXiv id such as \"2401.01234\")")
        return None
    return rec


def _authors(rec: dict) -> list[str]:
    """``authors_parsed`` (``[[last, first, suffix], …]``) as "First Last" names, else the ``authors`` text split
    at its commas and "and"; LaTeX accents as Unicode."""
    parsed = rec.get("authors_parsed")
    if isinstance(parsed, list) and parsed and all(isinstance(a, list) for a in parsed):
        names = [" ".join(str(x).strip() for x in (a[1:2] + a[:1] + a[2:3]) if x and str(x).strip()) for a in parsed]
    else:
        names = re.split(r",\s*|\s+and\s+", as_text(rec.get("authors")))
    return [n for n in (one_line(x) for x in accents("\n".join(names)).split("\n")) if n]


def _paper(rec: dict, pid: str, path: Path, where: str) -> Paper:
    versions = rec.get("versions")
    created = versions[0].get("created", "") if isinstance(versions, list) and versions and \
        isinstance(versions[0], dict) else ""
    year = re.search(r"\b(?:19|20)\d{2}\b", str(created or "")) or re.match(r"\d{4}", str(rec.get("update_date") or ""))
    categories = str(rec.get("categories") or "").split()
    return entry_paper(pid, one_line(accents(rec["abstract"])), where, title=one_line(accents(as_text(rec.get("title")))),
                       authors=_authors(rec), year=as_year(year.group(0) if year else None, where),
                       url=f"https://arxiv.org/abs/{rec['id'].strip()}", source=path.name, categories=categories)
