"""Metadata filters of a search (:class:`Filters`: venue, year, source file, category, code links), the index's own
spelling of their values (:func:`resolve_filters`), and the words that say where a count was taken or why nothing
was found (:func:`filters_scope`, :func:`filtered_note`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from vectorstore.papers import Paper
from vectorstore.store import where_clause

FIELDS = ("venue", "year", "source", "category")
"""The filters that name a value, in the order a line names them."""


@dataclass
class Filters:
    """Metadata filters; None means any. ``source`` is a file name such as ``000_x.txt``; ``category`` one of a
    paper's categories (arXiv's ``cs.LG``). After :func:`resolve_filters` a venue may be a list: every spelling the
    index holds ("NeurIPS", "neurips")."""

    venue: str | list[str] | None = None
    year: int | None = None
    source: str | None = None
    has_code: bool | None = None
    """True: only papers whose abstract links code or a project page (``Paper.links``)."""
    category: str | None = None
    resolved: bool = False
    """Set by :func:`resolve_filters`: the values are the index's own, so resolving again is skipped."""

    def admits(self, paper: Paper) -> bool:
        """True when ``paper`` passes every (resolved) filter."""
        for want, have in ((self.venue, paper.venue), (self.year, paper.year), (self.source, paper.source)):
            if want is not None and have not in (want if isinstance(want, list) else [want]):
                return False
        if self.category is not None and self.category not in paper.categories:
            return False
        return not self.has_code or bool(paper.links)

    def where(self) -> dict | None:
        """The store's filter for these values (vectorstore.store.client.where_clause), None for no filter."""
        return where_clause({"venue": self.venue, "year": self.year, "source": self.source,
                             "has_code": True if self.has_code else None,
                             # a paper's categories are a list: the filter asks that it hold this one
                             "categories": {"$contains": self.category} if self.category is not None else None})

    def active(self) -> bool:
        return any(getattr(self, name) is not None for name in FIELDS) or bool(self.has_code)


def filters_scope(filters: Filters | None) -> str:
    """Where a count was taken, for its line: "" without filters, else e.g. "in 004_….txt from 2026"
    (source, venue, year, category), so "2 papers match" never reads as the whole index."""
    if filters is None or not filters.active():
        return ""
    parts = []
    for name, word in (("source", "in"), ("venue", "at"), ("year", "from"), ("category", "in")):
        value = getattr(filters, name)
        if value is not None:
            shown = ", ".join(map(str, value)) if isinstance(value, list) else str(value)
            parts.append(f"{word} {shown}")
    if filters.has_code:
        parts.append("with code")
    return " ".join(parts)


def filtered_note(filters: Filters) -> str:
    """The note of an answer that found nothing while ``filters`` narrowed the search."""
    shown = []
    for name in FIELDS:
        value = getattr(filters, name)
        if value is not None:
            shown.append(f"{name} {value[0] if isinstance(value, list) and value else value}")
    if filters.has_code:
        shown.append("with code")
    return f"Only papers matching the filters ({', '.join(shown)}) were searched: clear them to search every paper."


class FilterError(ValueError):
    """A metadata filter matches no indexed paper; the message lists the values the index holds."""


def resolve_filters(filters: Filters, values: Callable[[str], set]) -> Filters:
    """``filters`` with each value replaced by the index's own spelling of it: venue ignoring case
    (every spelling present, as a list when there are several), category ignoring case (the index's spelling,
    an exact one first), source with or without its file extension (``000_x`` → ``000_x.txt``). ``values(field)``
    gives the distinct values the index holds (``categories``: each category). Raises FilterError naming them when
    a value matches none, or when a source without extension names two files (``x`` for ``x.txt`` and ``x.jsonl``).
    """
    if filters.resolved:
        return filters
    out = {}
    for name, want in ((n, getattr(filters, n)) for n in FIELDS):
        if want is None or isinstance(want, list):
            out[name] = want
            continue
        have = values("categories" if name == "category" else name)
        if name in ("venue", "category"):
            match = [v for v in have if str(v).casefold() == str(want).casefold()]
        elif name == "source":
            match = [v for v in have if v == want] or [v for v in have if str(v).rsplit(".", 1)[0] == want]
        else:
            match = [v for v in have if v == want]
        match = sorted(match, key=str)
        if name == "category":
            match.sort(key=lambda v: v != want)  # the spelling asked for, when the index holds it, else the first
        if not match:
            listed = ", ".join(sorted(map(str, have))[:12]) + (", …" if len(have) > 12 else "")
            raise FilterError(f"no indexed paper has {name} {want!r}; the index has: {listed or 'none'}")
        if name == "source" and len(match) > 1:
            raise FilterError(f"source {want!r} is ambiguous: {', '.join(match)}; give the file name with its extension")
        out[name] = match if name == "venue" and len(match) > 1 else match[0]
    return Filters(**out, has_code=filters.has_code or None, resolved=True)
