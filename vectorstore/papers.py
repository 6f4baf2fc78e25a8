"""Paper records and the loaders that make them: paper-list text files and JSONL.

Paper-list text format (the bundled ICML 2026 lists): the first line is a heading naming the venue
and year (e.g. "ICML 2026 论文列表"), then abstracts separated by blank lines. A paper's id is
``<file stem>#<1-based index>``.

JSONL format: one object per line with ``id`` and ``abstract`` (required) and optionally
``title``, ``authors`` (list or string), ``year``, ``venue``, ``url``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from vectorstore.jsonl import JsonlError, iter_jsonl


class CorpusError(ValueError):
    """A paper file that cannot be read; the message names the file (and line) and the problem."""


MAX_ABSTRACT_CHARS = 50_000
"""Longest abstract accepted (real ones are under 5,000 characters). A longer one is almost always
a paper list whose blank lines were lost, or a full text pasted in; its file is skipped with a
one-line reason instead of flooding the index and every answer that retrieves it."""


def _check_length(text: str, where: str, listing: bool = True) -> None:
    """CorpusError for an abstract over :data:`MAX_ABSTRACT_CHARS`; the hint fits the file's format
    (``listing``: a .txt paper list, whose abstracts blank lines separate; else a JSONL record)."""
    if len(text) > MAX_ABSTRACT_CHARS:
        hint = ("are the abstracts separated by blank lines?" if listing
                else "is a full text, or several abstracts, in this record's abstract field?")
        raise CorpusError(f"{where} is {len(text):,} characters long; the limit is {MAX_ABSTRACT_CHARS:,} ({hint})")


class Paper(BaseModel):
    """One abstract, the unit that answers cite."""

    id: str = Field(min_length=1)
    text: str = Field(min_length=1, description="the abstract, exactly as in the source file")
    title: str = ""
    label: str = Field("", description="short display name, e.g. 'OmniMoE'")
    authors: list[str] = Field(default_factory=list)
    venue: str = ""
    year: int | None = None
    url: str = ""
    source: str = Field("", description="file the paper came from (file name only)")

    def display(self) -> str:
        """Label for lists and citations: title if known, else the derived label."""
        return self.title or self.label or self.id

    def searchable(self) -> str:
        """Title and abstract, for matching words ("Which paper is titled …?"); the abstract alone if untitled."""
        return f"{self.title}\n{self.text}" if self.title else self.text

    @property
    def links(self) -> list[str]:
        """The code and project links the abstract gives, as written (:func:`code_links`)."""
        return code_links(self.text)


_URL = re.compile(r"https?://[^\s<>\"'{}\\`\[\]]+", re.I)
CODE_HOSTS = ("github.com", "gitlab.com", "bitbucket.org", "codeberg.org", "huggingface.co", "sourceforge.net",
              "github.io", "gitlab.io", "colab.research.google.com", "zenodo.org", "kaggle.com")
"""Hosts of code, models and project pages: a link to one is a "code" link, any other a project page."""


def code_links(text: str) -> list[str]:
    """The http(s) URLs an abstract gives (bare, ``\\url{…}``, ``\\href{…}{…}``, ``[…](…)``), in order and
    once each, with the sentence punctuation after them and an unbalanced closing bracket cut off.
    Abstracts link their code, models, data or project page; nothing else links from an abstract."""
    out: list[str] = []
    for m in _URL.finditer(text):
        url = m.group(0).rstrip(".,;:!?*_~")
        while url and url[-1] in ")]" and url.count(url[-1]) > url.count("(" if url[-1] == ")" else "["):
            url = url[:-1].rstrip(".,;:!?")
        if len(url) > len("https://") + 3 and url not in out:
            out.append(url)
    return out


def is_code_link(url: str) -> bool:
    """True for a link to a code, model or project host (:data:`CODE_HOSTS`)."""
    host = re.sub(r"^https?://(?:www\.)?", "", url.lower()).split("/")[0]
    return any(host == h or host.endswith("." + h) for h in CODE_HOSTS)


# --- labels ------------------------------------------------------------------------------------
_INTRO = re.compile(
    r"\b(?:we|We)\s+(?:introduce|propose|present|develop|design|build|construct|release|call)\s+"
    r"(?:a|an|the)?\s*(?:[\w-]+\s+){0,6}?"
    r"(?P<name>(?:[A-Z][\w-]*[A-Z0-9][\w-]*|[A-Z][a-z]+[A-Z][\w-]*)(?:[-\s][A-Z0-9][\w-]*)?)"
)
_INTRO_VERB = re.compile(
    # "we propose X", "We therefore propose X", "we reformulate … and present X"
    r"\b[Ww]e\s+(?:[^.;]{0,120}?\s(?:and|then)\s+)?"
    r"(?:(?:first|then|also|further|therefore|thus|hence|here|now|finally|additionally|instead|next)\s+)?"
    r"(?:introduce|propose|present|develop|design|build|construct|release|call)\b"
)
_PAREN_ACRONYM = re.compile(r"\((?P<name>\*{0,2}[A-Z][A-Za-z0-9-]*[A-Z0-9][A-Za-z0-9-]*)\)")
_NAMED = re.compile(r"\b(?:called|named|dubbed|termed)\s+(?P<name>[A-Z][\w-]+)")
_CAPWORD = re.compile(r"(?<![\w-])(?P<name>[A-Z][a-z]*[A-Z][\w-]*|[A-Z]{2,}[\w-]*)(?![\w-])")
_GENERIC = {
    "LLM", "LLMs", "AI", "RL", "VLM", "VLMs", "MLLM", "MLLMs", "RM", "RMs", "CT", "GPU", "GPUs", "NLP",
    "CNN", "CNNs", "API", "SOTA", "MoE", "LLMs'", "GRPO", "PPO", "DPO", "CLIP", "ViT", "QA", "3D", "2D",
}


def derive_label(text: str, max_words: int = 6) -> str:
    """A short display label for an abstract: the name it introduces, else its first words.

    Heuristics, in order: "we introduce/propose X" where X looks like a name (capitals inside a
    word, e.g. "OmniMoE", "Reward Auditor" is caught by the title-case variant); "called/named X";
    the most frequent non-generic capitalised token; otherwise the first ``max_words`` words + "…".
    Returns a non-empty string for non-empty text.
    """
    head = " ".join(text.split())
    # The sentences that introduce the contribution carry the name. A name the verb introduces
    # itself ("we propose Unlearning to Align (U2A)", "we present World Shaper", "called X") beats
    # one merely mentioned there ("we propose a framework linking PA with …"); among equals, the one
    # the abstract repeats most, then the first found.
    direct: list[str] = []
    mentioned: list[str] = []
    for sentence in re.split(r"(?<=[.!?])\s+", head):
        verb = _INTRO_VERB.search(sentence)
        if not verb:
            continue
        rest = sentence[verb.end():]
        for m in _PAREN_ACRONYM.finditer(rest):
            near = len(rest[: m.start()].split()) <= 8
            (direct if near else mentioned).append(m.group("name").strip("*-,."))
        direct += [m.group("name").strip("*-,.") for m in _NAMED.finditer(rest)]
        # A name's capitalized words after it are part of it: "we present FlashMoE Lite" names FlashMoE Lite.
        m = re.match(r"\s*(?:a|an|the)?\s*(?P<name>(?:[A-Z][a-z]+[\s-]){1,4}[A-Z][a-z]+|(?:[A-Z][\w-]*[A-Z0-9][\w-]*|"
                     r"[A-Z][a-z]+[A-Z][\w-]*)(?<!-)(?: [A-Z][A-Za-z0-9]*(?![\w-])){0,2})(?![\w-])", rest)
        if m:
            direct.append(m.group("name").rstrip("-"))
        m = _INTRO.search(sentence)
        if m:
            mentioned.append(m.group("name").rstrip("-,."))
    for tier in (direct, mentioned):
        names = [c for c in dict.fromkeys(tier) if c and c not in _GENERIC]
        if names:
            uses = {c: len(re.findall(rf"(?<![\w-]){re.escape(c)}(?![\w-])", head)) for c in names}
            return max(names, key=lambda c: (uses[c], -names.index(c)))
    counts: dict[str, int] = {}
    for m in _CAPWORD.finditer(head):
        name = m.group("name").rstrip("-")
        if name not in _GENERIC and not name.endswith("s'") and len(name) > 2:
            counts[name] = counts.get(name, 0) + 1
    if counts:
        best = max(counts.items(), key=lambda kv: (kv[1], -head.find(kv[0])))
        if best[1] >= 2:
            return best[0]
    words = head.split()
    label = " ".join(words[:max_words])
    # Scripts without spaces between words (Chinese, Japanese) would make the whole abstract one "word".
    cut = 48
    if len(label) > cut:
        return label[:cut].rstrip() + "…"
    return label + ("…" if len(words) > max_words else "")


# --- paper-list text ---------------------------------------------------------------------------
_VENUE_YEAR = re.compile(r"(?P<venue>[A-Za-z][A-Za-z&\-]*?)[\s\-]*'?(?P<year>(?:19|20)\d{2})\b")
_YEAR_VENUE = re.compile(r"\b(?P<year>(?:19|20)\d{2})[\s\-]+(?P<venue>[A-Za-z][A-Za-z&\-]*[A-Za-z])")
_INVISIBLE_CHARS = "\u00ad\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff"
"""A regex class body: characters that take no space (zero-width space, non-joiner and joiner, word joiner,
BOM, soft hyphen, direction marks and embeddings); whitespace aside, a line of only these looks blank."""
# Blank lines between abstracts; text pasted from the web or a CJK editor leaves no-break, ideographic
# or zero-width spaces (or direction marks, soft hyphens) on them, which must not merge two abstracts into one.
_BLANK_LINE = re.compile(rf"\n(?:[^\S\n]|[{_INVISIBLE_CHARS}])*\n")
MAX_HEADING_CHARS, MAX_HEADING_WORDS = 200, 20
"""A first line longer than this is an abstract, not a heading (headings name a venue and a year)."""


_ZERO_WIDTH = re.compile(f"[{_INVISIBLE_CHARS}]")
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


def read_text(path: Path) -> str:
    """The file decoded as UTF-8 (a BOM is dropped). Raises CorpusError on invalid bytes, and on NUL
    bytes (UTF-16 text or a binary file decodes as "valid" UTF-8 full of NULs)."""
    data = path.read_bytes()
    if b"\x00" in data:
        line = data[: data.index(b"\x00")].count(b"\n") + 1
        raise CorpusError(f"{path}: NUL bytes (line {line}): not UTF-8 text (UTF-16 or binary?); re-save the "
                          "file as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise CorpusError(f"{path}: invalid UTF-8 at byte {exc.start} (line {line}); re-save the file as UTF-8") from exc


_INVISIBLE = re.compile(rf"[\s{_INVISIBLE_CHARS}]+")


def visible(text: str) -> bool:
    """True when ``text`` holds a character one can see: whitespace, zero-width characters, no-break
    spaces and BOMs alone are no abstract, title or id (a list "emptied" to them must not replace its
    papers with one invisible paper)."""
    return bool(_INVISIBLE.sub("", text))


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
        _check_length(block, f"{path}: abstract #{len(papers) + 1}")
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


# --- JSONL --------------------------------------------------------------------------------------
def _as_authors(value) -> list[str]:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return []
    if isinstance(value, str):
        # "A and B" and "A; B" keep "Last, First" names whole; only a plain list splits on commas.
        sep = r"\s+and\s+" if re.search(r"\s+and\s+", value) else ";" if ";" in value else ","
        return [a.strip() for a in re.split(sep, value) if a.strip()]
    if isinstance(value, list):
        out = []
        for a in value:
            if a is None or (isinstance(a, float) and not math.isfinite(a)):
                continue
            if isinstance(a, dict):
                a = a.get("name") or " ".join(str(v) for v in a.values() if v)
            out.append(str(a).strip())
        return [a for a in out if a]
    return [str(value)]


def _as_text(value) -> str:
    """A metadata string: strings and numbers as text, ``{"name": ...}`` as its name; other nested values ""."""
    if isinstance(value, dict):
        value = value.get("name")
    if isinstance(value, float) and not math.isfinite(value):
        return ""  # a spreadsheet's empty cell exported as NaN is no title "nan"
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        return str(value).strip()
    return ""


MIN_YEAR, MAX_YEAR = 1000, 2100
"""Publication years a record may give. A year outside them (1e30, 2**63, Infinity: typing slips or
broken exports) is refused at load, since the store cannot hold one past 64 bits and a filter on it
would be meaningless."""


def _as_year(value, where: str) -> int | None:
    """A record's year as an int, or None when it gives none (null, "", or text such as "n/a").
    Raises CorpusError for a number that is no plausible year."""
    if value is None or isinstance(value, str) and not value.strip():
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None  # "n/a", "forthcoming": no year
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return None
    if not (MIN_YEAR <= value <= MAX_YEAR):  # inf fails here, NaN too (every comparison is False)
        raise CorpusError(f"{where}: 'year' {value!r} is not a plausible year (expected {MIN_YEAR}–{MAX_YEAR})")
    return int(value)


MAX_FIELD_CHARS = {"title": 1_000, "venue": 500, "url": 2_000}
MAX_AUTHORS, MAX_AUTHOR_CHARS = 1_000, 300
"""Limits of a record's metadata: far above any real paper's, so that one broken export (a 2 MB
title, 100,000 authors) is refused naming its line instead of making every answer and MCP reply
that shows the paper megabytes long."""


def _check_metadata(title: str, venue: str, url: str, authors: list[str], where: str) -> None:
    for name, value in (("title", title), ("venue", venue), ("url", url), ("authors", " ".join(authors))):
        if any("\ud800" <= ch <= "\udfff" for ch in value):  # a lone surrogate: no valid text, and it
            # would fail the whole ingest when the record is hashed
            raise CorpusError(f"{where}: '{name}' holds an invalid character (a lone UTF-16 surrogate such as "
                              "\\udc80); fix the record")
    for name, value in (("title", title), ("venue", venue), ("url", url)):
        if len(value) > MAX_FIELD_CHARS[name]:
            raise CorpusError(f"{where}: '{name}' is {len(value):,} characters long; the limit is "
                              f"{MAX_FIELD_CHARS[name]:,}")
    if len(authors) > MAX_AUTHORS:
        raise CorpusError(f"{where}: 'authors' lists {len(authors):,} names; the limit is {MAX_AUTHORS:,}")
    longest = max(authors, key=len, default="")
    if len(longest) > MAX_AUTHOR_CHARS:
        raise CorpusError(f"{where}: an author name is {len(longest):,} characters long; the limit is "
                          f"{MAX_AUTHOR_CHARS:,}")


def load_jsonl(path: str | Path) -> list[Paper]:
    """Papers of a JSONL file of ``{id, title, abstract, authors, year, venue, url}`` records.

    ``abstract`` may also be called ``text``. Missing optional fields get defaults; ``authors`` may be
    a list (of strings or ``{"name": ...}`` objects), a string or null; nested extra fields are ignored.
    Raises CorpusError naming the line for invalid JSON, a missing id, an id used twice in the file,
    a missing/empty abstract, a year outside ``MIN_YEAR``–``MAX_YEAR``, or metadata over
    ``MAX_FIELD_CHARS`` / ``MAX_AUTHORS``.
    """
    path = Path(path)
    papers = []
    first_line: dict[str, int] = {}
    for lineno, rec in _jsonl_records(path):
        abstract = rec.get("abstract") or rec.get("text")
        if not isinstance(abstract, str) or not visible(abstract):
            raise CorpusError(f"{path}:{lineno}: record has no 'abstract' text")
        _check_length(abstract.strip(), f"{path}:{lineno}: abstract", listing=False)
        pid = rec.get("id")
        if isinstance(pid, (dict, list, bool)):
            raise CorpusError(f"{path}:{lineno}: record 'id' must be a string or a number")
        if pid is None or not visible(str(pid)):
            raise CorpusError(f"{path}:{lineno}: record has no 'id'")
        year = _as_year(rec.get("year"), f"{path}:{lineno}")
        title = _as_text(rec.get("title"))
        key = str(pid).strip()
        if key in first_line:
            raise CorpusError(f"{path}:{lineno}: id {key!r} is used again (first on line {first_line[key]}); "
                              "ids must be unique")
        first_line[key] = lineno
        try:
            papers.append(_jsonl_paper(rec, pid, abstract, title, year, path, f"{path}:{lineno}"))
        except ValidationError as exc:  # e.g. a lone surrogate (\ud800) that is no valid text
            raise CorpusError(f"{path}:{lineno}: invalid record ({exc.errors()[0].get('msg', 'invalid')})") from exc
    return papers


def _jsonl_records(path: Path) -> Iterator[tuple[int, dict]]:
    """:func:`vectorstore.jsonl.iter_jsonl` over the checked text of ``path``, raising CorpusError."""
    try:
        yield from iter_jsonl(path, read_text(path))
    except JsonlError as exc:
        raise CorpusError(str(exc)) from exc


def _jsonl_paper(rec: dict, pid, abstract: str, title: str, year, path: Path, where: str = "") -> Paper:
    authors, venue, url = _as_authors(rec.get("authors")), _as_text(rec.get("venue")), _as_text(rec.get("url"))
    _check_metadata(title, venue, url, authors, where or str(path))
    return Paper(
        id=str(pid).strip(), text=abstract.strip(), title=title, label=title or derive_label(abstract),
        authors=authors, venue=venue, year=year, url=url, source=path.name,
    )


SUPPORTED_SUFFIXES = (".txt", ".jsonl")


def counted(n: int, noun: str) -> str:
    """``"1 paper"``, ``"3 papers"``: a count with its noun (plural by an added s)."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


def iter_paper_files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Expand files and folders (with their subfolders, hidden ones left out) into supported paper
    files (sorted within a folder), each file once
    however often it is named (``data/x.txt``, ``./data/x.txt`` and ``data/`` are one file).

    Raises CorpusError for a path that does not exist or a file of an unsupported type.
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
            # Subfolders too ("papers/2024/a.jsonl"); extensions in any case ("list.TXT").
            yield from once(sorted(f for f in p.rglob("*") if f.suffix.lower() in SUPPORTED_SUFFIXES and f.is_file()
                                   and not any(part.startswith(".") for part in f.relative_to(p).parts)))
        elif p.is_file():
            if p.suffix.lower() not in SUPPORTED_SUFFIXES:
                raise CorpusError(f"{p}: unsupported file type {p.suffix!r} (use .txt paper lists or .jsonl)")
            yield from once([p])
        else:
            raise CorpusError(f"{p}: no such file or folder")


def load_file(path: Path) -> list[Paper]:
    """Papers of one ``.jsonl`` file or ``.txt`` paper list (extension in any case); raises CorpusError."""
    return load_jsonl(path) if Path(path).suffix.lower() == ".jsonl" else load_paper_list(path)


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
