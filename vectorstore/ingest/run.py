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
from collections import Counter
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import vectorstore.ingest.guards as guards
from vectorstore.ingest.batch import embed_batch, store_batch, stored_by_text
from vectorstore.chunks import SENTENCE_SPLITTER, Chunker, ChunkingConfig
from vectorstore.index import Index
from vectorstore.papers import CorpusError, Paper, counted, iter_paper_files, load_file


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

    def summary(self) -> str:
        s = (f"{self.added} added, {self.updated} updated, {self.unchanged} unchanged, {self.removed} removed, "
             f"{len(self.skipped)} skipped; index holds {counted(self.papers_total, 'paper')} in "
             f"{counted(self.chunks_total, 'chunk')}")
        return s


RECORD_FORMAT = 3
"""Version of what ingest stores per paper (2: sentence vectors in chunk metadata; 3: ``has_code``).
Part of the content hash, so a re-run upgrades papers stored in an older format (their chunk
vectors are re-used by id: nothing is embedded again)."""


def content_hash(paper: Paper, model: str, max_tokens: int, chunking: ChunkingConfig | None = None) -> str:
    """Hash of everything that shapes a paper's stored records (text, metadata, model, chunk budget,
    chunking configuration: overlap, separators; the sentence splitter's version, as its spans are stored)."""
    parts = [paper.model_dump(), model, max_tokens, RECORD_FORMAT]
    if SENTENCE_SPLITTER > 1:  # version 1 hashed as before it was versioned
        parts.append({"sentences": SENTENCE_SPLITTER})
    key = chunking.hash_key() if chunking is not None else None
    if key is not None:  # the defaults hash as before they were settings, so stored papers stay unchanged
        parts.append(key)
    payload = json.dumps(parts, sort_keys=True, ensure_ascii=False)
    return hashlib.sha1(payload.encode()).hexdigest()


def load_files(paths: Iterable[str | Path], indexed: dict[str, str] | None = None,
               files: dict[str, Path] | None = None) -> tuple[dict[str, list[Paper]], list[str]]:
    """``({file name: papers}, [skip reasons])``: unreadable files are reported, not fatal.

    A file is also skipped whole when one of its paper ids belongs to another file: one read
    earlier in this call, or (``indexed``: ``{paper id: source file name}``) one already in the
    index, whose paper it would otherwise silently replace; and when a file of the same name (in
    another folder) was read earlier in this call, as papers are keyed by file name. ``files``, when
    given, is filled with ``{file name: the path read}``. Raises CorpusError only when a path does
    not exist or has an unsupported type.
    """
    by_file: dict[str, list[Paper]] = {}
    skipped: list[str] = []
    seen: dict[str, str] = {}
    indexed = indexed or {}
    files = {} if files is None else files
    loaded: list[tuple[Path, list[Paper]]] = []
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
            loaded.append((f, load_file(f)))
        except CorpusError as exc:
            skipped.append(str(exc))
    # A file read now owns what it holds now: a paper moved from a.jsonl to b.jsonl, both read in
    # this call, belongs to b (its indexed owner a no longer has it).
    now_in = {f.name: {p.id for p in papers} for f, papers in loaded}

    def owner(pid: str) -> str | None:
        src = indexed.get(pid)
        return src if src is not None and (src not in now_in or pid in now_in[src]) else None

    for f, papers in loaded:
        clash = next(((p.id, seen.get(p.id) or owner(p.id)) for p in papers
                      if seen.get(p.id, f.name) != f.name or (owner(p.id) or f.name) != f.name), None)
        if clash:
            skipped.append(f"{f}: paper id {clash[0]!r} already belongs to {clash[1]}; ids must be unique across "
                           f"files, so nothing of {f.name} was ingested (if the paper moved there, ingest "
                           f"both files together; if {clash[1]} was renamed: paper-assistant remove {clash[1]})")
            continue
        seen.update((p.id, f.name) for p in papers)
        by_file[f.name] = papers
    return by_file, skipped


def ingest(paths: Iterable[str | Path], index: Index, chunker: Chunker | None = None, paper_batch: int = 256,
           progress: Callable[[int], None] | None = None, on_total: Callable[[int], None] | None = None,
           write_batch: int = 4096, build_lexical: bool = True, replace: bool = False,
           on_stage: Callable[[str], None] | None = None) -> IngestReport:
    """Ingest paper files/folders into ``index``; returns an :class:`IngestReport`.

    Papers that need work are taken shortest first, ``paper_batch`` at a time (one commit each);
    within a batch only chunks the store does not already hold are embedded (chunk ids are
    content-derived, so an interrupted batch or an edit that keeps some chunks re-uses their stored
    vectors), and Chroma is written ``write_batch`` chunks per call. Chunks left without a paper
    record by an earlier interrupted run whose paper is no longer being ingested are removed. With
    ``build_lexical`` the BM25 index is brought up to date before returning, so the first question
    does not pay for it.

    A re-read file that would lose or hide indexed papers (see :mod:`vectorstore.ingest.guards`: fewer
    papers, an abstract deleted from a list while another was added, a lost heading, a last abstract cut
    off, a same-named file from another folder) is skipped
    with its papers kept, unless ``replace``: then every file is taken as it is now.

    ``progress(n)`` is called with the number of papers just finished; ``on_total(n)`` once with the
    number of papers that need embedding; ``on_stage(line)`` with what it is doing before the first batch
    ("reading 3 files…", "checking 2,000 papers against the index…": seconds a bar at 0 would not explain). Raises IndexInUseError when another writer holds the
    lock, CorpusError for a missing path; a file that cannot be parsed, or that reuses another
    file's paper ids, is skipped and reported.
    """
    store = index.store
    chunker = chunker or index.chunker()
    lock = index.writer_lock()
    try:
        stored = store.paper_hashes()
        files: dict[str, Path] = {}
        paths = list(paths)
        if on_stage:
            on_stage(f"reading {counted(sum(1 for _ in iter_paper_files(paths, unreadable=[])), 'file')}…")
        by_file, hashes, stored_paths, report = _read_and_screen(paths, index, chunker, replace, stored, files)
        if on_stage:
            on_stage(f"checking {counted(len(hashes), 'paper')} against the index…")
        # Where each file was read from, so a same-named file from another folder is told apart next time.
        paths_now = {name: str(files[name].resolve()) for name in by_file}
        # A paper record whose chunks are gone (an older version deleted them before writing the new
        # ones, and a write failed) is redone, not skipped as unchanged; so is one whose chunks were written
        # for another version of its text (a run killed between an edit's chunks and its record, the file
        # then reverted: its record's hash matches again, while the chunks are the edit's, or both versions').
        chunked = store.chunk_paper_hashes()
        todo, loaded_ids = _to_do(by_file, stored, hashes, chunked, report)
        # A paper that vanished from a file we re-read was deleted or renumbered by its owner.
        gone = [pid for pid, (_, src) in stored.items() if src in by_file and pid not in loaded_ids]
        # Before anything is deleted: stored vectors of chunks whose text reappears under another id.
        chunks_of, by_text = stored_by_text(todo, index, chunker)
        todo_ids = {p.id for p, _ in todo}
        orphans = [pid for pid in chunked if pid not in stored and pid not in todo_ids]
        interrupted = store.write_interrupted()
        if todo or gone or orphans:
            store.bump_generation(writing=True)
        if gone:
            store.delete_papers(gone)
            report.removed = len(gone)
        # Chunks of a paper whose run was killed before its record (the commit mark) was written,
        # and which is not being ingested now: nothing else would ever remove them.
        if orphans:
            store.delete_papers(orphans)
        if on_total:
            on_total(len(todo))
        if on_stage and todo:
            on_stage(f"embedding {counted(len(todo), 'paper')} ({min(paper_batch, len(todo))} at a time)…")
        _write_batches(todo, index, chunker, (chunks_of, by_text), (paper_batch, write_batch), paths_now, report,
                       progress)
        for name in by_file:  # a file that moved: its unchanged papers learn the new path
            if stored_paths.get(name) != paths_now[name]:
                store.set_source_path([p.id for p in by_file[name] if p.id not in todo_ids], paths_now[name])
        if todo or gone or orphans or interrupted:  # interrupted: a killed writer's caches may be stale
            store.bump_generation()
        report.papers_total, report.chunks_total = store.counts()
        if build_lexical:  # the BM25 index and the exact-search matrix, so the first question is fast
            index.lexical()
            store.dense_matrix()
        return report
    finally:
        lock.release()


def _read_and_screen(paths: list, index: Index, chunker: Chunker, replace: bool, stored: dict,
                     files: dict[str, Path]) -> tuple[dict[str, list[Paper]], dict[str, str], dict[str, str],
                                                      IngestReport]:
    """``(papers by file, {paper id: content hash}, {file name: the path it was read from before}, a report
    holding the files skipped)``: the files read, less those the guards keep out (:mod:`vectorstore.ingest.guards`;
    fewer of them with ``replace``). ``stored``: the index's ``{paper id: (hash, file name)}``; ``files`` is
    filled with ``{file name: the path read}``."""
    store = index.store
    owners = {pid: src for pid, (_, src) in stored.items()}
    by_file, skipped = load_files(paths, owners, files)
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
    hashes = {p.id: content_hash(p, index.encoder.name, chunker.max_tokens, chunker.config)
              for papers in by_file.values() for p in papers}
    if not replace:
        skipped += guards.shrunk(by_file, indexed, store)
        skipped += guards.deleted_inside(by_file, indexed, store,
                                         {pid for pid, h in hashes.items() if stored.get(pid, ("",))[0] == h})
    return by_file, hashes, stored_paths, IngestReport(skipped=skipped, empty=empty)


def _to_do(by_file: dict[str, list[Paper]], stored: dict, hashes: dict[str, str], chunked: dict,
           report: IngestReport) -> tuple[list[tuple[Paper, str]], set[str]]:
    """``([(paper, hash) to embed and write], every paper id read)``, counting added, updated and unchanged
    papers in ``report``. A paper is unchanged when its record has its hash and its chunks were written for it."""
    todo: list[tuple[Paper, str]] = []
    loaded_ids: set[str] = set()
    for papers in by_file.values():
        for p in papers:
            loaded_ids.add(p.id)
            h = hashes[p.id]
            old = stored.get(p.id)
            if old and old[0] == h and p.id in chunked and chunked[p.id] <= {h, ""}:
                report.unchanged += 1
                continue
            todo.append((p, h))
            if old:
                report.updated += 1
            else:
                report.added += 1
    return todo, loaded_ids


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
