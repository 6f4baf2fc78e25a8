"""The paper map's records: points, clusters and the map (built by :mod:`assistant.research.paper_map`,
labelled by :mod:`assistant.research.map_labels`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from vectorstore.papers import Paper


@dataclass
class MapPoint:
    paper: Paper
    x: float
    y: float
    cluster: int


@dataclass
class Cluster:
    id: int
    keywords: list[str]
    size: int

    @property
    def name(self) -> str:
        return ", ".join(self.keywords[:3]) or f"cluster {self.id + 1}"


@dataclass
class PaperMap:
    """The 2-D layout, the clusters and how much variance the two axes keep."""

    points: list[MapPoint]
    clusters: list[Cluster]
    explained_variance: tuple[float, float] = (0.0, 0.0)
    silhouette: float | None = None
    stamp: str = field(default="", repr=False)
    placed: dict = field(default_factory=dict, repr=False, compare=False)
    """:func:`assistant.research.map_labels.place_labels` results by their arguments: a map is cached per index generation, so
    repeated requests for it place its labels once."""

    def cluster_lines(self) -> list[str]:
        """One flat numbered line per cluster, ``"1. video, text, visual (10 papers)"``: the list the CLI
        prints and the page shows (as one Markdown ordered list)."""
        from vectorstore.papers import counted

        return [f"{c.id + 1}. {', '.join(c.keywords) or c.name} ({counted(c.size, 'paper')})" for c in self.clusters]

    def to_dict(self) -> dict:
        return {"points": [{"paper_id": p.paper.id, "label": p.paper.display(), "x": round(p.x, 4), "y": round(p.y, 4),
                            "cluster": p.cluster} for p in self.points],
                "clusters": [{"id": c.id, "keywords": c.keywords, "size": c.size} for c in self.clusters],
                "explained_variance": [round(v, 4) for v in self.explained_variance]}
