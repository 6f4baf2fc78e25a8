"""What ingest refuses to do unless told: files whose re-read would lose or hide indexed papers.

A re-read paper file replaces what the index holds of it. When that would drop indexed papers (a
file emptied, cut short or edited down, or a paper list with one abstract deleted and another added),
strip their venue and year (a heading line deleted), shorten its last abstract to a prefix of itself (a
copy cut off mid-abstract), or put another folder's file of the same name in place of the indexed one (ids are ``<file stem>#<n>``), the file is skipped whole and
its papers stay: such files are far more often a failed copy, a bad save or a mix-up than a wish.
``paper-assistant ingest --replace`` takes a file as it is now; ``paper-assistant remove`` drops a
file's papers. Each guard returns one-line skip reasons and takes the files it skips out of
``by_file`` (``{file name: the file as read now}``, :class:`~vectorstore.ingest.reading.FileRead`).
"""

from __future__ import annotations

import os

from pathlib import Path

from vectorstore.ingest.reading import FileRead
from vectorstore.papers import KINDS, counted, entries, iter_paper_files, visible

REPLACE_HINT = "paper-assistant ingest --replace {name}"


def empty_inputs(paths: list[str | Path], by_file: dict[str, FileRead], indexed: dict[str, set[str]]
                 ) -> tuple[list[str], list[str]]:
    """``(warnings, skip reasons)`` for inputs without a paper, taking the emptied files out of ``by_file``.

    A folder without a paper file, a new file without a paper, and a file none of whose papers the selection
    (``--category``, ``--since``) admits, is a warning. A file read without a paper whose papers are indexed
    (``indexed``: ``{file name: paper ids}``) is skipped and its papers stay: a file truncated to 0 bytes, or left
    with blank lines or a BOM, is far more often a failed copy than a wish, and removal is explicit
    (``paper-assistant remove``).
    """
    # False where p cannot be reached; a folder that cannot be listed is skipped with that reason instead
    warnings = [f"{p}: no paper files ({KINDS}) in this folder" for p in map(Path, paths)
                if os.path.isdir(p) and os.access(p, os.R_OK | os.X_OK) and next(iter_paper_files([p]), None) is None]
    skipped = []
    for name in [n for n, read in by_file.items() if not len(read)]:
        tally = by_file.pop(name).tally
        n = len(indexed.get(name, ()))
        parts = ([f"{entries(tally.left_out)} left out by the selection"] if tally.left_out else []) + \
            ([f"{entries(tally.no_abstract)} without an abstract"] if tally.no_abstract else []) + \
            ([entries(tally.malformed, "malformed")] if tally.malformed else [])
        why = f" ({', '.join(parts)})" if parts else ""
        if tally.left_out:  # the selection's doing, not the file's: its indexed papers stay as they are
            warnings.append(f"{name}: no paper in it passes the selection{why}")
        elif n:
            skipped.append(f"{name}: no papers in this file{why}, but {counted(n, 'paper')} of it "
                           f"{'is' if n == 1 else 'are'} indexed; they were kept (to drop them: "
                           f"paper-assistant remove {name})")
        else:
            warnings.append(f"{name}: no papers in this file{why}")
    return warnings, skipped


MOSTLY_GONE = 0.5
"""A re-read file missing more than this share of its indexed papers gets the "cut short?" hint."""


def shrunk(by_file: dict[str, FileRead], indexed: dict[str, set[str]], store) -> list[str]:
    """Skip reasons for the files of ``by_file`` that no longer hold some of their indexed papers, or
    whose last abstract is now a proper prefix of its indexed text (the file cut off inside it).
    ``indexed``: ``{file name: paper ids}``; ``store``: the VectorStore holding them (one paper read per
    file). A paper moved to another file read in the same run is not missing, nor is one the selection
    (``--category``, ``--since``) passed over."""
    out = []
    read_now = {pid for read in by_file.values() for pid in (*read.hashes, *read.tally.passed_over)}
    for name in list(by_file):
        had = indexed.get(name, set())
        if not had:
            continue
        last = by_file[name].last
        missing = had - read_now
        old = store.get_papers([last.id]).get(last.id) if not missing and last is not None else None
        cut = old is not None and len(last.text) < len(old.text) and old.text.startswith(last.text)
        if not missing and not cut:
            continue
        del by_file[name]
        if missing:
            hint = ((" (cut short, or its blank lines lost?)" if name.lower().endswith(".txt") else " (cut short?)")
                    if len(missing) > MOSTLY_GONE * len(had) else "")
            what = (f"{len(missing)} of its {counted(len(had), 'indexed paper')} "
                    f"{'is' if len(missing) == 1 else 'are'} no longer in it{hint}")
        else:
            what = f"its last abstract ({last.id}) is now cut off inside its indexed text (file cut short?)"
        out.append(f"{name}: {what}; nothing of it was changed. To take the file as it is now: "
                   + REPLACE_HINT.format(name=name))
    return out


def deleted_inside(by_file: dict[str, FileRead], indexed: dict[str, set[str]], store, unchanged: set[str]
                   ) -> list[str]:
    """Skip reasons for the paper lists (.txt, and .csv without a key column) of ``by_file`` from which an abstract
    was deleted while another was added: ids are positions (``<stem>#<n>``), so the count stays, the later abstracts
    move up one id and the deleted one's text would silently leave the index. Seen as an indexed text
    that is nowhere in the files read now while another indexed text of the file moved to another id.
    An append (every indexed text at its id) and edits in place (no text moved) are taken.
    ``unchanged``: ids whose stored content hash matches the paper read now (their text is not fetched)."""
    out = []
    read_now = {p.text for read in by_file.values() for p in read.held or ()}
    for name in list(by_file):
        had = indexed.get(name, set())
        if not had or not name.lower().endswith((".txt", ".csv")) or by_file[name].held is None:
            continue
        now = {p.id: p.text for p in by_file[name].held}
        old = store.get_papers([pid for pid in now if pid in had and pid not in unchanged])
        moved = [pid for pid, p in old.items() if p.text != now[pid] and p.text in read_now]
        gone = sorted((pid for pid, p in old.items() if p.text not in read_now), key=_position)
        if not moved or not gone:
            continue
        del by_file[name]
        n = len(gone)
        out.append(f"{name}: the indexed text of {', '.join(gone[:3])}{'…' if n > 3 else ''} {'is' if n == 1 else 'are'} "
                   f"no longer in it while later abstracts moved up (deleted, and {'another' if n == 1 else 'others'} "
                   f"added?); nothing of it was changed. To take the file as it is now: "
                   + REPLACE_HINT.format(name=name))
    return out


def _position(pid: str) -> tuple[str, int]:
    stem, _, n = pid.rpartition("#")
    return stem, int(n) if n.isdigit() else 0


def lost_heading(by_file: dict[str, FileRead], indexed: dict[str, set[str]], store) -> list[str]:
    """Skip reasons for the files of ``by_file`` that no longer give the venue or the year their indexed
    papers have: a paper list whose first line was deleted or blanked (no venue, no year), or deleted so
    that the first abstract's title line became the "heading" (its first paper is then its indexed text
    without its first line, whatever that line looks like: "ImageNet 2012 Revisited" parses as a venue and
    a year); a JSONL re-export whose records all lost their year or venue. Ingested, the papers would lose
    both, and a venue or year filter would miss them. A heading changed to another venue and year is
    taken. ``indexed``: ``{file name: paper ids}``, ``store``: the VectorStore."""
    out = []
    for name in list(by_file):
        read = by_file[name]
        if not len(read) or not indexed.get(name):
            continue
        # All of the file's indexed papers (metadata only): a sample missed a year the later ones give.
        venue, year = store.source_heading(name)
        listing = name.lower().endswith(".txt")
        lost = [what for what, had, has in (
            ("year", year is not None, read.has_year), ("venue", visible(venue), read.has_venue)) if had and not has]
        head = read.head[0]
        first = store.get_papers([head.id]).get(head.id) if listing and not lost else None
        if first is not None and _lost_first_line(first.text, head.text):
            lost = ["venue", "year"]
        if not lost:
            continue
        del by_file[name]
        heading = " ".join(str(x) for x in (venue, year) if x not in ("", None))
        n = len(indexed[name])
        their = f"its {counted(n, 'indexed paper')} {'has' if n == 1 else 'have'} ({heading!r})"
        if listing:
            out.append(f"{name}: its heading line no longer gives the venue and year {their}: deleted?; nothing of "
                       f"it was changed. Put the heading back as its first line (e.g. '{heading}'), or to take the "
                       f"file as it is now: " + REPLACE_HINT.format(name=name))
        else:
            out.append(f"{name}: no record in it gives a {' or '.join(lost)} any more, while {their}; nothing of it "
                       f"was changed. To take the file as it is now: " + REPLACE_HINT.format(name=name))
    return out


def _lost_first_line(old: str, new: str) -> bool:
    """True when ``new`` is ``old`` without its first line (that line was read as the heading)."""
    head, sep, rest = old.partition("\n")
    return bool(sep) and rest.strip() == new.strip() and visible(head)


def taken_ids(by_file: dict[str, FileRead], owners: dict[str, str], store, replace: bool) -> list[str]:
    """Skip reasons for the files of ``by_file`` holding a paper id indexed under another file (``owners``:
    ``{paper id: file name}``). Ingest takes that as a paper moved between files read together
    (vectorstore.ingest.reading.load_files has refused ids whose owner was not read, or still holds them), but
    only while the owner is taken too (not skipped by a guard: its papers are kept, so its ids stay its
    own) and, unless ``replace``, the paper's text is the indexed one (another text under the same id is
    another paper). Repeated until no file is skipped, since each skip keeps more ids."""
    out: list[str] = []
    while found := next(((name, why) for name in by_file
                         if (why := _bad_claim(by_file, name, owners, store, replace))), None):
        del by_file[found[0]]
        out.append(f"{found[0]}: {found[1]}; ids must be unique across files, so nothing of {found[0]} was ingested")
    return out


def _bad_claim(by_file: dict[str, FileRead], name: str, owners: dict[str, str], store, replace: bool) -> str:
    """Why file ``name`` may not take an id indexed under another file (see :func:`taken_ids`), or ""."""
    claims = [pid for pid in by_file[name].hashes if owners.get(pid, name) != name]
    held = store.get_papers(claims) if claims and not replace else {}
    now = by_file[name].get(held) if held else {}
    for pid in claims:
        if owners[pid] not in by_file:
            return f"paper id {pid!r} belongs to {owners[pid]}, which was skipped (its papers are kept)"
        if pid in held and pid in now and held[pid].text != now[pid].text:
            return f"paper id {pid!r} belongs to {owners[pid]}, under another text (another paper)"
    return ""


def other_folder(by_file: dict[str, FileRead], files: dict[str, Path], stored_paths: dict[str, str],
                 store) -> list[str]:
    """Skip reasons for the files of ``by_file`` whose indexed papers were read from another file of the
    same name that still exists (``stored_paths``: ``{file name: resolved path it was ingested from}``;
    ``files``: ``{file name: the path read now}``). Ids come from the file name, so this file would
    silently replace that one's papers. A file whose recorded path is gone has moved (taken, unless
    none of its first 20 papers has its indexed text: then it is another file), and one with the same
    bytes as the recorded one is a copy (taken). ``store``: the VectorStore."""
    out = []
    for name in list(by_file):
        before = stored_paths.get(name)
        if not before:
            continue
        now, then = files[name].resolve(), Path(before)
        if then == now or _same_bytes(then, now):  # the same file, or a copy (a project copied whole)
            continue
        if not then.is_file():  # moved, unless not one of its first papers is an indexed one: another file
            first = by_file[name].head
            held = store.get_papers([p.id for p in first])
            if not held or any(p.id in held and held[p.id].text == p.text for p in first):
                continue
            why = f"{name} is indexed from {before}, which is gone, and none of this file's first papers is one of its"
        else:
            why = f"the indexed papers of {name} come from another file, {before}"
        del by_file[name]
        out.append(f"{files[name]}: {why}; ids come from the file name, so this one would replace them; nothing of "
                   f"it was ingested. Rename one of the two, or to put this one in its place: "
                   + REPLACE_HINT.format(name=files[name]))
    return out


def _same_bytes(a: Path, b: Path) -> bool:
    try:
        return a.stat().st_size == b.stat().st_size and a.read_bytes() == b.read_bytes()
    except OSError:
        return False
