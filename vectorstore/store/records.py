"""How a paper and its chunks are written as Chroma records: the metadata keys the store reads back
(:data:`PAPER_HASH_KEY`, :data:`TEXT_KEY`, :data:`PATH_KEY`), the chunk text key (:func:`text_key`),
and a paper to and from its record's metadata (:func:`paper_metadata`, :func:`paper_from`)."""

from __future__ import annotations

import hashlib
import json

from vectorstore.papers import Paper


PAPER_HASH_KEY = "paper_hash"
"""Chunk metadata field holding the content hash of the paper version the chunk was written for. The paper
record's hash says which version was committed; a chunk of another version is left by an ingest killed
between writing a paper's chunks and its record (chunks written before this field was: absent)."""
TEXT_KEY = "text_sha"
"""Chunk metadata field holding :func:`text_key` of the chunk's text, so a chunk that moved to another
paper id (a renumbered or renamed paper list) finds its stored vectors by content."""


def text_key(text: str) -> str:
    """A short content hash of a chunk's text."""
    return hashlib.sha1(text.encode()).hexdigest()[:16]


PATH_KEY = "path"
"""Paper metadata: the resolved path of the file a paper was read from (not part of its content hash)."""


def paper_metadata(paper: Paper, content_hash: str) -> dict:
    """A paper record's metadata (without :data:`PATH_KEY`); ``content_hash`` marks the version committed."""
    meta = {
        "paper_id": paper.id,
        "title": paper.title,
        "label": paper.label,
        "authors": json.dumps(paper.authors, ensure_ascii=False),
        "venue": paper.venue,
        "url": paper.url,
        "source": paper.source,
        "hash": content_hash,
        "has_code": bool(paper.links),  # a filter ("papers with code"); the links are read from the text
        # None deletes the key: Chroma's upsert merges metadata, so a year taken out of a file would stay.
        "year": paper.year,
        # A list (Chroma's "$contains" filters on it), None without one: Chroma refuses an empty list.
        "categories": list(paper.categories) or None,
        "bibtex": json.dumps(paper.bibtex, ensure_ascii=False) if paper.bibtex else None,
    }
    return meta


def paper_from(doc: str, meta: dict) -> Paper:
    """The paper a stored record holds: its document (the abstract) and :func:`paper_metadata`'s fields."""
    return Paper(
        id=meta["paper_id"], text=doc, title=meta.get("title", ""), label=meta.get("label", ""),
        authors=json.loads(meta.get("authors") or "[]"), venue=meta.get("venue", ""),
        year=meta.get("year"), url=meta.get("url", ""), source=meta.get("source", ""),
        categories=list(meta.get("categories") or []), bibtex=json.loads(meta.get("bibtex") or "{}"),
    )
