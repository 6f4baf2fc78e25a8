"""Sentence-aligned, token-bounded chunks of an abstract, each an exact substring with offsets.

Splitting uses LangChain's ``RecursiveCharacterTextSplitter`` with sentence boundaries as the first
separator and the embedding model's own tokenizer as the length function, so a chunk never exceeds
the encoder's input limit (nothing is silently truncated). Overlap is counted in word pieces.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Callable

from pydantic import BaseModel, Field

from vectorstore.papers import Paper

# A sentence ends at . ! ? (optionally followed by closing quotes/brackets) before whitespace and
# an upper-case letter, digit, quote or bracket. Abbreviations like "e.g." and "et al." are kept
# inside their sentence because a lower-case word follows them. The full-width 。！？ of Chinese and
# Japanese end a sentence whatever follows (those scripts put no space after them).
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[A-Z0-9\"'“‘(\[$\\*])|(?<=[。！？])[”’」』）]*\s*(?=\S)")
_NO_BREAK_BEFORE = re.compile(r"(?:\b(?:e\.g|i\.e|et al|vs|cf|Fig|Eq|Sec|approx|resp)\.|\b[A-Z]\.)$")
# A sentence end with no space after it ("… we know.This capability …", about 1 abstract in 12 of
# the 23k corpus, pasted from PDFs): a stop right after a word of two or more characters and before a
# capitalized word. Not inside a link or an e-mail address ("github.com/x/Foo.PyTorch", "D.Saad@"), after
# a lone capital ("K.Tanaka", "U.S.Army") or after a list number ("1.High-rank").
_GLUED_END = re.compile(r"(?<=[^\s.][.!?])(?=[A-Z][a-z])")
_GLUED_TOKEN = re.compile(r"\S+$")
_NOT_GLUED = re.compile(r"://|www\.|@|(?:^|[^A-Za-z])[A-Z][.!?]$|^\d{1,2}[.!?]$")
# A link: a sentence holding one is split off even after a lone capital ("… Grand Theft Auto V. Demo
# video and code are available at https://…"), which is otherwise read as an initial ("J. Smith").
_LINK = re.compile(r"https?://|www\.|github\.com", re.I)
_INITIAL = re.compile(r"\b[A-Z]\.$")

SENTENCE_SPLITTER = 2
"""Version of :func:`sentence_spans`' rules (2: glued sentence ends, a link sentence after a capital).
Part of each paper's content hash (vectorstore.ingest.run.content_hash): the stored sentence spans and
vectors follow the splitter, so a new version re-ingests (re-embedding only chunks whose sentences moved)."""


def _breaks(text: str) -> list[tuple[int, int]]:
    """Candidate sentence breaks ``(end of a sentence, start of the next)``, in order."""
    out = [(m.start(), m.end()) for m in _SENTENCE_END.finditer(text)]
    for m in _GLUED_END.finditer(text):
        token = _GLUED_TOKEN.search(text, 0, m.start())
        after = re.match(r"\S*", text[m.start():]).group(0)
        if token and not _NOT_GLUED.search(token.group(0)) and not _NOT_GLUED.search(after):
            out.append((m.start(), m.start()))
    return sorted(out)


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans ``[(start, end), ...]`` of the sentences of ``text``, whitespace-trimmed.

    Every span is non-empty and ``text[start:end]`` is the sentence; spans are in order and do not
    overlap. Rule-based (punctuation + capital, :data:`SENTENCE_SPLITTER`), which suits abstracts;
    returns [] for blank text.
    """
    spans = []
    start = 0
    breaks = _breaks(text)
    for i, (end, nxt) in enumerate(breaks):
        before = text[start:end]
        if _NO_BREAK_BEFORE.search(before):
            following = text[nxt : breaks[i + 1][0] if i + 1 < len(breaks) else len(text)]
            if not (_INITIAL.search(before) and _LINK.search(following)):
                continue
        spans.append((start, end))
        start = nxt
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def split_sentences(text: str) -> list[str]:
    """The sentences of ``text`` (see :func:`sentence_spans`)."""
    return [text[s:e] for s, e in sentence_spans(text)]


_SEPARATORS = [_SENTENCE_END.pattern, r"(?<=[;:,])\s+", r"\s+", ""]


class ChunkingConfig(BaseModel):
    """How abstracts are cut into chunks; part of each paper's content hash, so a change re-chunks."""

    max_tokens: int | None = Field(None, ge=16, description="word pieces per chunk; None = the encoder's limit",
                                   json_schema_extra={"source": "the encoder's input limit (MiniLM: 256 − 2)"})
    overlap_tokens: int = Field(64, ge=0, description="word pieces of trailing context repeated at the next "
                                "chunk's start (capped at a quarter of max_tokens)",
                                json_schema_extra={"source": "hand-set; most abstracts fit one chunk"})
    separators: list[str] = Field(default_factory=lambda: list(_SEPARATORS),
                                  description="regular expressions tried in turn: sentence ends, clause "
                                  "punctuation, spaces, characters", json_schema_extra={"source": "hand-set"})

    def hash_key(self) -> dict | None:
        """What a paper's content hash adds for this configuration: None for the defaults (every record
        stored before chunking was configurable was made with them), else the settings."""
        return None if self == ChunkingConfig() else self.model_dump()


class Chunk(BaseModel):
    """A piece of one paper's abstract, the unit that is embedded and indexed."""

    id: str
    paper_id: str
    index: int
    text: str
    start: int
    end: int

    @staticmethod
    def make_id(paper_id: str, text: str, start: int) -> str:
        """Stable, content-derived id: the same text at the same place gives the same id."""
        digest = hashlib.sha1(f"{paper_id}\x00{start}\x00{text}".encode()).hexdigest()[:16]
        return f"{paper_id}::{digest}"


def _place(pieces: list[str], text: str, cover_end: bool = True) -> list[int] | None:
    """Start offset of each piece in ``text``, in order, or None when they cannot be placed.

    Each piece starts after the previous start and, overlap or not, no later than just past the
    previous end; the first starts at the text's first match, the last ends where the text's
    content ends. Usually each piece has one such match. Text that repeats a phrase can offer
    several: a depth-first search tries the latest first and backtracks (memoized on the piece and
    its start), so periodic text ("X. X. X. …") still gets offsets that tile the whole abstract.
    """
    if not pieces:
        return []
    end_of_text = len(text.rstrip())
    failed: set[tuple[int, int]] = set()

    def candidates(i: int, prev_start: int, prev_end: int) -> list[int]:
        piece, out = pieces[i], []
        # Between pieces there is only whitespace (the splitter strips it); relaxed: any 16 chars.
        gap = prev_end
        while gap < len(text) and text[gap].isspace():
            gap += 1
        hi = (gap if cover_end else prev_end + 16) + len(piece)
        pos = text.rfind(piece, prev_start + 1, hi)
        while pos > prev_start:
            out.append(pos)
            pos = text.rfind(piece, prev_start + 1, pos + len(piece) - 1)
        return out

    def search(i: int, start: int) -> list[int] | None:
        end = start + len(pieces[i])
        if i == len(pieces) - 1:
            return [start] if end >= end_of_text or not cover_end else None
        if (i, start) in failed:
            return None
        for nxt in candidates(i + 1, start, end):
            rest = search(i + 1, nxt)
            if rest is not None:
                return [start, *rest]
        failed.add((i, start))
        return None

    first = text.find(pieces[0])
    return search(0, first) if first >= 0 else None


class Chunker:
    """Splits papers into chunks that fit ``max_tokens`` word pieces.

    ``count_tokens(text) -> int`` must count the encoder's word pieces without special tokens;
    ``max_tokens`` is the budget for content (the encoder's limit minus its special tokens).
    ``overlap_tokens`` of trailing context are repeated at the start of the next chunk.
    """

    def __init__(self, count_tokens: Callable[[str], int], max_tokens: int, overlap_tokens: int = 64,
                 separators: list[str] | None = None):
        if max_tokens < 16:
            raise ValueError(f"max_tokens must be at least 16, got {max_tokens}")
        # The splitter re-measures the same sentences while merging them (12k calls for 2,000 papers);
        # a cache cuts chunking time by about a quarter.
        self.count_tokens = functools.lru_cache(maxsize=8192)(count_tokens)
        self.max_tokens = max_tokens
        self.config = ChunkingConfig(overlap_tokens=overlap_tokens, separators=separators or list(_SEPARATORS))

    @functools.cached_property
    def _splitter(self):
        # Made on the first split: LangChain's splitter takes 0.2 s to import, and a question never splits.
        from langchain_text_splitters import RecursiveCharacterTextSplitter

        return RecursiveCharacterTextSplitter(
            separators=self.config.separators,
            is_separator_regex=True,
            keep_separator="end",
            chunk_size=self.max_tokens,
            chunk_overlap=min(self.config.overlap_tokens, self.max_tokens // 4),
            length_function=self.count_tokens,
            strip_whitespace=True,
        )

    @classmethod
    def for_encoder(cls, encoder, config: ChunkingConfig | None = None) -> "Chunker":
        """The chunker for ``encoder`` (``count_tokens``, ``max_tokens``) configured by ``config``."""
        config = config or ChunkingConfig()
        return cls(encoder.count_tokens, config.max_tokens or encoder.max_tokens, config.overlap_tokens,
                   config.separators)

    def split(self, paper: Paper) -> list[Chunk]:
        """Chunks of one paper, in order. Each ``chunk.text == paper.text[chunk.start:chunk.end]``.

        Raises ValueError if the splitter yields a piece that is not a substring of the abstract
        (never expected; guards the offset invariant).
        """
        text = paper.text
        if self.count_tokens(text) <= self.max_tokens:
            pieces = [text]
        else:
            pieces = self._splitter.split_text(text)
        starts = _place(pieces, text)
        if starts is None:  # pieces that stop short of the end (never seen): place them anyway
            starts = _place(pieces, text, cover_end=False)
        if starts is None:
            raise ValueError(f"chunk of {paper.id} is not a substring of its abstract")
        chunks: list[Chunk] = []
        for piece, start in zip(pieces, starts):
            chunks.append(
                Chunk(id=Chunk.make_id(paper.id, piece, start), paper_id=paper.id, index=len(chunks),
                      text=piece, start=start, end=start + len(piece))
            )
        return chunks
