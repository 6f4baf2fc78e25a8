"""load → chunk → embed → store, idempotent and resumable.

A paper is committed by writing its record to the papers collection *after* all its chunks are
stored; the record carries a content hash. A re-run therefore skips every committed, unchanged
paper, redoes any paper interrupted mid-way (its chunk ids are content-derived, so the redo
upserts the same records) and replaces edited papers' chunks. Each chunk carries the hash of the
version it was written for, so a paper whose chunks are of another version than its record (a run
killed between an edit's chunks and its record, the file then reverted) is redone too. A re-read
file that would lose or hide indexed papers is skipped whole, its papers kept
(vectorstore.ingest.guards), unless ingest is told to take files as they are now (``replace``).
Only one writer at a time (a file lock); readers are never blocked. Each batch of papers is embedded
and written by :mod:`vectorstore.ingest.batch`; ``paper-assistant remove`` is :mod:`vectorstore.ingest.removal`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import vectorstore.ingest.guards as guards
from vectorstore.ingest.batch import embed_batch, store_batch, stored_by_text
from vectorstore.ingest.reading import FileRead, load_files
from vectorstore.chunks import SENTENCE_SPLITTER, Chunker, ChunkingConfig
from vectorstore.index import Index
from vectorstore.papers import Paper, Selection, Tally, counted, entries, iter_paper_files


@dataclass
class IngestReport:
    """What an ingest did. ``skipped`` holds one-line reasons for files that could not be read."""

    added: int = 0
    updated: int = 0
    unchanged: int = 0
    removed: int = 0
    chunks_written: int = 0
    chunks_reused: int = 0
    skipped: list[str] = field(default_factory=list)
    empty: list[str] = field(default_factory=list)
    """Warnings, not errors: a file read without a paper in it, a folder without a paper file."""
    papers_total: int = 0
    chunks_total: int = 0
    entries: Tally = field(default_factory=Tally)
    """The entries of the files read that gave no paper: malformed (each named with its line), without an abstract,
    left out by the selection (``--category``, ``--since``)."""

    def summary(self) -> str:
        """One line: ``3 added, 0 updated, 0 unchanged, 0 removed, 0 skipped; 212 entries without an abstract
        skipped; index holds 3 papers in 5 chunks`` (the entries' counts only when there are any)."""
        t = self.entries
        extra = "".join(f"; {text}" for n, text in (
            (t.no_abstract, f"{entries(t.no_abstract)} without an abstract skipped"),
            (t.malformed, f"{entries(t.malformed, 'malformed')} skipped"),
            (t.left_out, f"{entries(t.left_out)} left out by the selection")) if n)
        return (f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed, "
                f"{len(self.skipped)} skipped{extra}; index holds {counted(self.papers_total, 'paper')} in "
                f"{counted(self.chunks_total, 'chunk')}")


RECORD_FORMAT = 3
"""Version of what ingest stores per paper (2: sentence vectors in chunk metadata; 3: ``has_code``).
Part of the content hash, so a re-run upgrades papers stored in an older format (their chunk
vectors are re-used by id: nothing is embedded again)."""


def content_hash(paper: Paper, model: str, max_tokens: int, chunking: ChunkingConfig | None = None) -> str:
    """Hash of everything that shapes a paper's stored records (text, metadata, model, chunk budget,
    chunking configuration: overlap, separators; the sentence splitter's version, as its spans are stored)."""
    dump = paper.model_dump()
    for name in ("categories", "bibtex"):  # fields added later: empty, a paper hashes as before they were
        if not dump[name]:
            del dump[name]
    parts = [dump, model, max_tokens, RECORD_FORMAT]
    if SENTENCE_SPLITTER > 1:  # version 1 hashed as before it was versioned
        parts.append({"sentences": SENTENCE_SPLITTER})
    key = chunking.hash_key() if chunking is not None else None
    if key is not None:  # the defaults hash as before they were settings, so stored papers stay unchanged
        parts.append(key)
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha1(payload.encode()).hexdigest()


def ingest(paths: Iterable[str | Path], index: Index, chunker: Chunker | None = None, paper_batch: int = 256,
           progress: Callable[[int], None] | None = None, on_total: Callable[[int], None] | None = None,
           write_batch: int = 4096, build_lexical: bool = True, replace: bool = False,
           selection: Selection | None = None, on_stage: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest paper files/folders into ``index``; returns an :class:`IngestReport`.

    Papers that need work are taken shortest first, ``paper_batch`` at a time (one commit each);
    within a batch only chunks the store does not already hold are embedded (chunk ids are
    content-derived, so an interrupted batch or an edit that keeps some chunks re-uses their stored
    vectors), and Chroma is written ``write_batch`` chunks per call. Chunks left without a paper
    record by an earlier interrupted run whose paper is no longer being ingested are removed. With
    ``build_lexical`` the BM25 index is brought up to date before returning, so the first question
    does not pay for it. arXiv snapshot lines are streamed: read once for their ids and hashes, again
    for the papers to write, :data:`STREAM_WINDOW` batches at a time (shortest first within them).

    A re-read file that would lose or hide indexed papers (see :mod:`vectorstore.ingest.guards`: fewer
    papers, an abstract deleted from a list while another was added, a lost heading, a last abstract cut
    off, a same-named file from another folder) is skipped with its papers kept, unless ``replace``: then every
    file is taken as it is now. ``selection`` (``--category``, ``--since``) reads only the papers it admits; an
    indexed paper it leaves out stays as it is.

    ``progress(n)`` is called with the number of papers just finished; ``on_total(n)`` once with the
    number of papers that need embedding; ``on_stage(line)`` with what it is doing before the first batch
    ("reading 3 files…", "checking 2,000 papers against the index…": seconds a bar at 0 would not explain).
    Raises IndexInUseError when another writer holds the lock, CorpusError for a missing path; a file that
    cannot be parsed, or that reuses another file's paper ids, is skipped and reported; a malformed entry of a
    .bib, .csv or arXiv file is named in ``report.entries`` and the rest of its file read.
    """
    store = index.store
    chunker = chunker or index.chunker()
    lock = index.writer_lock()
    try:
        stored = store.paper_hashes()
        files: dict[str, Path] = {}
        by_file, stored_paths, report = _read_and_screen(list(paths), index, chunker, (replace, selection, on_stage),
                                                         stored, files)
        # Where each file was read from, so a same-named file from another folder is told apart next time.
        paths_now = {name: str(files[name].resolve()) for name in by_file}
        # A paper record whose chunks are gone (an older version deleted them before writing the new
        # ones, and a write failed) is redone, not skipped as unchanged; so is one whose chunks were written
        # for another version of its text (a run killed between an edit's chunks and its record, the file
        # then reverted: its record's hash matches again, while the chunks are the edit's, or both versions').
        chunked = store.chunk_paper_hashes()
        wanted, loaded_ids = _to_do(by_file, stored, chunked, report)
        # A paper that vanished from a file we re-read was deleted or renumbered by its owner.
        gone = [pid for pid, (_, src) in stored.items() if src in by_file and pid not in loaded_ids]
        todo = [(p, w[p.id]) for name, w in wanted.items() if by_file[name].held is not None
                for p in by_file[name].papers(w)]
        # Before anything is deleted: stored vectors of chunks whose text reappears under another id.
        chunks_of, by_text = stored_by_text(todo, index, chunker)
        todo_ids = {pid for w in wanted.values() for pid in w}
        orphans = [pid for pid in chunked if pid not in stored and pid not in todo_ids]
        interrupted = store.write_interrupted()
        if todo_ids or gone or orphans:  # the mark names --replace: doctor's remedy must repeat it (a hostile round)
            store.bump_generation(writing="ingest --replace" if replace else True)
        if gone:
            store.delete_papers(gone)
            report.removed = len(gone)
        # Chunks of a paper whose run was killed before its record (the commit mark) was written,
        # and which is not being ingested now: nothing else would ever remove them.
        if orphans:
            store.delete_papers(orphans)
        _announce(len(todo_ids), paper_batch, on_total, on_stage)
        sizes = (paper_batch, write_batch)
        _write_batches(todo, index, chunker, (chunks_of, by_text), sizes, paths_now, report, progress)
        _write_streamed([(by_file[n], w) for n, w in wanted.items() if by_file[n].held is None], index, chunker, sizes,
                        paths_now, report, progress)
        for name, read in by_file.items():  # a file that moved: its unchanged papers learn the new path
            if stored_paths.get(name) != paths_now[name]:
                store.set_source_path([pid for pid in read.hashes if pid not in todo_ids], paths_now[name])
        if todo_ids or gone or orphans or interrupted:  # interrupted: a killed writer's caches may be stale
            _close_write(store, interrupted, replace)
        report.papers_total, report.chunks_total = store.counts()
        if build_lexical:  # the BM25 index and the exact-search matrix, so the first question is fast
            index.lexical()
            store.dense_matrix()
        return report
    finally:
        lock.release()


def _close_write(store, interrupted, replace: bool) -> None:
    """Close the write mark (the caches keyed on the generation go stale). A plain ingest after a killed
    ``--replace`` (which refuses a file that shrank) leaves that mark while papers still lack chunks, so doctor goes
    on naming ``--replace`` (it named a plain ingest, in a loop: a hostile round)."""
    unfinished = (interrupted == "ingest --replace" and not replace
                  and not set(store.paper_hashes()) <= set(store.chunk_paper_hashes()))
    store.bump_generation(writing="ingest --replace" if unfinished else False)


def _read_and_screen(paths: list, index: Index, chunker: Chunker,
                     how: tuple[bool, Selection | None, Callable[[str], None] | None], stored: dict,
                     files: dict[str, Path]) -> tuple[dict[str, FileRead], dict[str, str], IngestReport]:
    """``(the files read, {file name: the path it was read from before}, a report holding the files skipped and the
    entries that gave no paper)``: the files read, less those the guards keep out (:mod:`vectorstore.ingest.guards`;
    fewer of them with ``replace``). ``how``: ``(replace, selection, on_stage)``, ``on_stage`` told "reading 3 files…"
    before and "checking 2,000 papers against the index…" after the reading; ``stored``: the index's
    ``{paper id: (hash, file name)}``; ``files`` is filled with ``{file name: the path read}``."""
    replace, selection, on_stage = how
    store = index.store
    owners = {pid: src for pid, (_, src) in stored.items()}

    def hasher(p: Paper) -> str:
        return content_hash(p, index.encoder.name, chunker.max_tokens, chunker.config)

    if on_stage:
        on_stage(f"reading {counted(sum(1 for _ in iter_paper_files(paths, unreadable=[])), 'file')}…")
    by_file, skipped = load_files(paths, hasher, owners, files, selection)
    if on_stage:
        on_stage(f"checking {counted(sum(len(r.hashes) for r in by_file.values()), 'paper')} against the index…")
    tally = Tally()
    for read in by_file.values():
        tally.add(read.tally)
    indexed: dict[str, set[str]] = {}  # {source file: its indexed paper ids}
    for pid, (_, src) in stored.items():
        indexed.setdefault(src, set()).add(pid)
    empty, kept = guards.empty_inputs(paths, by_file, indexed)
    skipped += kept
    stored_paths = store.source_paths()
    if not replace:
        skipped += guards.other_folder(by_file, files, stored_paths, store)
        skipped += guards.lost_heading(by_file, indexed, store)
    skipped += guards.taken_ids(by_file, owners, store, replace)
    if not replace:
        skipped += guards.shrunk(by_file, indexed, store)
        unchanged = {pid for read in by_file.values() for pid, h in read.hashes.items()
                     if stored.get(pid, ("",))[0] == h}
        skipped += guards.deleted_inside(by_file, indexed, store, unchanged)
    return by_file, stored_paths, IngestReport(skipped=skipped, empty=empty, entries=tally)


def _announce(n: int, paper_batch: int, on_total: Callable[[int], None] | None,
              on_stage: Callable[[str], None] | None) -> None:
    """Tell ``on_total`` the ``n`` papers to embed and, when there are any, ``on_stage`` "embedding 9,800 papers
    (256 at a time)…"."""
    if on_total:
        on_total(n)
    if on_stage and n:
        on_stage(f"embedding {counted(n, 'paper')} ({min(paper_batch, n)} at a time)…")


def _to_do(by_file: dict[str, FileRead], stored: dict, chunked: dict, report: IngestReport
           ) -> tuple[dict[str, dict[str, str]], set[str]]:
    """``({file name: {paper id: hash} to embed and write}, every paper id read or passed over)``, counting added,
    updated and unchanged papers in ``report``. A paper is unchanged when its record has its hash and its chunks
    were written for it; one the selection passed over is neither read nor gone."""
    wanted: dict[str, dict[str, str]] = {}
    loaded_ids: set[str] = set()
    for name, read in by_file.items():
        loaded_ids |= read.tally.passed_over
        for pid, h in read.hashes.items():
            loaded_ids.add(pid)
            old = stored.get(pid)
            if old and old[0] == h and pid in chunked and chunked[pid] <= {h, ""}:
                report.unchanged += 1
                continue
            wanted.setdefault(name, {})[pid] = h
            if old:
                report.updated += 1
            else:
                report.added += 1
    return wanted, loaded_ids


STREAM_WINDOW = 8
"""Batches of a streamed file read ahead and sorted by length together: memory holds this many batches of
papers (2,048 at the default 256), whatever the file's size."""


def _write_streamed(files: list[tuple[FileRead, dict[str, str]]], index: Index, chunker: Chunker,
                    sizes: tuple[int, int], paths_now: dict[str, str], report: IngestReport,
                    progress: Callable[[int], None] | None) -> None:
    """Embed and write the ``{paper id: hash}`` wanted of each streamed file (:meth:`FileRead.papers` reads it
    again), :data:`STREAM_WINDOW` batches of ``sizes[0]`` papers at a time; a paper that changed since the first
    reading is left for the next ingest, with a warning."""
    window = sizes[0] * STREAM_WINDOW
    for read, wanted in files:
        ahead: list[tuple[Paper, str]] = []
        for p in read.papers(wanted):
            ahead.append((p, wanted[p.id]))
            if len(ahead) >= window:
                _write_batches(ahead, index, chunker, ({}, {}), sizes, paths_now, report, progress)
                ahead = []
        _write_batches(ahead, index, chunker, ({}, {}), sizes, paths_now, report, progress)
        if read.changed:
            report.empty.append(f"{read.path}: {counted(read.changed, 'paper')} changed while the file was read; "
                                "left as indexed for the next ingest to take")


def _write_batches(todo: list[tuple[Paper, str]], index: Index, chunker: Chunker, reuse: tuple, sizes: tuple[int, int],
                   paths_now: dict[str, str], report: IngestReport, progress: Callable[[int], None] | None) -> None:
    """Embed and write ``todo`` in batches of ``sizes[0]`` papers (``sizes[1]`` chunks per Chroma call), each
    committed by its paper records; ``reuse``: :func:`stored_by_text`'s ``(chunks, vectors by text)``."""
    paper_batch, write_batch = sizes
    chunks_of, by_text = reuse
    # Similar lengths in one batch waste less padding in the encoder.
    todo.sort(key=lambda ph: len(ph[0].text))
    # Batch i is written to Chroma on a second thread while batch i+1 is embedded (the encoder
    # releases the GIL); batches still commit in order, and at most two are in flight.
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="ingest-writer") as writer:
        pending = None
        for i in range(0, len(todo), paper_batch):
            batch = todo[i : i + paper_batch]
            embedded = embed_batch(batch, index, chunker, chunks_of, by_text)
            if pending is not None:
                _finish(pending, report, progress)
            pending = writer.submit(store_batch, embedded, index, write_batch, paths_now)
        if pending is not None:
            _finish(pending, report, progress)


def _finish(pending, report: IngestReport, progress) -> None:
    written, reused, n_papers = pending.result()  # re-raises the writer's error here
    report.chunks_written += written
    report.chunks_reused += reused
    if progress:
        progress(n_papers)
