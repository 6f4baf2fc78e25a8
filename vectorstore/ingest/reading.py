"""The paper files of an ingest, read: :func:`load_files` reads each file once into a :class:`FileRead` (every
paper's id and content hash, its first and last papers, what the reading passed over), which the guards screen
and the run writes from. A file of any format but arXiv snapshot lines is held in memory whole; snapshot lines are
read a second time for the papers to write (:meth:`FileRead.papers`), so that a 4 GB snapshot costs memory for its
ids and hashes (about 150 bytes a paper), never for its text."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Container, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from vectorstore.papers import (CorpusError, Paper, Selection, Tally, is_streamed, iter_paper_files, read_file,
                                stream_file, visible)

HEAD = 20
"""The first papers of a file kept for the guards (a moved file is told from another by them)."""


@dataclass
class FileRead:
    """One paper file as an ingest read it.

    ``hashes``: ``{paper id: content hash}`` of every paper, in file order; ``head``: the first :data:`HEAD` papers;
    ``last``: the last one; ``has_year``/``has_venue``: whether any gives a year or a venue; ``tally``: the entries
    that gave no paper; ``held``: every paper, for a file read whole, None for arXiv snapshot lines (read again by
    :meth:`papers`); ``changed``: papers of a snapshot that changed (or went) between its two readings."""

    path: Path
    hasher: Callable[[Paper], str]
    selection: Selection | None = None
    hashes: dict[str, str] = field(default_factory=dict)
    head: list[Paper] = field(default_factory=list)
    last: Paper | None = None
    has_year: bool = False
    has_venue: bool = False
    tally: Tally = field(default_factory=Tally)
    held: list[Paper] | None = None
    changed: int = 0

    @property
    def name(self) -> str:
        return self.path.name

    def __len__(self) -> int:
        return len(self.hashes)

    def note(self, paper: Paper) -> None:
        """Take in the next paper of the first reading."""
        self.hashes[paper.id] = self.hasher(paper)
        if len(self.head) < HEAD:
            self.head.append(paper)
        self.last = paper
        self.has_year = self.has_year or paper.year is not None
        self.has_venue = self.has_venue or visible(paper.venue)

    def papers(self, wanted: Container[str] | None = None) -> Iterator[Paper]:
        """The papers (those whose id is in ``wanted``), in file order: held ones from memory; a snapshot's read
        again, where a paper whose content hash is not the first reading's (the file was edited meanwhile) is
        left out and counted in ``changed``, for the next ingest to take."""
        if self.held is not None:
            yield from (p for p in self.held if wanted is None or p.id in wanted)
            return
        found = 0
        for p in stream_file(self.path, self.selection):
            if (wanted is None or p.id in wanted) and p.id in self.hashes:
                if self.hasher(p) == self.hashes[p.id]:
                    found += 1
                    yield p
        expected = len(self.hashes) if wanted is None else sum(1 for pid in self.hashes if pid in wanted)
        self.changed += expected - found

    def get(self, ids: Iterable[str]) -> dict[str, Paper]:
        """``{id: paper}`` of this file for ``ids`` (a snapshot is read again for them)."""
        ids = set(ids)
        return {p.id: p for p in self.papers(ids)} if ids else {}


def read_paper_file(path: Path, hasher: Callable[[Paper], str], selection: Selection | None = None,
                    known: Container[str] = frozenset()) -> FileRead:
    """One file read (:func:`vectorstore.papers.read_file`, or streamed for arXiv snapshot lines). ``known``: the
    indexed paper ids, for the tally's ``passed_over``. Raises CorpusError as ``read_file``."""
    read = FileRead(path, hasher, selection)
    if is_streamed(path):
        papers: Iterable[Paper] = stream_file(path, selection, known, read.tally)
    else:
        papers = read.held = read_file(path, selection, known, read.tally)
    for p in papers:
        read.note(p)
    return read


def load_files(paths: Iterable[str | Path], hasher: Callable[[Paper], str], indexed: dict[str, str] | None = None,
               files: dict[str, Path] | None = None, selection: Selection | None = None
               ) -> tuple[dict[str, FileRead], list[str]]:
    """``({file name: FileRead}, [skip reasons])``: unreadable files are reported, not fatal.

    A file is also skipped whole when one of its paper ids belongs to another file: one read
    earlier in this call, or (``indexed``: ``{paper id: source file name}``) one already in the
    index, whose paper it would otherwise silently replace; and when a file of the same name (in
    another folder) was read earlier in this call, as papers are keyed by file name. ``files``, when
    given, is filled with ``{file name: the path read}``; ``hasher`` gives a paper's content hash; ``selection``
    the papers read. Raises CorpusError only when a path does not exist or has an unsupported type.
    """
    by_file: dict[str, FileRead] = {}
    skipped: list[str] = []
    seen: dict[str, str] = {}
    indexed = indexed or {}
    files = {} if files is None else files
    loaded: list[FileRead] = []
    found = list(iter_paper_files(paths, unreadable=skipped))
    twice = {name for name, n in Counter(f.name for f in found).items() if n > 1}
    for f in found:
        if f.name in twice:  # neither is taken: which one "wins" would depend on the order of the folders
            other = next(g for g in found if g.name == f.name and g != f)
            skipped.append(f"{f}: another file named {f.name} ({other}) is read in this run; papers are known by "
                           f"their file name, so nothing of this one was ingested: rename one of the two")
            continue
        files[f.name] = f
        try:
            loaded.append(read_paper_file(f, hasher, selection, indexed))
        except CorpusError as exc:
            skipped.append(str(exc))
    # A file read now owns what it holds now: a paper moved from a.jsonl to b.jsonl, both read in
    # this call, belongs to b (its indexed owner a no longer has it). A paper the selection passed over is still
    # in its file.
    now_in = {r.name: set(r.hashes) | r.tally.passed_over for r in loaded}

    def owner(pid: str) -> str | None:
        src = indexed.get(pid)
        return src if src is not None and (src not in now_in or pid in now_in[src]) else None

    for r in loaded:
        clash = next(((pid, seen.get(pid) or owner(pid)) for pid in r.hashes
                      if seen.get(pid, r.name) != r.name or (owner(pid) or r.name) != r.name), None)
        if clash:
            skipped.append(f"{r.path}: paper id {clash[0]!r} already belongs to {clash[1]}; ids must be unique across "
                           f"files, so nothing of {r.name} was ingested (if the paper moved there, ingest "
                           f"both files together; if {clash[1]} was renamed: paper-assistant remove {clash[1]})")
            continue
        seen.update((pid, r.name) for pid in r.hashes)
        by_file[r.name] = r
    return by_file, skipped
