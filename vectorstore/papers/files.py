"""Paper files and folders: which files to read (:func:`iter_paper_files`) and each one loaded by its format
(:func:`file_format`: a ``.txt`` paper list, ``.jsonl`` records, a ``.bib`` BibTeX export, a ``.csv`` with a
header, arXiv snapshot lines in a ``.json`` or ``.jsonl``): whole (:func:`read_file`, :func:`load_file`), a line at a
time (:func:`stream_file`, the arXiv snapshot: :func:`is_streamed`), or all files at once (:func:`load_papers`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Container, Iterable, Iterator
from pathlib import Path

from vectorstore.papers.format_arxiv import is_arxiv_file, iter_arxiv
from vectorstore.papers.format_bibtex import load_bibtex
from vectorstore.papers.format_csv import load_csv
from vectorstore.papers.format_jsonl import load_jsonl
from vectorstore.papers.format_txt import load_paper_list
from vectorstore.papers.records import CorpusError, Paper
from vectorstore.papers.selection import Selection, Tally


SUPPORTED_SUFFIXES = (".txt", ".jsonl", ".json", ".bib", ".csv")
KINDS = ".txt paper lists, .jsonl, .bib, .csv or arXiv snapshot .json"
"""The formats, as a message names them."""


def _in_folder(f: Path) -> bool:
    """A file a folder's expansion takes: a supported suffix, and for ``.json`` an arXiv snapshot (a folder also
    holds .json settings and caches, such as an index's own)."""
    suffix = f.suffix.lower()
    return suffix in SUPPORTED_SUFFIXES and (suffix != ".json" or is_arxiv_file(f))


def iter_paper_files(paths: Iterable[str | Path], unreadable: list[str] | None = None) -> Iterator[Path]:
    """Expand files and folders (with their subfolders, hidden ones left out) into supported paper
    files (sorted within a folder), each file once
    however often it is named (``data/x.txt``, ``./data/x.txt`` and ``data/`` are one file).

    ``unreadable``: when given, a line is appended for each subfolder the operating system will not let us
    list (:func:`unreadable_folders`), which is otherwise passed over as empty, and for each path named, or entry
    of a folder with a paper file's suffix, that is a FIFO, socket or device or a symbolic link leading nowhere
    (:func:`not_a_file`): each is skipped and the rest read (hostile round #35, F8, F12). Raises CorpusError for a
    path that does not exist or is a file of an unsupported type, and (without ``unreadable``) for a path
    named that is no file, each named as what it is.
    """
    seen: set[Path] = set()

    def once(files: Iterable[Path]) -> Iterator[Path]:
        for f in files:
            real = f.resolve()
            if real not in seen:
                seen.add(real)
                yield f

    for p in map(Path, paths):
        try:
            os.stat(p)
        except PermissionError:  # a folder on its path may not be searched: is_dir() raised it, "unexpected"
            line = f"{shown(p)}: cannot be reached (permission denied on a folder of its path): give this user access to it"
            if unreadable is None:
                raise CorpusError(line) from None
            unreadable.append(line)
            continue
        except OSError:
            pass  # missing, a dangling link or a loop: named below
        if p.is_dir():
            if unreadable is not None:
                unreadable += unreadable_folders(p)
            # Subfolders too ("papers/2024/a.jsonl"); extensions in any case ("list.TXT").
            named = sorted(f for f in p.rglob("*") if f.suffix.lower() in SUPPORTED_SUFFIXES
                           and not any(part.startswith(".") for part in f.relative_to(p).parts))
            kinds = {f: _kind(f) for f in named}
            if unreadable is not None:  # a FIFO "a.txt" among the papers was passed over without a word
                unreadable += [not_a_file(f) for f in named if kinds[f] == "other"]
                unreadable += [f"{shown(f)}: cannot be read (permission denied on it or on where it links): skipped; "
                               "give this user access to it" for f in named if kinds[f] == "denied"]
                unreadable += [control_named(f) for f in named if kinds[f] == "file" and control_named(f)]
            yield from once(f for f in named if kinds[f] == "file" and _in_folder(f) and not control_named(f))
        elif p.is_file():
            if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise CorpusError(f"{shown(p)}: unsupported file type {p.suffix!r} (use {KINDS})")
            if control_named(p) and unreadable is None:
                raise CorpusError(control_named(p))
            if control_named(p):
                unreadable.append(control_named(p))
                continue
            yield from once([p])
        elif not os.path.lexists(p):
            raise CorpusError(missing_path(p))
        elif unreadable is not None:  # one bad path named among others no longer stops the whole ingest
            unreadable.append(not_a_file(p))
        else:
            raise CorpusError(not_a_file(p))


def missing_path(path: Path) -> str:
    """The one line for a paper file or folder named that is not there."""
    return f"{shown(path)}: no such file or folder"


def _kind(path: Path) -> str:
    """What a folder's entry is, its link followed: "file", "dir", "denied" (its stat refused: a link into a folder
    this user may not search made ``is_file()`` raise, aborting the whole folder, a fifth hostile round) or
    "other" (a FIFO, socket or device; a dangling link or a loop)."""
    try:
        mode = os.stat(path).st_mode
    except PermissionError:
        return "denied"
    except OSError:
        return "other"
    return "file" if stat.S_ISREG(mode) else "dir" if stat.S_ISDIR(mode) else "other"


def shown(path: Path | str) -> str:
    """``path`` as one line of output: a line break or other control character in it escaped (``\\n``)."""
    text = str(path)
    return repr(text)[1:-1] if any(c < " " or "\x7f" <= c <= "\x9f" for c in text) else text


def control_named(path: Path) -> str | None:
    """The line skipping ``path`` when its file name holds a line break or other control character, else None:
    its papers' ids (``<stem>#<n>``) would carry it into every answer, list and one-line error, where a name
    could forge output lines (a third hostile round)."""
    if shown(path.name) == path.name:
        return None
    return f"{shown(path)}: its name holds a line break or other control character: rename the file"


def not_a_file(path: Path) -> str:
    """One line naming ``path`` (which exists as a directory entry, and is neither a file nor a folder) as what it
    is: a symbolic link leading nowhere (dangling, or a loop), or a FIFO, socket or device."""
    if not path.exists():
        return f"{shown(path)}: a symbolic link that leads nowhere (dangling, or a loop): point it at a paper file"
    return f"{shown(path)}: not a regular file (a FIFO, socket or device): give a paper file ({KINDS})"


def unreadable_folders(root: Path) -> list[str]:
    """One line for each folder under ``root`` (itself included, hidden ones left out) that cannot be listed
    (permissions): ``Path.rglob`` passes over such a folder as if it were empty (hostile round #35)."""
    errors: list[OSError] = []
    for _ in os.walk(root, onerror=errors.append):
        pass
    lines = []
    for e in errors:
        where = Path(e.filename) if e.filename else root
        if any(part.startswith(".") for part in where.relative_to(root).parts if where.is_relative_to(root)):
            continue
        why = "permission denied" if isinstance(e, PermissionError) else (e.strerror or type(e).__name__)
        lines.append(f"{shown(where)}: folder cannot be read ({why}): skipped; the papers indexed from it are kept")
    return lines


def file_format(path: Path) -> str:
    """``"txt"``, ``"jsonl"``, ``"bibtex"``, ``"csv"`` or ``"arxiv"`` (a ``.json``/``.jsonl`` whose first record has
    the snapshot's fields), by the suffix in any case; a ``.json`` of other records is read as JSONL."""
    suffix = Path(path).suffix.lower()
    if suffix in (".json", ".jsonl"):
        return "arxiv" if is_arxiv_file(Path(path)) else "jsonl"
    return {".bib": "bibtex", ".csv": "csv"}.get(suffix, "txt")


def is_streamed(path: Path) -> bool:
    """True for a file read a line at a time (:func:`stream_file`): arXiv snapshot lines, gigabytes of them."""
    return file_format(path) == "arxiv"


@contextlib.contextmanager
def _reading(path: Path) -> Iterator[None]:
    """A file the operating system will not let us read (permissions, a folder in its place) as CorpusError: the
    ingest skips and reports it, and its indexed papers stay, instead of stopping the run (hostile round #35)."""
    try:
        yield
    except PermissionError as exc:
        raise CorpusError(f"{path}: cannot be read (permission denied): skipped; its indexed papers are kept") from exc
    except IsADirectoryError as exc:
        raise CorpusError(f"{path}: is a folder, not a paper file: skipped") from exc
    except OSError as exc:
        raise CorpusError(f"{path}: cannot be read ({exc.strerror or exc}): skipped; its indexed papers are kept") from exc


def read_file(path: Path, selection: Selection | None = None, known: Container[str] = frozenset(),
              tally: Tally | None = None) -> list[Paper]:
    """The papers of one file (its format by :func:`file_format`) that ``selection`` admits, in file order.

    ``tally`` (when given) receives the entries of a ``.bib``, ``.csv`` or arXiv file that gave no paper (malformed,
    each named with its line; without an abstract), and those ``selection`` left out (the ids among ``known`` in
    ``tally.passed_over``). Raises CorpusError for a file that cannot be read at all: a ``.txt`` or ``.jsonl`` with
    any bad record (its format is all or nothing), a file that is not UTF-8 text, a CSV without title and abstract
    columns, one the operating system will not let us read."""
    tally = tally if tally is not None else Tally()
    with _reading(path):
        fmt = file_format(path)
        if fmt == "arxiv":
            return list(iter_arxiv(path, tally, selection, known))
        loaders = {"txt": lambda: load_paper_list(path), "jsonl": lambda: load_jsonl(path),
                   "bibtex": lambda: load_bibtex(path, tally), "csv": lambda: load_csv(path, tally)}
        papers = loaders[fmt]()
    if selection is None or not selection.active():
        return papers
    kept = [p for p in papers if selection.admits(p.categories, None, p.year)]
    if len(kept) < len(papers):
        left = {p.id for p in papers} - {p.id for p in kept}
        tally.left_out += len(left)
        tally.passed_over |= {pid for pid in left if pid in known}
    return kept


def stream_file(path: Path, selection: Selection | None = None, known: Container[str] = frozenset(),
                tally: Tally | None = None) -> Iterator[Paper]:
    """:func:`read_file` for arXiv snapshot lines (:func:`is_streamed`), a paper at a time, so that memory holds
    one record whatever the file's size. Raises CorpusError as :func:`read_file`, when the iteration meets it."""
    with _reading(path):
        yield from iter_arxiv(path, tally if tally is not None else Tally(), selection, known)


def load_file(path: Path) -> list[Paper]:
    """Every paper of one file (:func:`read_file` without a selection; malformed entries of a ``.bib``, ``.csv`` or
    arXiv file are left out: :func:`read_file` names them)."""
    return read_file(path)


def load_papers(paths: Iterable[str | Path]) -> list[Paper]:
    """All papers of the given files/folders. Raises CorpusError on a bad file or a duplicate id."""
    papers: list[Paper] = []
    seen: dict[str, str] = {}
    for f in iter_paper_files(paths):
        loaded = load_file(f)
        for p in loaded:
            if p.id in seen:
                raise CorpusError(f"{f}: duplicate paper id {p.id!r} (also in {seen[p.id]})")
            seen[p.id] = f.name
            papers.append(p)
    return papers
