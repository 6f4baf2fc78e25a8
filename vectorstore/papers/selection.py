"""What a reading of a paper file keeps and what it passes over: the papers an ingest asks for
(:class:`Selection`: ``--category``, ``--since``) and the tally of the entries left behind (:class:`Tally`: those
malformed, each named with its line, those without an abstract, those the selection left out)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import date


@dataclass(frozen=True)
class Selection:
    """Which papers of a file to read. ``category``: only papers listed in it (arXiv's ``cs.LG``; ignoring case);
    ``since``: only papers of that day or later: an arXiv record by its ``update_date``, a paper of another format
    by its year (a paper without one is left out). No field set: every paper."""

    category: str | None = None
    since: date | None = None

    def active(self) -> bool:
        return bool(self.category) or self.since is not None

    def admits(self, categories: Iterable[str], day: str | None = None, year: int | None = None) -> bool:
        """True when a paper of these ``categories`` and ``day`` (``YYYY-MM-DD``) or, without a day, ``year`` passes."""
        if self.category and self.category.casefold() not in {c.casefold() for c in categories}:
            return False
        if self.since is None:
            return True
        if day:
            return day[:10] >= self.since.isoformat()
        return year is not None and year >= self.since.year

    def __str__(self) -> str:
        """The options that make it: ``--category cs.LG --since 2024-01-01``."""
        parts = ([f"--category {self.category}"] if self.category else []) + \
            ([f"--since {self.since.isoformat()}"] if self.since else [])
        return " ".join(parts)


def entries(n: int, kind: str = "") -> str:
    """``"1 entry"``, ``"3 malformed entries"``: a count of entries, ``kind`` before the noun, with thousands commas."""
    return f"{n:,} {kind + ' ' if kind else ''}{'entry' if n == 1 else 'entries'}"


MAX_NAMED = 1_000
"""Malformed entries named one by one per reading; past it they are counted (a broken 4 GB snapshot must not
fill memory with its lines)."""


@dataclass
class Tally:
    """The entries of one reading that gave no paper. ``skipped``: ``<file>:<line>: <reason>`` for each malformed
    entry (the first :data:`MAX_NAMED`; ``unnamed`` counts the rest); ``no_abstract``: entries without an abstract;
    ``left_out``: entries the :class:`Selection` left out, of which ``passed_over`` holds the ids that were asked
    about (``known``: already indexed), since their indexed papers stay as they are."""

    skipped: list[str] = field(default_factory=list)
    unnamed: int = 0
    no_abstract: int = 0
    left_out: int = 0
    passed_over: set[str] = field(default_factory=set)

    def bad(self, line: str) -> None:
        """Count a malformed entry, ``line`` being ``<file>:<line>: <reason>``."""
        if len(self.skipped) < MAX_NAMED:
            self.skipped.append(line)
        else:
            self.unnamed += 1

    @property
    def malformed(self) -> int:
        return len(self.skipped) + self.unnamed

    def add(self, other: Tally) -> None:
        """Add ``other``'s counts and lines to this one (a run's total over its files)."""
        for line in other.skipped:
            self.bad(line)
        self.unnamed += other.unnamed
        self.no_abstract += other.no_abstract
        self.left_out += other.left_out
        self.passed_over |= other.passed_over
