"""Labels of the paper map: what is drawn of a paper's name, which points get one, and where.

Shared by the page's plotly figure and the CLI's PNG (:mod:`assistant.research.paper_map`).
"""

from __future__ import annotations

import math
import unicodedata

import numpy as np

from assistant.research.map_types import MapPoint, PaperMap
from assistant.text import strip_controls
from vectorstore.papers import Paper

def shown_name(paper: Paper) -> str:
    """The paper's display name without control characters: a title holding one (an escape sequence
    from a hostile file, say) would otherwise be drawn as a missing glyph, with a matplotlib warning."""
    return strip_controls(paper.display())


def short_label(paper: Paper, width: int = 22) -> str:
    """The paper's name as a point label: plain Unicode (no LaTeX), cut to ``width`` characters with "…". Math
    letters (``\\mathfrak{so}`` → 𝔰𝔬, ``\\mathcal{O}`` → 𝓞) are drawn as plain ones: the plot's font has no glyph
    for them (a label derived from a contribution sentence, "an 𝔰𝔬(n)-valued 1-form", drew two boxes)."""
    from assistant.text import plain

    text = "".join(unicodedata.normalize("NFKC", c) if 0x1D400 <= ord(c) <= 0x1D7FF else c
                   for c in plain(shown_name(paper))).rstrip("…")
    return text if len(text) <= width else text[: width - 1].rstrip() + "…"


MAX_LABELS = 60
"""Points labelled at most: past that a map's labels cannot be read anyway, and placing them is what
made a 2,000-paper map take minutes (every label was checked against every box)."""


def labelled_points(pmap: PaperMap, limit: int = MAX_LABELS, first: list[str] | None = None) -> list[MapPoint]:
    """The points that get a label: all of them up to ``limit``, else the papers ``first`` (a question's
    hits), then in turn each cluster's point nearest its centre on the map, its next nearest, and so on."""
    if len(pmap.points) <= limit:
        return list(pmap.points)
    by_id = {p.paper.id: p for p in pmap.points}
    chosen = [by_id[h] for h in dict.fromkeys(first or []) if h in by_id][:limit]
    taken = {p.paper.id for p in chosen}
    queues = []
    for c in pmap.clusters:
        pts = [p for p in pmap.points if p.cluster == c.id and p.paper.id not in taken]
        if pts:
            cx, cy = float(np.mean([p.x for p in pts])), float(np.mean([p.y for p in pts]))
            queues.append(sorted(pts, key=lambda p: ((p.x - cx) ** 2 + (p.y - cy) ** 2, p.paper.id)))
    depth = 0
    while len(chosen) < limit and any(depth < len(q) for q in queues):
        chosen += [q[depth] for q in queues if depth < len(q)][: limit - len(chosen)]
        depth += 1
    return chosen


class _Boxes:
    """Axis-aligned boxes in a uniform grid of ``(cell_w, cell_h)`` cells: the overlap of a new box
    with those stored reads only the cells it covers, so placing n labels costs O(n), not O(n²)."""

    def __init__(self, cell_w: float, cell_h: float):
        self.cw, self.ch = cell_w, cell_h
        self.cells: dict[tuple[int, int], list[int]] = {}
        self.boxes: list[tuple[float, float, float, float]] = []

    def _cells(self, b) -> list[tuple[int, int]]:
        i0, i1 = math.floor(b[0] / self.cw), math.floor(b[2] / self.cw)
        j0, j1 = math.floor(b[1] / self.ch), math.floor(b[3] / self.ch)
        return [(i, j) for i in range(i0, i1 + 1) for j in range(j0, j1 + 1)]

    def add(self, b) -> None:
        self.boxes.append(b)
        for cell in self._cells(b):
            self.cells.setdefault(cell, []).append(len(self.boxes) - 1)

    def overlap(self, b) -> float:
        """Total area of ``b`` shared with the stored boxes."""
        near = {k for cell in self._cells(b) for k in self.cells.get(cell, ())}
        return sum(max(0.0, min(b[2], o[2]) - max(b[0], o[0])) * max(0.0, min(b[3], o[3]) - max(b[1], o[1]))
                   for o in (self.boxes[k] for k in near))


def place_labels(pmap: PaperMap, char_w: float, line_h: float, width: int = 22, limit: int = MAX_LABELS,
                 first: list[str] | None = None) -> list[tuple]:
    """Label positions that overlap neither each other nor a marker, for the PNG and the page alike.

    ``char_w`` / ``line_h``: a character's width and a line's height as fractions of the x / y data
    range (they depend on the drawing's size and font). At most ``limit`` points are labelled
    (:func:`labelled_points`; ``first``: paper ids labelled before any other). Each label, top to
    bottom, goes to the first of a few spots (above, below, right, left, then further out) whose box
    overlaps nothing placed so far, else to the least crowded. Returns ``[(text, x, y, ha, leader,
    point)]`` with (x, y) the label's bottom anchor in data units, ``ha`` "center"/"left"/"right" and
    ``leader`` True when the label sits far enough from its point to need a line to it. Linear in the
    number of points, and computed once per map and arguments (``pmap.placed``).
    """
    key = (char_w, line_h, width, limit, tuple(first or ()))
    if key not in pmap.placed:
        if len(pmap.placed) > 32:  # a map shown for many questions' hits: keep the memo small
            pmap.placed.clear()
        pmap.placed[key] = _place_labels(pmap, char_w, line_h, width, limit, first)
    return pmap.placed[key]


def _place_labels(pmap: PaperMap, char_w: float, line_h: float, width: int, limit: int,
                  first: list[str] | None) -> list[tuple]:
    xs = np.array([p.x for p in pmap.points])
    ys = np.array([p.y for p in pmap.points])
    xr = float(np.ptp(xs)) if len(xs) else 1.0
    yr = float(np.ptp(ys)) if len(ys) else 1.0
    xr, yr = xr or 1.0, yr or 1.0
    cw, lh = xr * char_w, yr * line_h
    placed = _Boxes(cw * width, lh * 2)
    # Every marker is an obstacle too, so a label never hides a point.
    for x, y in zip(xs, ys):
        placed.add((x - 0.008 * xr, y - 0.012 * yr, x + 0.008 * xr, y + 0.012 * yr))
    out = []
    for p in sorted(labelled_points(pmap, limit, first), key=lambda p: -p.y):
        text = short_label(p.paper, width)
        w = cw * len(text)
        spots = [(0, 0.016 * yr, "center"), (0, -0.016 * yr - lh, "center"), (0.012 * xr, -lh / 2, "left"),
                 (-0.012 * xr, -lh / 2, "right"), (0, 0.016 * yr + 1.2 * lh, "center"),
                 (0, -0.016 * yr - 2.2 * lh, "center"), (0.012 * xr, 0.5 * lh, "left"), (-0.012 * xr, 0.5 * lh, "right"),
                 (0.012 * xr, -1.5 * lh, "left"), (-0.012 * xr, -1.5 * lh, "right"),
                 (0, 0.016 * yr + 2.4 * lh, "center"), (0, -0.016 * yr - 3.4 * lh, "center")]
        boxes = []
        for dx, dy, ha in spots:
            x0 = p.x + dx - (w / 2 if ha == "center" else (w if ha == "right" else 0))
            boxes.append(((x0, p.y + dy, x0 + w, p.y + dy + lh), dx, dy, ha))
        scored = [(placed.overlap(b[0]), k) for k, b in enumerate(boxes)]
        free = next((k for area, k in scored if area == 0), None)
        box, dx, dy, ha = boxes[free if free is not None else min(scored)[1]]
        placed.add(box)
        out.append((text, p.x + dx, p.y + dy, ha, abs(dy) > 0.016 * yr + lh * 1.1, p))
    return out


