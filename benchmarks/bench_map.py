"""Paper-map cost at scale (a script, not a test).

    .venv/bin/python benchmarks/bench_map.py [--sizes 38 2000 23642]

For each size: the papers are the first N of the 23k corpus (titles and abstracts, for the cluster
keywords; seeded synthetic texts without ../shared) with seeded random unit vectors for the layout
(the map's cost does not depend on what the vectors mean). Times build_map (PCA, KMeans, silhouette
on at most 2,000 points, c-TF-IDF keywords), place_labels (at most MAX_LABELS labels) and the plotly
figure. Writes results/map.json.
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from common import CORPUS_23K, machine, write_json


def papers(n: int):
    from vectorstore.papers import Paper

    out = []
    if CORPUS_23K.exists():
        with CORPUS_23K.open() as f:
            for i, line in zip(range(n), f):
                r = json.loads(line)
                out.append(Paper(id=str(r.get("id", i)), text=r["abstract"], title=r.get("title") or ""))
    rng = np.random.default_rng(1)
    words = ["graph", "diffusion", "token", "policy", "kernel", "robust", "sparse", "vision", "language", "reward"]
    while len(out) < n:
        i = len(out)
        out.append(Paper(id=f"s{i}", text=" ".join(rng.choice(words, 40)), title=f"Synthetic paper {i}"))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[38, 2000, 23642])
    args = ap.parse_args()
    from assistant.research.map_labels import place_labels
    from assistant.research.paper_map import build_map, map_figure

    rows = []
    for n in args.sizes:
        ps = papers(n)
        vecs = np.random.default_rng(0).normal(size=(n, 384)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        t0 = time.perf_counter()
        pmap = build_map(ps, vecs)
        t1 = time.perf_counter()
        labels = place_labels(pmap, char_w=0.0062, line_h=0.028)
        t2 = time.perf_counter()
        map_figure(pmap)
        t3 = time.perf_counter()
        row = {"papers": n, "build_map_s": round(t1 - t0, 3), "place_labels_s": round(t2 - t1, 3),
               "labels": len(labels), "figure_s": round(t3 - t2, 3)}
        rows.append(row)
        print(row, flush=True)
    print(write_json("map", {"machine": machine(), "rows": rows}))


if __name__ == "__main__":
    main()
