"""The paper-list text loader (the bundled ICML 2026 lists): :func:`load_paper_list` and its heading parser.

Format: the first line is a heading naming the venue and year (e.g. "ICML 2026 论文列表"), then
abstracts separated by blank lines. A paper's id is ``<file stem>#<1-based index>``.
"""

from __future__ import annotations

import re
from pathlib import Path

from vectorstore.papers.checks import INVISIBLE_CHARS, check_length, read_text, visible
from vectorstore.papers.records import CorpusError, Paper, derive_label


_VENUE_YEAR = re.compile(r"(?P<venue>[A-Za-z][A-Za-z&\-]*?)[\s\-]*'?(?P<year>(?:19|20)\d{2})\b")
_YEAR_VENUE = re.compile(r"\b(?P<year>(?:19|20)\d{2})[\s\-]+(?P<venue>[A-Za-z][A-Za-z&\-]*[A-Za-z])")
# Blank lines between abstracts; text pasted from the web or a CJK editor leaves no-break, ideographic
# or zero-width spaces (or direction marks, soft hyphens) on them, which must not merge two abstracts into one.
_BLANK_LINE = re.compile(rf"\n(?:[^\S\n]|[{INVISIBLE_CHARS}])*\n")
MAX_HEADING_CHARS, MAX_HEADING_WORDS = 200, 20
"""A first line longer than this is an abstract, not a heading (headings name a venue and a year)."""


_ZERO_WIDTH = re.compile(f"[{INVISIBLE_CHARS}]")
"""Invisible characters (zero-width, soft hyphen, direction marks) that split a heading's words."""


_YEAR = re.compile(r"(?<!\d)(?:19|20)\d{2}(?!\d)")
_CONNECTIVES = frozenset({"in", "on", "of", "for", "and", "the", "&", "at", "to", "de"})
_NAME_WORD = re.compile(r"\(?[^\W\d_][\w&.\-\u2013/]*\)?")


def _venue_words(words: list[str]) -> list[str]:
    """The leading run of ``words`` that reads as (part of) a venue's name: capitalized words ("Neural",
    "NeurIPS", "(ICLR)", "arXiv") and the small words joining them ("in", "on", "of"); none at either end."""
    run = []
    for w in words:
        if not (w.lower() in _CONNECTIVES or (_NAME_WORD.fullmatch(w) and any(c.isupper() for c in w))):
            break
        run.append(w)
    while run and run[-1].lower() in _CONNECTIVES:
        run.pop()
    return run


def parse_heading(line: str) -> tuple[str, int | None]:
    """Venue and year from a paper list's heading line: "ICML 2026 论文列表", "ICML-2026" and
    "2026 ICML" all give ("ICML", 2026), "Advances in Neural Information Processing Systems 2016" its
    whole venue; a line without a year gives (the line, None)."""
    if len(line) > 4 * MAX_HEADING_CHARS:  # no heading: the venue regexes are quadratic (a 40,000-character first
        return line.strip(), None  # line took 63 s, 20 MB never ended: a thirteenth hostile round); callers refuse it
    line = _ZERO_WIDTH.sub("", line)  # "Neur\u200bIPS 2026" is NeurIPS, not "IPS"
    y = _YEAR.search(line)
    if y:  # the venue's words just before the year ("… Systems 2016", "ICLR2025"), else just after it
        before = _venue_words(line[: y.start()].rstrip(" \t-',").split()[::-1])[::-1]
        words = before or _venue_words(line[y.end():].lstrip(" \t-',").split())
        if words and not (len(words) == 1 and words[0].lower() in _CONNECTIVES):
            return " ".join(words).strip("-&"), int(y.group(0))
    m = _VENUE_YEAR.search(line) or _YEAR_VENUE.search(line)
    if not m:
        return line.strip(), None
    return m.group("venue").strip("-&"), int(m.group("year"))


def load_paper_list(path: str | Path) -> list[Paper]:
    """Papers of one paper-list text file, in file order.

    Returns [] for a file with only a heading. Raises CorpusError for an empty file, invalid
    UTF-8, a first line that is an abstract rather than a heading, or an abstract over
    ``MAX_ABSTRACT_CHARS``. Whitespace-only blocks are skipped without consuming an index, so ids stay
    ``<stem>#<position among abstracts>``.
    """
    path = Path(path)
    # "\r\r\n" (a CRLF file converted twice) is one line break, not a blank line between two abstracts.
    text = re.sub(r"\r+\n|\r", "\n", read_text(path))
    if not visible(text):
        raise CorpusError(f"{path}: file is empty (expected a heading line, then abstracts separated by blank lines)")
    heading, _, body = text.partition("\n")
    venue, year = parse_heading(heading)
    # A short sentence ("We study penguins.") is an abstract too: a heading with no year names a venue,
    # and a venue's name does not end like a sentence.
    sentence = year is None and re.search(r"[.!?。！？]\s*$", heading)
    if len(heading.strip()) > MAX_HEADING_CHARS or len(heading.split()) > MAX_HEADING_WORDS or sentence:
        raise CorpusError(f"{path}: the first line looks like an abstract, not a heading; add a first line "
                          "naming venue and year (e.g. 'ICML 2026')")
    # Framed by line breaks, so an invisible-only line right under the heading (or at the end) is a blank
    # line too, not the first (or last) line of an abstract: its "\u200b\n" would prefix the stored text.
    blocks = [b.strip() for b in _BLANK_LINE.split(f"\n{body}\n")]
    papers = []
    for block in blocks:
        if not visible(block):  # blank, or only zero-width / no-break spaces and BOMs: no abstract
            continue
        check_length(block, f"{path}: abstract #{len(papers) + 1}")
        papers.append(
            Paper(
                id=f"{path.stem}#{len(papers) + 1}",
                text=block,
                label=derive_label(block),
                venue=venue,
                year=year,
                source=path.name,
            )
        )
    return papers
