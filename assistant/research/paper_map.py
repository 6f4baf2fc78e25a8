"""Paper map: every indexed paper as a point in 2-D, coloured by cluster, each cluster named by keywords.

- Layout: PCA (scikit-learn) of the paper-level embeddings (mean of chunk MiniLM vectors) to 2-D.
- Clusters: KMeans on the full embeddings, √n clusters (2–12). The silhouette score is reported, not
  used to pick the number: on abstracts of one conference it is low and nearly flat across k (0.10
  for 2–8 clusters of the bundled corpus), so it would pick 2 uninformative clusters.
- Keywords: class-based TF-IDF (the c-TF-IDF of BERTopic, Grootendorst 2022): each cluster's abstracts
  are one document; a term's weight is its frequency in the cluster times ``log(1 + A / f_t)``, with
  ``A`` the average number of words per cluster and ``f_t`` the term's frequency over all clusters.

Faces: :func:`map_figure` (plotly, interactive, for the UI) and :func:`save_png` (matplotlib, for
``paper-assistant map --out map.png``); both can highlight the papers of the current question.
"""

from __future__ import annotations

import html
import math
import re
import textwrap
from pathlib import Path

import numpy as np

from assistant.research.map_labels import place_labels, shown_name
from assistant.research.map_types import Cluster, MapPoint, PaperMap
from assistant.text import strip_controls
from vectorstore.papers import Paper

_LATEX = re.compile(r"\$[^$]*\$|\\[A-Za-z]+")
"""Inline math and LaTeX commands (``$2.5\\times$``, ``\\textit``): not keywords."""

_GENERIC = {"model", "models", "method", "methods", "approach", "approaches", "paper", "propose", "proposed",
            "results", "framework", "task", "tasks", "performance", "existing", "novel", "based", "using", "show",
            "demonstrate", "achieves", "state-of-the-art", "experiments", "work", "new", "data", "training", "learning",
            "large", "unified", "accuracy", "efficient", "effective", "significantly", "robust", "improves"}
"""Words every ML abstract uses: left out of cluster keywords."""


def _stop_words() -> frozenset[str]:
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    return frozenset(ENGLISH_STOP_WORDS | _GENERIC)


PALETTE = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
           "#bcbd22", "#17becf", "#393b79", "#637939"]


def cluster(vecs: np.ndarray, k: int, seed: int = 0) -> tuple[np.ndarray, float | None]:
    """KMeans labels for ``vecs`` with ``k`` clusters (fewer for tiny sets), and their cosine silhouette."""
    from sklearn.cluster import KMeans
    from sklearn.metrics import silhouette_score

    n = len(vecs)
    k = max(1, min(k, n // 2))
    if k < 2:
        return np.zeros(n, dtype=int), None
    labels = KMeans(n_clusters=k, n_init=10, random_state=seed).fit_predict(vecs)
    sil = float(silhouette_score(vecs, labels, metric="cosine", sample_size=min(n, 2000), random_state=seed))
    return labels, sil


def cluster_keywords(texts: list[str], labels: np.ndarray, n_words: int = 5) -> dict[int, list[str]]:
    """Top ``n_words`` c-TF-IDF terms (uni- and bigrams, English stop words dropped) per cluster label."""
    from sklearn.feature_extraction.text import CountVectorizer

    ids = sorted(set(int(x) for x in labels))
    texts = [_LATEX.sub(" ", t) for t in texts]
    docs = [" ".join(t for t, lab in zip(texts, labels) if int(lab) == c) for c in ids]
    vec = CountVectorizer(stop_words=sorted(_stop_words()), ngram_range=(1, 2), min_df=1,
                          token_pattern=r"(?u)\b[A-Za-z][A-Za-z0-9-]{2,}\b")
    try:
        tf = vec.fit_transform(docs).astype(np.float64).tocsr()  # sparse: 23k abstracts hold millions of bigrams
    except ValueError:  # no terms at all
        return {c: [] for c in ids}
    terms = vec.get_feature_names_out()
    col_sums = np.asarray(tf.sum(axis=0)).ravel()
    row_sums = np.asarray(tf.sum(axis=1)).ravel()
    avg_words = tf.sum() / len(ids)
    idf = np.log(1.0 + avg_words / np.maximum(col_sums, 1.0))
    out = {}
    for row, c in enumerate(ids):
        r = tf.getrow(row)
        cols, weights = r.indices, r.data / max(row_sums[row], 1.0) * idf[r.indices]
        picked: list[str] = []
        for k in np.lexsort((cols, -weights)):  # best first; ties in vocabulary order, as a dense argsort gave
            term = str(terms[cols[k]])
            if weights[k] <= 0:
                break
            # Skip a unigram already inside a picked bigram (and vice versa) to keep the names short.
            if any(term in p.split() or p in term.split() for p in picked):
                continue
            picked.append(term)
            if len(picked) == n_words:
                break
        out[c] = picked
    return out


def build_map(papers: list[Paper], vecs: np.ndarray, n_clusters: int | None = None, seed: int = 0) -> PaperMap:
    """The map of ``papers`` (embeddings ``vecs``, shape ``(n, dim)``). Raises ValueError when empty.

    ``n_clusters`` defaults to √n, between 2 and 12 (6 for the 38 bundled papers).
    """
    from sklearn.decomposition import PCA

    n = len(papers)
    if n == 0:
        raise ValueError("no papers are indexed: ingest some first")
    if n == 1:
        xy, var = np.zeros((1, 2)), (1.0, 0.0)
    else:
        pca = PCA(n_components=2, random_state=seed)
        xy = pca.fit_transform(vecs)
        ratios = list(pca.explained_variance_ratio_) + [0.0]
        var = (float(ratios[0]), float(ratios[1]))
    if n_clusters is None:
        n_clusters = max(2, min(12, round(math.sqrt(n))))
    labels, sil = cluster(vecs, n_clusters, seed)
    # Number clusters by size, largest first, so colours are stable across runs.
    order = [c for c, _ in sorted(((int(c), int((labels == c).sum())) for c in set(labels.tolist())), key=lambda t: (-t[1], t[0]))]
    remap = {old: new for new, old in enumerate(order)}
    labels = np.array([remap[int(c)] for c in labels])
    words = cluster_keywords([p.text for p in papers], labels)
    clusters = [Cluster(c, words.get(c, []), int((labels == c).sum())) for c in range(len(order))]
    points = [MapPoint(p, float(x), float(y), int(c)) for p, (x, y), c in zip(papers, xy, labels)]
    return PaperMap(points, clusters, var, sil)


_CACHE: dict[str, PaperMap] = {}


def _stamp(store) -> str:
    return f"{id(store)}:{store.state_stamp()}:{store.counts()[0]}"


def is_cached(store) -> bool:
    """True when :func:`index_map` of ``store`` would return at once (drawn for this index state)."""
    return _stamp(store) in _CACHE


def index_map(store, n_clusters: int | None = None) -> PaperMap:
    """The map of every paper in ``store`` (a ChunkStore), cached until the index changes."""
    stamp = _stamp(store)
    if stamp not in _CACHE:
        papers, vecs = store.all_papers(with_embeddings=True)
        order = sorted(range(len(papers)), key=lambda i: papers[i].id)  # stable layout whatever the storage order
        m = build_map([papers[i] for i in order], vecs[order] if len(order) else vecs, n_clusters)
        m.stamp = stamp
        _CACHE.clear()
        _CACHE[stamp] = m
    return _CACHE[stamp]


def map_figure(pmap: PaperMap, highlight: list[str] | None = None, title: str = "Paper map"):
    """An interactive plotly figure: one trace per cluster (legend = keywords), hits drawn as stars."""
    import plotly.graph_objects as go

    hits = list(dict.fromkeys(highlight or []))
    fig = go.Figure()
    for c in pmap.clusters:
        pts = [p for p in pmap.points if p.cluster == c.id]
        fig.add_trace(go.Scatter(
            x=[p.x for p in pts], y=[p.y for p in pts], mode="markers", name=f"{c.id + 1}: {c.name} ({c.size})",
            marker={"size": 10, "color": PALETTE[c.id % len(PALETTE)], "opacity": 0.8},
            customdata=[p.paper.id for p in pts],
            hovertext=["<br>".join(textwrap.wrap(shown_name(p.paper), 60)) + f"<br><i>{p.paper.id}</i>" for p in pts],
            hoverinfo="text"))
    by_id = {p.paper.id: p for p in pmap.points}
    hit_pts = [by_id[h] for h in hits if h in by_id]
    if hit_pts:
        fig.add_trace(go.Scatter(
            x=[p.x for p in hit_pts], y=[p.y for p in hit_pts], mode="markers", name=f"hits of the question ({len(hit_pts)})",
            marker={"size": 20, "symbol": "star", "color": "rgba(0,0,0,0)", "line": {"width": 2.5, "color": "#111"}},
            hovertext=[shown_name(p.paper) for p in hit_pts], hoverinfo="text"))
    # Labels placed as the PNG's are (plotly's own text positions let neighbours print on each other);
    # sizes for 9 px text on a plot about 1,100 × 480 px.
    for text, lx, ly, ha, leader, p in place_labels(pmap, char_w=0.0062, line_h=0.04, width=18, first=hits):
        fig.add_annotation(x=lx, y=ly, text=html.escape(text), showarrow=False, xanchor=ha, yanchor="bottom",
                           font={"size": 9, "color": "#222"}, bgcolor="rgba(255,255,255,0.7)", borderpad=0)
        if leader:
            fig.add_shape(type="line", x0=p.x, y0=p.y, x1=lx, y1=ly, line={"color": "#999", "width": 0.6}, layer="below")
    fig.update_layout(title=title, height=620, legend={"orientation": "h", "y": -0.12}, margin={"l": 30, "r": 20, "t": 50, "b": 30},
                      xaxis={"title": f"PC1 ({pmap.explained_variance[0]:.0%} of variance)", "zeroline": False},
                      yaxis={"title": f"PC2 ({pmap.explained_variance[1]:.0%})", "zeroline": False},
                      template="plotly_white")
    return fig


def save_png(pmap: PaperMap, out: str | Path, highlight: list[str] | None = None, title: str = "Paper map",
             dpi: int = 150) -> Path:
    """Draw the map with matplotlib to ``out`` (PNG): labelled points, clusters in colour, keyword legend. Raises
    ValueError when ``out`` is no plain file or cannot be written whole (:func:`vectorstore.paths.write_output`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out)
    hits = set(highlight or [])
    fig, ax = plt.subplots(figsize=(14, 10), dpi=dpi)
    for c in pmap.clusters:
        pts = [p for p in pmap.points if p.cluster == c.id]
        ax.scatter([p.x for p in pts], [p.y for p in pts], s=70, color=PALETTE[c.id % len(PALETTE)], alpha=0.85,
                   edgecolors="white", linewidths=0.8, label=f"{c.id + 1}: {', '.join(c.keywords[:4])} ({c.size})", zorder=3)
    hit_pts = [p for p in pmap.points if p.paper.id in hits]
    if hit_pts:
        ax.scatter([p.x for p in hit_pts], [p.y for p in hit_pts], s=320, facecolors="none", edgecolors="black",
                   linewidths=2.0, marker="*", label=f"hits of the question ({len(hit_pts)})", zorder=4)
    for text, lx, ly, ha, leader, p in place_labels(pmap, char_w=0.0062, line_h=0.028, first=list(hits)):
        ax.annotate(text, (p.x, p.y), xytext=(lx, ly), fontsize=7.5, ha=ha, va="bottom", color="#222",
                    zorder=5, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.7},
                    arrowprops={"arrowstyle": "-", "color": "#999", "lw": 0.6} if leader else None)
    ax.set_title(f"{strip_controls(title)} — {len(pmap.points)} papers, {len(pmap.clusters)} clusters", fontsize=14)
    ax.set_xlabel(f"PC1 ({pmap.explained_variance[0]:.0%} of variance)")
    ax.set_ylabel(f"PC2 ({pmap.explained_variance[1]:.0%} of variance)")
    ax.margins(x=0.06, y=0.08)
    ax.grid(alpha=0.25)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.07), ncol=2, fontsize=9, frameon=False)
    fig.tight_layout()
    from vectorstore.paths import write_output

    try:  # all or nothing, a plain file only: a FIFO or device put there since the check is refused
        write_output(out, lambda f: fig.savefig(f, dpi=dpi, format="png"), "--out")
    finally:
        plt.close(fig)
    return out
