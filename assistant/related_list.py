"""The result of a related-work search (:func:`assistant.related.related_work` fills it): the ranked papers,
how the similarity bar was applied, and the headline the CLI, the page and MCP show."""

from __future__ import annotations

NEAREST_SHOWN = 3
"""When no paper clears the similarity bar, the nearest this many are shown anyway, marked as below it."""


class RelatedList(list):
    """``list[RelatedPaper]`` best first, plus how the bar was applied: ``considered`` papers ranked,
    ``below_bar`` of them dropped under ``bar`` (cosine); ``nearest_only``: none cleared the bar and the
    items are the nearest :data:`NEAREST_SHOWN`, all below it."""

    def __init__(self, items=(), considered: int = 0, below_bar: int = 0, bar: float = 0.0,
                 nearest_only: bool = False):
        super().__init__(items)
        self.considered, self.below_bar, self.bar = considered, below_bar, bar
        self.nearest_only = nearest_only

    def headline(self) -> str:
        """``"3 related papers; 7 others were below the bar (similarity under 41%)."``; when none clears it,
        ``"None is closely related (similarity under 52%); the nearest are:"`` over the nearest few, or
        with none kept ``"No paper is similar enough: the 10 closest were below the bar (…)."``"""
        n = len(self)
        if n and self.nearest_only:
            return (f"None is closely related (similarity under {round(100 * self.bar)}%); "
                    f"the nearest {'are' if n != 1 else 'is'}:")
        if not n and self.below_bar:
            return (f"No paper is similar enough: the {self.below_bar} closest were below the bar "
                    f"(similarity under {round(100 * self.bar)}%).")
        head = f"{n} related paper{'s' if n != 1 else ''}"
        if self.below_bar:
            head += (f"; {self.below_bar} other{'s were' if self.below_bar != 1 else ' was'} below the bar "
                     f"(similarity under {round(100 * self.bar)}%)")
        return head + "."
