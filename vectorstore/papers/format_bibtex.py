"""The BibTeX loader (a Zotero, Mendeley or JabRef export): :func:`load_bibtex`, through bibtexparser.

Each entry (``@article``, ``@inproceedings``, ``@misc``, any type) with an ``abstract`` is a paper: id
``<file stem>#<citation key>``, ``title``, ``author`` (split at " and "), ``year`` (else the year of ``date``),
venue from ``journal`` or ``booktitle``, link from ``url``, else ``doi``, else an arXiv ``eprint``, categories from
``primaryclass``. ``@string`` macros are expanded (also joined with ``#``), LaTeX read as Unicode
(:mod:`vectorstore.papers.latex`), every run of whitespace one space. The entry's fields are kept
(``Paper.bibtex``; not ``abstract``, the paper's text, nor ``file``, a path on the exporter's disk) so that an
export writes the entry back under its key. An entry without an abstract is counted; a malformed one (it does not
parse, its key is used again, a year no year can be, a field over its limit) is named with its line and skipped;
the rest of the file is read.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Iterator
from pathlib import Path

import bibtexparser
from bibtexparser import model
from bibtexparser.middlewares import (LibraryMiddleware, NormalizeFieldKeys, RemoveEnclosingMiddleware,
                                      ResolveStringReferencesMiddleware)

from vectorstore.papers.checks import read_text, visible
from vectorstore.papers.fields import as_year, entry_paper, one_line
from vectorstore.papers.latex import LatexToUnicode
from vectorstore.papers.records import CorpusError, Paper
from vectorstore.papers.selection import Tally

# A block that does not parse is named by the loader in one line; bibtexparser's own warning about it spans three.
logging.getLogger("bibtexparser.splitter").setLevel(logging.ERROR)
_AND = re.compile(r"\s+and\s+")  # BibTeX's name separator: "Smith, John and Doe, Jane" (a comma is inside a name)

NOT_KEPT = frozenset({"abstract", "file"})
"""Fields not kept in ``Paper.bibtex``: the abstract is the paper's text; ``file`` names attachments on the
exporter's disk (Zotero's ``files/12/x.pdf``, Mendeley's ``:Users/…``), which mean nothing anywhere else."""


def _parts(value: str) -> list[str] | None:
    """The operands of a BibTeX ``a # "b" # {c}``, or None for a value with no ``#`` between operands."""
    parts, depth, quoted, start = [], 0, False, 0
    for i, ch in enumerate(value):
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        elif ch == '"' and depth == 0:
            quoted = not quoted
        elif ch == "#" and depth == 0 and not quoted:
            parts.append(value[start:i].strip())
            start = i + 1
    return parts + [value[start:].strip()] if parts else None


def _operand(part: str, macros: dict[str, str]) -> str:
    if len(part) >= 2 and (part[0], part[-1]) in (("{", "}"), ('"', '"')):
        return part[1:-1]
    return macros.get(part.lower(), part)  # a number, or a month (jan) no @string defines: as written


class ExpandConcatenation(LibraryMiddleware):
    """BibTeX's ``#``: ``booktitle = neurips # " 2017"`` joins a ``@string`` macro and a literal. bibtexparser 2
    expands a value that is one macro only; this runs before it, leaving the joined value in braces."""

    def __init__(self) -> None:
        super().__init__(allow_inplace_modification=True)

    @classmethod
    def metadata_key(cls) -> str:
        return "expand_concatenation"

    def transform(self, library: bibtexparser.Library) -> bibtexparser.Library:
        macros = {k.lower(): _operand(str(s.value).strip(), {}) for k, s in library.strings_dict.items()}
        for entry in library.entries:
            for f in entry.fields:
                parts = _parts(f.value) if isinstance(f.value, str) and "#" in f.value else None
                if parts:
                    f.value = "{" + "".join(_operand(p, macros) for p in parts) + "}"
        return library


def _parse_stack() -> list:
    return [ExpandConcatenation(), ResolveStringReferencesMiddleware(), RemoveEnclosingMiddleware(), LatexToUnicode(),
            NormalizeFieldKeys()]


def _failure(block: model.ParsingFailedBlock, first: dict[str, int]) -> str:
    """Why a block of the file gave no entry, in a few words."""
    if isinstance(block, model.DuplicateBlockKeyBlock):
        where = f" (first on line {first[block.key]})" if block.key in first else ""
        return f"citation key {block.key!r} is used again{where}; keys must be unique"
    if isinstance(block, model.DuplicateFieldKeyBlock):
        return f"entry {getattr(block.ignore_error_block, 'key', '')!r} gives a field twice"
    error = str(getattr(block.error, "abort_reason", None) or block.error or "").strip()
    if isinstance(block, model.MiddlewareErrorBlock):
        return f"entry {getattr(block.ignore_error_block, 'key', '')!r}: its LaTeX cannot be read ({error[:200]})"
    last = error.splitlines()[-1].strip() if error else "not BibTeX"
    return f"entry does not parse ({last[:200]})"


def load_bibtex(path: str | Path, tally: Tally | None = None) -> list[Paper]:
    """Papers of a BibTeX file, in file order. Entries that give no paper are added to ``tally`` (without an
    abstract: counted; malformed: ``<file>:<line>: <reason>``). Raises CorpusError only for a file that is not
    UTF-8 text (a BOM is dropped)."""
    path = Path(path)
    tally = tally if tally is not None else Tally()
    text = read_text(path)
    if not visible(text):
        return []
    try:
        library = bibtexparser.parse_string(text, parse_stack=_parse_stack())
    except Exception as exc:  # noqa: BLE001 - bibtexparser's own state errors ("please report this bug")
        raise CorpusError(f"{path}: bibtexparser cannot read this file ({type(exc).__name__}: {exc}); nothing of "
                          "it was read") from exc
    first = {e.key: e.start_line + 1 for e in library.entries}
    for block in library.failed_blocks:
        tally.bad(f"{path}:{(block.start_line or 0) + 1}: {_failure(block, first)}")
    return list(_papers(path, library.entries, tally))


def _papers(path: Path, entries: list[model.Entry], tally: Tally) -> Iterator[Paper]:
    for entry in sorted(entries, key=lambda e: e.start_line or 0):
        where = f"{path}:{(entry.start_line or 0) + 1}"
        fields = {f.key: one_line(str(f.value)) for f in entry.fields}
        if not visible(fields.get("abstract", "")):
            tally.no_abstract += 1
            continue
        try:
            yield _paper(path, entry, fields, where)
        except CorpusError as exc:
            tally.bad(str(exc))


def _paper(path: Path, entry: model.Entry, fields: dict[str, str], where: str) -> Paper:
    year_text = fields.get("year") or (re.match(r"\s*(\d{4})", fields.get("date", "")) or [None, None])[1]
    doi, eprint = fields.get("doi", ""), fields.get("eprint", "")
    url = fields.get("url") or (f"https://doi.org/{doi}" if doi else "") or \
        (f"https://arxiv.org/abs/{eprint}" if eprint and fields.get("archiveprefix", "arXiv").lower() == "arxiv" else "")
    kept = {"ENTRYTYPE": entry.entry_type.lower(), "ID": entry.key}
    kept.update((k, v) for k, v in fields.items() if k not in NOT_KEPT)
    return entry_paper(
        f"{path.stem}#{entry.key}", fields["abstract"], where, title=fields.get("title", ""),
        authors=[a for a in _AND.split(fields.get("author", "")) if a.strip() and a.strip().lower() != "others"],
        venue=fields.get("journal") or fields.get("booktitle", ""), year=as_year(year_text, where), url=url,
        source=path.name, categories=[fields["primaryclass"]] if fields.get("primaryclass") else [], bibtex=kept)
