"""Citation markers in answer text: parse, drop invalid ones, and check each cited claim's grounding."""

from __future__ import annotations

import re

_MARKER = re.compile(r"\[(\d+(?:\s*[,;]\s*\d+)*)\]")


def cited_numbers(text: str) -> list[int]:
    """Citation numbers in order of first use: "a [2] b [1, 3] c [2]" → [2, 1, 3]."""
    seen: list[int] = []
    for m in _MARKER.finditer(text):
        for part in re.split(r"[,;]", m.group(1)):
            n = int(part)
            if n not in seen:
                seen.append(n)
    return seen


def strip_invalid(text: str, valid: set[int]) -> tuple[str, list[int]]:
    """Remove markers whose numbers are not in ``valid``; returns (clean text, removed numbers).

    "[1, 7]" with valid {1} becomes "[1]"; a marker left empty disappears with its leading space.
    """
    removed: list[int] = []

    def fix(m: re.Match) -> str:
        nums = [int(p) for p in re.split(r"[,;]", m.group(1))]
        keep = [n for n in nums if n in valid]
        removed.extend(n for n in nums if n not in valid and n not in removed)
        return "[" + ", ".join(map(str, keep)) + "]" if keep else ""

    out = _MARKER.sub(fix, text)
    out = re.sub(r"[ \t]+([.,;:!?])", r"\1", out)
    out = re.sub(r"[ \t]{2,}", " ", out)
    return out.strip(), removed


def claims_with_citations(text: str) -> list[tuple[str, list[int]]]:
    """Answer sentences that carry markers, as ``(sentence without markers, [numbers])``."""
    from vectorstore.chunking import split_sentences

    out = []
    for sentence in split_sentences(text):
        nums = cited_numbers(sentence)
        if nums:
            out.append((_MARKER.sub("", sentence).strip(), nums))
    return out
