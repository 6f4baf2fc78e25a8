"""``paper-assistant remove``: the papers (and chunks) of named paper files taken out of the index, the
counterpart of :func:`vectorstore.ingest.run.ingest` for a file renamed or no longer wanted."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from vectorstore.index import Index
from vectorstore.papers import CorpusError, SUPPORTED_SUFFIXES


def remove_sources(names: Iterable[str], index: Index) -> dict[str, int]:
    """Remove every paper (and its chunks) ingested from the paper files named ``names`` (file names
    such as ``papers.txt``, or without the extension; a path counts by its name). Returns
    ``{file name: papers removed}``.

    The counterpart of ingest for a file that was renamed or is no longer wanted (ingest only ever
    looks at the files it is given). Takes the writer lock (IndexInUseError); raises CorpusError,
    removing nothing, when a name matches no indexed file (the message lists the indexed ones).
    """
    store = index.store
    lock = index.writer_lock()
    try:
        stored = store.paper_hashes()
        by_source: dict[str, list[str]] = {}
        for pid, (_, src) in stored.items():
            by_source.setdefault(src, []).append(pid)
        stems: dict[str, list[str]] = {}
        for src in by_source:
            stems.setdefault(Path(src).stem, []).append(src)
        recorded = store.source_paths()
        for given in map(Path, names):
            # A path names one file: not the indexed file of the same name in another folder (whose papers
            # this would remove). A bare name, or a path that no longer exists (a renamed file), is a name.
            then = recorded.get(given.name)
            if _is_file(given) and then and Path(then) != given.resolve() and _is_file(Path(then)):
                raise CorpusError(f"{given}: the indexed papers of {given.name} come from another file, {then}; "
                                  f"nothing was removed (to remove those: paper-assistant remove {then})")
        wanted = []
        for n in (Path(x).name for x in names):
            # Only a name without a paper file's extension stands for its stem: "notes.txt" names notes.txt,
            # never notes.txt.jsonl (whose stem it is).
            by_stem = stems.get(n, []) if n not in by_source and Path(n).suffix.lower() not in SUPPORTED_SUFFIXES else []
            if len(by_stem) > 1:
                raise CorpusError(f"{n!r} is ambiguous: {', '.join(sorted(by_stem))}; give the file name with its "
                                  "extension (nothing was removed)")
            wanted.append(by_stem[0] if by_stem else n)
        unknown = [n for n in wanted if n not in by_source]
        if unknown:
            have = ", ".join(sorted(by_source)) or "none"
            raise CorpusError(f"no indexed papers come from {', '.join(map(_shown, unknown))}; indexed files: "
                              f"{have}")
        ids = [pid for n in dict.fromkeys(wanted) for pid in by_source[n]]
        if ids:
            store.bump_generation(writing="remove " + " ".join(dict.fromkeys(wanted)))
            store.delete_papers(ids)
            store.bump_generation()
            index.lexical()
            store.dense_matrix()
        return {n: len(by_source[n]) for n in dict.fromkeys(wanted)}
    finally:
        lock.release()


def _is_file(path: Path) -> bool:
    """``path.is_file()``, False for a path the system cannot look up (a name over its length limit:
    ENAMETOOLONG, which ``is_file`` raises)."""
    try:
        return path.is_file()
    except OSError:
        return False


def _shown(name: str, limit: int = 80) -> str:
    """``name`` for a one-line message: cut to ``limit`` characters (a 5,000-character name stays readable)."""
    return name if len(name) <= limit else f"{name[: limit - 1]}… ({len(name):,} characters)"
