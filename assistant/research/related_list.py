"""The result of a related-work search (:func:`assistant.research.related.related_work` fills it): the ranked papers,
how the similarity bar was applied (``apply_bar``), the papers just below it, and the headline the CLI, the page
and MCP show."""

from __future__ import annotations

import re

NEAREST_SHOWN = 3
"""When no paper clears the similarity bar, the nearest this many are shown anyway, marked as below it."""
NEAR_MISSES = 5
"""Papers just below the bar shown under "Just below the bar", with their similarity."""
NEAR_WITHIN = 0.15
"""…if their relevance is at most this far below the bar: a paper at 24 % under a 43 % bar is not near."""
MAX_TEXT_CHARS = 50_000
"""Longest pasted text for related work (a long draft section; a whole paper is not a query): longer is an error."""
TEXT_BUDGET_CHARS = 8_000
"""Most characters of a pasted text that related work reads per request (CLI, page and MCP alike): a
longer draft is cut to its start, with a note. Embedding, BM25 and the sentence pairs grow with the
text: a 50,000-character draft took 12.5 s in `related` (8.3 s in a running server), now 4.8 s (1.3 s)."""


def within_budget(text: str, limit: int = TEXT_BUDGET_CHARS) -> tuple[str, str]:
    """``(text read, note)``: ``text`` as is and "" when it fits in ``limit`` characters, else its start cut
    at the last sentence end (else space) in the last fifth of the budget, and a note saying so."""
    if len(text) <= limit:
        return text, ""
    head = text[:limit]
    ends = [m.end() for m in re.finditer(r"[.!?。！？](?=\s)", head)]
    cut = ends[-1] if ends and ends[-1] >= limit * 4 // 5 else head.rfind(" ") if head.rfind(" ") >= limit * 4 // 5 else limit
    read = text[:cut].rstrip()
    return read, (f"Your text is {len(text):,} characters long; related work read its first {len(read):,} (at most "
                  f"{limit:,} per request): paste the part that matters most, e.g. its abstract.")


def shown_percent(similarity: float, bar: float) -> int:
    """``similarity`` (the relevance) as the whole percentage shown beside a paper, on the right side of the bar
    as the headline states it: a paper at 0.5195 under a 0.52 bar reads 51 %, never "52%" among papers
    "under 52%" (rounding alone would put it there)."""
    pct, bar_pct = round(100 * max(0.0, similarity)), round(100 * bar)
    return max(pct, bar_pct) if similarity >= bar else min(pct, bar_pct - 1)


def apply_bar(ranked: list[tuple[str, float]], similarity: dict[str, float],
              bar: float) -> tuple[list[tuple[str, float]], bool, list[str]]:
    """``(kept, nearest_only, near ids)`` for candidates ``ranked`` ``[(id, relevance)]`` most relevant first:
    those whose ``similarity`` (the relevance, :mod:`assistant.research.related_score`) clears ``bar``; when none does, the nearest :data:`NEAREST_SHOWN`
    anyway (``nearest_only``, an empty answer tells nothing); the ids of up to :data:`NEAR_MISSES` others
    within :data:`NEAR_WITHIN` below the bar."""
    kept = [(i, sc) for i, sc in ranked if similarity.get(i, 0.0) >= bar]
    below = [(i, sc) for i, sc in ranked if similarity.get(i, 0.0) < bar]
    nearest_only = not kept and bool(ranked)
    if nearest_only:
        kept, below = below[:NEAREST_SHOWN], below[NEAREST_SHOWN:]
    near = [i for i, _ in below if similarity.get(i, 0.0) >= bar - NEAR_WITHIN][:NEAR_MISSES]
    return kept, nearest_only, near


class RelatedList(list):
    """``list[RelatedPaper]`` most relevant first, plus how the bar was applied: ``considered`` papers
    ranked, ``below_bar`` of them dropped under ``bar`` (relevance); ``nearest_only``: none cleared the bar
    and the items are the nearest :data:`NEAREST_SHOWN`, all below it. ``near``: up to
    :data:`NEAR_MISSES` ``(paper, similarity)`` just below the bar (not among the items), most similar
    first. ``query_label``: the picked paper's label ("" for a pasted text: "yours"). ``text``: the pasted
    text as read (cut to :data:`TEXT_BUDGET_CHARS`), ``note``: "" or the line saying it was cut."""

    def __init__(self, items=(), considered: int = 0, below_bar: int = 0, bar: float = 0.0,
                 nearest_only: bool = False, near: list | None = None, query_label: str = "",
                 text: str = "", note: str = ""):
        super().__init__(items)
        self.text, self.note = text, note
        self.considered, self.below_bar, self.bar = considered, below_bar, bar
        self.nearest_only = nearest_only
        self.near = list(near or [])
        self.query_label = query_label

    @property
    def bar_percent(self) -> int:
        return round(100 * self.bar)

    def headline(self) -> str:
        """``"3 related papers; 7 others were below the bar (similarity under 41%)."``; when none clears it,
        ``"None is closely related (similarity under 52%); the nearest are:"`` over the nearest few, or
        with none kept ``"No paper is similar enough: the 10 closest were below the bar (…)."``"""
        n = len(self)
        if n and self.nearest_only:
            return (f"None is closely related (similarity under {self.bar_percent}%); "
                    f"the nearest {'are' if n != 1 else 'is'}:")
        if not n and self.below_bar:
            return (f"No paper is similar enough: the {self.below_bar} closest were below the bar "
                    f"(similarity under {self.bar_percent}%).")
        head = f"{n} related paper{'s' if n != 1 else ''}"
        if self.below_bar:
            head += (f"; {self.below_bar} other{'s were' if self.below_bar != 1 else ' was'} below the bar "
                     f"(similarity under {self.bar_percent}%)")
        return head + "."
