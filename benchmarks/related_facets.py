"""When does related work say two texts *share* a facet? Measured on CSFCube (issue 33, item 4).

For each CSFCube query (a paper and one facet: background = task, method, result) and each candidate of its
pool, the facet note related work shows for that facet (``assistant.research.facets.facet_notes``, the query
paper's abstract against the candidate's, sentence vectors made as ingest makes them) is "shared" or not.
A good rule shows the facet shared for candidates CSFCube grades related in that facet (≥ 2) and not for
those it grades 0. Printed for the rule until 2026-12-05 (each sentence read as its likeliest facet only;
shared when the closest pair of those reaches a cosine of 0.50) and for today's (the facet's sentences
weighted by their facet probability, shared when their centroids' cosine reaches the bar), over a range of
bars; ``calibration.related.shared_above`` is the lowest bar that shows unrelated candidates shared no more
often than the old rule did, so true shares rise at no cost in false ones.

Run: ``python benchmarks/related_facets.py ../shared/corpora/csfcube`` (embeds the pools' abstracts: about 5
minutes on a quiet 2-core machine). ``--json`` prints one object.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from assistant.research.facets import FACETS, facet_notes, facet_probabilities, is_content  # noqa: E402

OLD_BAR = 0.50
BARS = [round(b, 2) for b in np.arange(0.44, 0.62, 0.01)]


def old_shared(qs: list[str], qv: np.ndarray, ps: list[str], pv: np.ndarray, f: int) -> bool:
    """The rule until 2026-12-05: the closest pair of the content sentences whose likeliest facet is ``f``."""
    qf, pf = np.argmax(facet_probabilities(qv), axis=1), np.argmax(facet_probabilities(pv), axis=1)
    qi = [i for i, s in enumerate(qs) if is_content(s) and qf[i] == f]
    pi = [j for j, s in enumerate(ps) if is_content(s) and pf[j] == f]
    return bool(qi and pi and float((qv[qi] @ pv[pi].T).max()) >= OLD_BAR)


def measure(folder: Path) -> dict:
    from assistant.evidence import SentenceCache
    from assistant.settings import load_settings
    from vectorstore.encoding import get_encoder, resolve_backend
    from vectorstore.papers import Paper

    e = load_settings().embedding
    cache = SentenceCache(get_encoder(e.model, e.batch_size, resolve_backend(e.model, e.backend)), capacity=10_000)
    corpus = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if "id" in r and (r.get("abstract") or "").strip():
            corpus[r["id"]] = Paper(id=r["id"], text=r["abstract"].strip())
    queries = [json.loads(x) for x in (folder / "queries.jsonl").read_text().splitlines() if x.strip()]
    needed = sorted({p for q in queries for p in [q["query_paper_id"], *q["candidate_ids"]] if p in corpus})
    vecs = cache.get([corpus[p] for p in needed])
    rows = []  # (facet, grade, old shared, new facet similarity)
    for q in queries:
        f = FACETS.index(q["facet"])
        qs, qv = vecs[q["query_paper_id"]]
        qs = [s.text for s in qs]
        for c in q["candidate_ids"]:
            if c == q["query_paper_id"] or c not in vecs:
                continue
            ps, pv = vecs[c]
            ps = [s.text for s in ps]
            note = {n.facet: n for n in facet_notes(qs, qv, ps, pv, below=0.0)}.get(q["facet"])
            rows.append((q["facet"], float(q["graded_relevance"].get(c, 0)), old_shared(qs, qv, ps, pv, f),
                         note.similarity if note is not None and note.query_sentence else -1.0))
    return report(rows)


def report(rows: list[tuple]) -> dict:
    facet = np.array([r[0] for r in rows])
    grade = np.array([r[1] for r in rows])
    old = np.array([r[2] for r in rows])
    sim = np.array([r[3] for r in rows])
    related, unrelated = grade >= 2, grade < 1

    def shares(shown: np.ndarray) -> dict:
        out = {"related": round(float(shown[related].mean()), 3), "unrelated": round(float(shown[unrelated].mean()), 3)}
        for f in FACETS:
            out[f] = [round(float(shown[related & (facet == f)].mean()), 3),
                      round(float(shown[unrelated & (facet == f)].mean()), 3)]
        return out

    before = shares(old)
    grid = [{"bar": b, **shares(sim >= b)} for b in BARS]
    fitted = next(g["bar"] for g in grid if g["unrelated"] <= before["unrelated"])
    return {"pairs": len(rows), "related": int(related.sum()), "unrelated": int(unrelated.sum()),
            "before": before, "grid": grid, "shared_above": fitted,
            "rule": "the lowest bar whose unrelated share is at most the old rule's"}


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    res = measure(Path(args[0]) if args else ROOT.parent / "shared" / "corpora" / "csfcube")
    if "--json" in sys.argv:
        print(json.dumps(res, indent=1))
    else:
        print(f"{res['pairs']} query–candidate pairs ({res['related']} related, {res['unrelated']} unrelated); "
              "shown shared: related / unrelated (per facet: background, method, result)")
        b = res["before"]
        print(f"before (likeliest facet, pair ≥ {OLD_BAR}): {b['related']:.2f} / {b['unrelated']:.2f}  "
              + "  ".join(f"{b[f][0]:.2f}/{b[f][1]:.2f}" for f in FACETS))
        for g in res["grid"]:
            print(f"centroid ≥ {g['bar']:.2f}: {g['related']:.2f} / {g['unrelated']:.2f}  "
                  + "  ".join(f"{g[f][0]:.2f}/{g[f][1]:.2f}" for f in FACETS))
        print(f"shared_above = {res['shared_above']} ({res['rule']})")
