"""Paper files and folders: which files to read (:func:`iter_paper_files`) and each one loaded by its
format (:func:`load_file`: ``.jsonl`` records or a ``.txt`` paper list), or all at once (:func:`load_papers`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from pathlib import Path

from vectorstore.papers.format_jsonl import load_jsonl
from vectorstore.papers.format_txt import load_paper_list
from vectorstore.papers.records import CorpusError, Paper


SUPPORTED_SUFFIXES = (".txt", ".jsonl")


def iter_paper_files(paths: Iterable[str | Path], unreadable: list[str] | None = None) -> Iterator[Path]:
    """Expand files and folders (with their subfolders, hidden ones left out) into supported paper
    files (sorted within a folder), each file once
    however often it is named (``data/x.txt``, ``./data/x.txt`` and ``data/`` are one file).

    ``unreadable``: when given, a line is appended for each subfolder the operating system will not let us
    list (:func:`unreadable_folders`), which is otherwise passed over as empty. Raises CorpusError for a path
    that does not exist, a dangling or looping symbolic link, a FIFO or device, or a file of an unsupported
    type, each named as what it is.
    """
    seen: set[Path] = set()

    def once(files: Iterable[Path]) -> Iterator[Path]:
        for f in files:
            real = f.resolve()
            if real not in seen:
                seen.add(real)
                yield f

    for p in map(Path, paths):
        if p.is_dir():
            if unreadable is not None:
                unreadable += unreadable_folders(p)
            # Subfolders too ("papers/2024/a.jsonl"); extensions in any case ("list.TXT").
            yield from once(sorted(f for f in p.rglob("*") if f.suffix.lower() in SUPPORTED_SUFFIXES and f.is_file()
                                   and not any(part.startswith(".") for part in f.relative_to(p).parts)))
        elif p.is_file():
            if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise CorpusError(f"{p}: unsupported file type {p.suffix!r} (use .txt paper lists or .jsonl)")
            yield from once([p])
        elif os.path.lexists(p) and not p.exists():
            raise CorpusError(f"{p}: a symbolic link that leads nowhere (dangling, or a loop): point it at a paper file")
        elif os.path.lexists(p):
            raise CorpusError(f"{p}: not a regular file (a FIFO, socket or device): give a .txt or .jsonl file")
        else:
            raise CorpusError(f"{p}: no such file or folder")


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
        lines.append(f"{where}: folder cannot be read ({why}): skipped; the papers indexed from it are kept")
    return lines


def load_file(path: Path) -> list[Paper]:
    """Papers of one ``.jsonl`` file or ``.txt`` paper list (extension in any case); raises CorpusError, also for
    a file the operating system will not let us read (permissions, a folder in its place): the ingest skips and
    reports it, and its indexed papers stay, instead of stopping the run (hostile round #35)."""
    try:
        return load_jsonl(path) if Path(path).suffix.lower() == ".jsonl" else load_paper_list(path)
    except PermissionError as exc:
        raise CorpusError(f"{path}: cannot be read (permission denied): skipped; its indexed papers are kept") from exc
    except IsADirectoryError as exc:
        raise CorpusError(f"{path}: is a folder, not a paper file: skipped") from exc
    except OSError as exc:
        raise CorpusError(f"{path}: cannot be read ({exc.strerror or exc}): skipped; its indexed papers are kept") from exc


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
