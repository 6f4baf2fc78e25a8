"""Citation markers in answer text: parse, rewrite while streaming, and split cited claims.

A marker is ``[n]``, a list ``[n, m]`` / ``[n; m]``, or holds a range ``[n-m]`` / ``[n–m]``. The LLM
cites the numbers of the context blocks it was given; :class:`CitationRewriter` turns that into what
the user sees: numbers outside the given blocks are dropped, the rest are renumbered 1, 2, 3 in order
of first citation. It works on a stream (piece by piece) and its output is the same as rewriting the whole text at once, so the
streamed answer and the final checked answer are identical.
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Mapping

import numpy as np

_ITEM = r"-?\d+(?:\s*[-\u2013]\s*\d+)?"  # "-1": no paper, but a marker to drop, not text to show
_LIST = rf"{_ITEM}(?:\s*[,;]\s*{_ITEM})*"
MARKER = re.compile(rf"\[({_LIST})\]")
_NUMS = re.compile(r"\s*[,;]\s*")
_RANGE = re.compile(r"(\d+)\s*[-\u2013]\s*(\d+)")
MAX_RANGE = 20
"""Longest range a marker may span ("[1-3]" is three citations; "[1-500]" is not a citation list)."""
# What must be held back at the end of a streamed buffer because the next piece may change it:
# trailing whitespace and complete markers (a dropped marker takes the space before it when
# punctuation follows) and a "[" that may still become a marker ("[1", "[1, ", "[1-").
# A conjunction (or its start: "a", "an", "o") may go with the next marker, so it is held back too.
_TAIL = re.compile(rf"(?:\s+|,|\b(?:a(?:nd?)?|or?)|\[{_LIST}\])+$")
_OPEN = re.compile(r"\[[\d\s,;\-\u2013]*$")
_SPACE_BEFORE_PUNCT = re.compile(r"[ \t]+([.,;:!?])")
_SPACES = re.compile(r"[ \t]{2,}")
# Where a marker was dropped: only there is the text's spacing touched ("a [7]." → "a.", "a [7] b" →
# "a b"); elsewhere the LLM's spacing stays as written (code, indented lists, " .9", ".[dev]").
_GONE = "\x00"
_GONE_BEFORE_PUNCT = re.compile(rf"[ \t]*{_GONE}+[ \t]*(?=[.,;:!?]|\n|$)")
_GONE_SPACED = re.compile(rf"([ \t]*){_GONE}+([ \t]*)")
# A conjunction that joined a dropped marker goes with it: "[1] and [7] show" → "[1] show",
# "A [1] and [7] and B" → "A [1] and B", never "and and".
_GONE_AFTER_MARKER = re.compile(rf"(\])[ \t]*,?[ \t]*\b(?:and|or)[ \t]+{_GONE}+")
_GONE_BETWEEN_CONJUNCTIONS = re.compile(rf"\b(and|or)[ \t]+{_GONE}+[ \t]+(?:and|or)\b")


def _numbers(group: str) -> list[int]:
    out: list[int] = []
    for part in _NUMS.split(group.strip()):
        r = _RANGE.fullmatch(part)
        if r and int(r.group(1)) < int(r.group(2)) <= int(r.group(1)) + MAX_RANGE:
            out.extend(range(int(r.group(1)), int(r.group(2)) + 1))
        elif r:  # "[3-1]" or a huge span: its two ends
            out.extend(int(x) for x in r.groups())
        else:
            out.append(int(part))
    return out


def cited_numbers(text: str) -> list[int]:
    """Citation numbers in order of first use: "a [2] b [1, 3] c [2]" → [2, 1, 3]."""
    seen: list[int] = []
    for m in MARKER.finditer(text):
        for n in _numbers(m.group(1)):
            if n not in seen:
                seen.append(n)
    return seen


def strip_invalid(text: str, valid: set[int]) -> tuple[str, list[int]]:
    """Remove markers whose numbers are not in ``valid``; returns (clean text, removed numbers).

    "[1, 7]" with valid {1} becomes "[1]"; a marker left empty disappears with its leading space.
    Numbers are not renumbered (see :class:`CitationRewriter` for that).
    """
    rw = CitationRewriter({n: n for n in valid}, numbering={n: n for n in valid})
    return (rw.feed(text) + rw.flush()), rw.removed


class CitationRewriter:
    """Rewrites markers in a stream of text pieces: drop invalid numbers, renumber by first citation.

    ``blocks`` maps each valid marker number (as the LLM saw it) to a key (a paper id).
    ``numbering`` (key → shown number) may be shared between rewriters so that two segments of one
    answer (a partial LLM answer and the extractive fallback after it) number papers alike; new keys
    get the next free number. ``removed`` lists the dropped numbers in order of appearance.

    ``feed(piece)`` returns the text that is final now (it may hold back a few characters);
    ``flush()`` returns the rest. ``"".join(feeds) + flush()`` equals rewriting the whole text.
    """

    def __init__(self, blocks: Mapping[int, Hashable], numbering: dict[Hashable, int] | None = None):
        self.blocks = dict(blocks)
        self.numbering = numbering if numbering is not None else {}
        self.removed: list[int] = []
        self._buf = ""
        self._started = False

    def _marker(self, m: re.Match) -> str:
        keep: list[int] = []
        for n in _numbers(m.group(1)):
            if n not in self.blocks:
                if n not in self.removed:
                    self.removed.append(n)
                continue
            key = self.blocks[n]
            if key not in self.numbering:
                self.numbering[key] = len(self.numbering) + 1
            if self.numbering[key] not in keep:
                keep.append(self.numbering[key])
        return "[" + ", ".join(map(str, keep)) + "]" if keep else _GONE

    def _rewrite(self, text: str) -> str:
        # Only called on text that ends in a character that cannot change (see _TAIL), so the
        # whitespace clean-up never needs to look across the cut.
        out = MARKER.sub(self._marker, text)
        out = _GONE_AFTER_MARKER.sub(r"\1", out)
        out = _GONE_BETWEEN_CONJUNCTIONS.sub(r"\1", out)
        out = _GONE_BEFORE_PUNCT.sub("", out)
        out = _GONE_SPACED.sub(lambda m: " " if m.group(1) and m.group(2) else m.group(1) or m.group(2), out)
        if not self._started:
            out = out.lstrip()
            self._started = bool(out)
        return out

    def feed(self, piece: str) -> str:
        self._buf += piece
        cut = len(self._buf)
        opened = _OPEN.search(self._buf)
        if opened:
            cut = opened.start()
        tail = _TAIL.search(self._buf[:cut])
        if tail:
            cut = tail.start()
        ready, self._buf = self._buf[:cut], self._buf[cut:]
        return self._rewrite(ready) if ready else ""

    def flush(self) -> str:
        rest, self._buf = self._buf, ""
        return self._rewrite(rest).rstrip()


def strip_markers(text: str) -> str:
    """``text`` without citation markers (and without the space a marker leaves before punctuation)."""
    return _SPACES.sub(" ", _SPACE_BEFORE_PUNCT.sub(r"\1", MARKER.sub("", text)))


def claims_with_citations(text: str) -> list[tuple[str, list[int]]]:
    """Answer sentences that carry markers, as ``(sentence without markers, [numbers])``.

    Lines are split first (list items are claims of their own), then sentences. Markers that open
    a sentence ("… is fast. [1] It also …") belong to the sentence before them.
    """
    from vectorstore.chunks import split_sentences

    sentences: list[tuple[str, list[int]]] = []
    for line in text.splitlines():
        for sentence in split_sentences(line.strip()):
            lead = re.match(rf"(?:\s*\[{_LIST}\])+", sentence)
            if lead and sentences:
                prev = sentences[-1][1]
                prev.extend(n for n in cited_numbers(lead.group(0)) if n not in prev)
                sentence = sentence[lead.end():]
            sentences.append((sentence, cited_numbers(sentence)))
    out = []
    for sentence, nums in sentences:
        claim = _SPACE_BEFORE_PUNCT.sub(r"\1", MARKER.sub("", sentence)).strip(" -*•\t")
        if nums and claim:
            out.append((claim, nums))
    return out


def calibrate_threshold(supported: np.ndarray, unsupported: np.ndarray) -> float:
    """The similarity threshold that best separates ``supported`` from ``unsupported`` scores.

    Maximises Youden's J (share of supported scores ≥ t minus share of unsupported ≥ t) over the
    observed scores, and returns the midpoint between the best t and the highest unsupported score
    below it (so the threshold does not sit exactly on a calibration point). Shapes: 1-D arrays.
    """
    pos, neg = np.sort(np.asarray(supported, float)), np.sort(np.asarray(unsupported, float))
    best_j, best_t = -2.0, float(pos[0])
    for t in np.unique(np.concatenate([pos, neg])):
        j = (pos >= t).mean() - (neg >= t).mean()
        if j > best_j + 1e-12:
            best_j, best_t = j, float(t)
    below = neg[neg < best_t]
    return (best_t + float(below[-1])) / 2 if below.size else best_t
