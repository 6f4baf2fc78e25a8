"""Related work on pasted drafts: does the paper a draft rewrites come first? (issue 33, item 5)

``benchmarks/related_drafts.jsonl``: 40 drafts, one a line ``{qid, text, gold, source_title}``. Each rewrites
by hand, in 2–3 sentences, the abstract of one paper of ``shared/eval/train/corpus2k.jsonl`` (40 papers drawn
with ``random.seed(2026); random.sample(rows, 40)``): the problem, the approach and the finding in other words,
without the paper's own coined names, and sharing no run of six words with its title and abstract (checked by
program). ``gold`` is that paper: the best abstract for the draft, which related work should list first.

Each draft is pasted into ``related_work`` over an index of the 2,000 papers (``data/eval-index-<hash>``, built
once as ``paper-assistant eval --corpus`` builds it) with k = 10 and no bar, and scored by the gold paper's
reciprocal rank (0 when it is not among the 10) and hit@1; besides, how many of the golds clear the bar. For
reference, the same candidates ordered by the dense cosine alone (related work's order until 2026-12-05) and
by the reciprocal rank fusion of the dense and BM25 rankings (its candidate fusion before that).

Run: ``python benchmarks/related_drafts.py`` (about a minute once the index exists; building it: 10–25 minutes
on 2 cores). ``--json`` prints one object.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CORPUS = ROOT.parent / "shared" / "eval" / "train" / "corpus2k.jsonl"
DRAFTS = Path(__file__).with_name("related_drafts.jsonl")


def main(as_json: bool = False) -> dict:
    from assistant.answer import get_assistant
    from assistant.learning.evalsets import open_corpus_index
    from assistant.research import related_work
    from assistant.settings import load_settings

    settings, _ = open_corpus_index(load_settings(), [CORPUS])
    a = get_assistant(settings)
    drafts = [json.loads(line) for line in DRAFTS.read_text(encoding="utf-8").splitlines() if line.strip()]
    ranks: dict[str, list] = {name: [] for name in ORDERS}
    cleared, rows = 0, []
    for d in drafts:
        items = related_work(a.retriever, a.sentences, text=d["text"], k=10, bar=0.0)
        ranked = [r.paper.id for r in items]
        for name, order in reference_orders(a, d["text"]).items():
            ranks[name].append(_rank(order[:10], d["gold"]))
        ranks["related work"].append(_rank(ranked, d["gold"]))
        calibrated = related_work(a.retriever, a.sentences, text=d["text"], k=10)
        cleared += any(r.paper.id in d["gold"] for r in calibrated) and not calibrated.nearest_only
        gold = next((r for r in items if r.paper.id in d["gold"]), None)
        rows.append({"qid": d["qid"], "rank": ranks["related work"][-1], "shown": gold.percent if gold else None})
    out = {"drafts": len(drafts), "gold_above_bar": cleared, "per_draft": rows,
           "orders": {name: {"MRR@10": round(sum(1 / r for r in rs if r) / len(rs), 3), "hit@1": rs.count(1)}
                      for name, rs in ranks.items()}}
    if as_json:
        print(json.dumps(out, indent=1))
    else:
        print(f"{len(drafts)} drafts; gold above the calibrated bar: {cleared}")
        for name, r in out["orders"].items():
            print(f"  {ORDERS[name]:<62} MRR@10 {r['MRR@10']:.3f}  gold first {r['hit@1']}")
    return out


ORDERS = {"related work": "related work as shipped (its relevance)",
          "cosine": "the same candidates by dense cosine alone (until 2026-12-05)",
          "rrf": "the same candidates by RRF of the dense and BM25 rankings"}


def reference_orders(a, text: str) -> dict[str, list[str]]:
    """The candidates related work scores (:func:`assistant.research.related_score.score_pool`), ordered by the
    dense cosine alone and by the reciprocal rank fusion of the dense and BM25 rankings."""
    from assistant.research.related_score import score_pool
    from assistant.research.related import text_embedding
    from assistant.retrieval import reciprocal_rank_fusion

    cal = a.settings.calibration.related
    qvec = text_embedding(a.retriever, text)
    pool, parts, _ = score_pool(a.retriever, text, qvec, set(), 10, cal.pool_extra, cal.dense_weight)
    dense = sorted(parts, key=lambda i: -parts[i][0])
    bm25 = [i for i in a.retriever.bm25(text)[0] if i in parts]
    return {"cosine": dense, "rrf": reciprocal_rank_fusion([dense, bm25], k=a.retriever.rrf_k)[0]}


def _rank(ranked: list[str], gold: list[str]) -> int | None:
    return next((i for i, pid in enumerate(ranked, 1) if pid in gold), None)


if __name__ == "__main__":
    main("--json" in sys.argv)
