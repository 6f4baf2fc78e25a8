"""Refit the answer path's hand-fitted numbers on the training questions (never on dev.jsonl) and print them.

Each part prints the value `assistant/settings.py` ships and the figures its source quotes; none writes a file
(the numbers are few and each is read before it is changed). Over the training corpus's own index (built once
beside the configured index, as `paper-assistant eval --corpus` builds it):

- ``rules``: calibration.abstention (none_dense, none_sentence, weak_sum, covered), the rules judge used when
  the relevance model is off and for list membership. On the 663 answerable and 185 ``none`` questions of
  train.jsonl + data/train/written.jsonl that are no list question (a question whose top paper holds a name it
  names is answered by the rule, whatever the numbers, and is left out of the fit): the (none_dense,
  none_sentence) pair refusing the most ``none`` questions while refusing at most 1% of the answerable ones;
  weak_sum the largest flagging at most 10% of them; covered just above the coverage of every refused ``none``
  question. Also 5-fold CV and data/train/calibration.jsonl as held-out questions.
- ``coverage``: calibration.fusion.coverage_weight, the smallest weight within 0.001 of the best hybrid MRR on
  the answerable training questions (calibration.jsonl held out).
- ``support``: calibration.answer.support_threshold, Youden's J of each training lookup's gold answer against
  its gold abstract's best sentence (supported) and every other abstract's best sentence (unsupported).
- ``lists``: calibration.listing.relative_bar and lexical_weight on 40 title-phrase lists ("Which papers study
  <phrase>?", the phrases the relevance model's list calibration holds out); then calibration.answer.topic_margin
  on the quotes of the same lists.
- ``unmatched``: calibration.related.unmatched_below on CSFCube (its own folder, ../shared/corpora/csfcube).

Run: ``python benchmarks/fit_training_numbers.py PART [PART …]`` from the project root (rules about 6 minutes,
lists about 3 plus 2 per topic margin, the others under 2 on 2 quiet cores; the first run indexes corpus2k).
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SHARED = ROOT.parent / "shared"
CORPUS = SHARED / "eval" / "train" / "corpus2k.jsonl"
TRAIN = [SHARED / "eval" / "train" / "train.jsonl", ROOT / "data" / "train" / "written.jsonl"]
HELD_OUT = [ROOT / "data" / "train" / "calibration.jsonl"]
CSFCUBE = SHARED / "corpora" / "csfcube"


def assistant(model: str | None = None):
    """``(assistant, index)`` over corpus2k's own index; ``model=""``: the rules judge."""
    from assistant.answer.pipeline import Assistant
    from assistant.learning.evalsets import open_corpus_index
    from assistant.settings import load_settings

    s = load_settings()
    if model is not None:
        cal = s.calibration
        s = s.model_copy(update={"calibration": cal.model_copy(update={"relevance": cal.relevance.model_copy(update={"model": model})})})
    s, idx = open_corpus_index(s, [CORPUS])
    return Assistant(s, idx), idx


def questions(paths) -> list[dict]:
    from assistant.learning.evalsets import load_question_files

    return load_question_files(paths)


def youden(pos, neg) -> tuple[float, float]:
    """assistant.answer.citations.calibrate_threshold's rule (the first best J, midway to the highest negative
    below it), vectorised for a million negatives; ``(threshold, J)``."""
    pos, neg = np.sort(np.asarray(pos, float)), np.sort(np.asarray(neg, float))
    ts = np.unique(np.concatenate([pos, neg]))
    j = (len(pos) - np.searchsorted(pos, ts)) / len(pos) - (len(neg) - np.searchsorted(neg, ts)) / len(neg)
    best = int(np.argmax(j))
    below = neg[neg < ts[best]]
    return (float((ts[best] + below[-1]) / 2) if below.size else float(ts[best])), float(j[best])


# --- rules ----------------------------------------------------------------------------------------
GRID = np.round(np.arange(0.15, 0.50, 0.005), 3)


def rule_rows(a, qs) -> list[dict]:
    """The top paper's evidence for each question, as the rules judge reads it."""
    out = []
    for q in qs:
        prep = a.prepare(q["question"], k=10)
        top = prep.relevance.get(prep.papers[0].id) if prep.papers else None
        if top is None or (prep.analysis is not None and prep.analysis.is_list):
            continue
        out.append({"qid": q["qid"], "answerable": bool(q["gold"]), "named": a.judge.named(top),
                    "dense": top.dense, "sentence": top.sentence, "coverage": top.coverage})
    return out


def fit_rules(rows: list[dict], refuse=0.01, flag=0.10) -> dict:
    rows = [r for r in rows if not r["named"]]
    ans = [r for r in rows if r["answerable"]]
    non = [r for r in rows if not r["answerable"]]
    ad, asn = np.array([r["dense"] for r in ans]), np.array([r["sentence"] for r in ans])
    nd, ns = np.array([r["dense"] for r in non]), np.array([r["sentence"] for r in non])
    allowed, best = int(np.floor(refuse * len(ans) + 1e-9)), None
    for d in GRID:
        for s in GRID:
            if ((ad < d) & (asn < s)).sum() > allowed:
                continue
            key = (int(((nd < d) & (ns < s)).sum()), d + s)
            if best is None or key > best[0]:
                best = (key, float(d), float(s))
    _, d, s = best
    sums = np.sort(ad + asn)
    k = int(np.floor(flag * len(ans) + 1e-9))
    weak = float((sums[k - 1] + sums[k]) / 2) if k else float(sums[0])
    refused = [r["coverage"] for r in non if r["dense"] < d and r["sentence"] < s]
    covered = min(1.0, float(np.ceil((max(refused) + 1e-9) * 20) / 20)) if refused else 1.0
    return {"none_dense": d, "none_sentence": s, "weak_sum": round(weak, 3), "covered": covered}


def rule_verdict(r: dict, t: dict) -> str:
    if r["named"]:
        return "answered"
    if r["dense"] < t["none_dense"] and r["sentence"] < t["none_sentence"]:
        return "weak" if r["coverage"] >= t["covered"] else "none"
    return "weak" if r["dense"] + r["sentence"] < t["weak_sum"] else "answered"


def rule_shares(rows: list[dict], t: dict) -> str:
    def share(vs, want):
        return sum(v in want for v in vs) / max(1, len(vs))

    ans = [rule_verdict(r, t) for r in rows if r["answerable"]]
    non = [rule_verdict(r, t) for r in rows if not r["answerable"]]
    return (f"answerable ({len(ans)}) {share(ans, {'none'}):.1%} refused, {share(ans, {'none', 'weak'}):.1%} "
            f"refused or flagged; 'none' ({len(non)}) {share(non, {'none'}):.0%} refused, "
            f"{share(non, {'none', 'weak'}):.0%} at least flagged")


def part_rules() -> None:
    from assistant.settings import AbstentionCalibration

    a, _ = assistant(model="")
    rows, held = rule_rows(a, questions(TRAIN)), rule_rows(a, questions(HELD_OUT))
    fitted = fit_rules(rows)
    shipped = AbstentionCalibration().model_dump(include={"none_dense", "none_sentence", "weak_sum", "covered"})
    print("fitted", fitted, "shipped", shipped)
    print("  training:", rule_shares(rows, shipped))
    print("  held-out calibration.jsonl:", rule_shares(held, shipped))
    rng = np.random.RandomState(0)
    fold = {}
    for cls in (True, False):
        ids = [r["qid"] for r in rows if r["answerable"] == cls]
        for j, i in enumerate(rng.permutation(len(ids))):
            fold[ids[i]] = j % 5
    scored = []
    for f in range(5):
        t = fit_rules([r for r in rows if fold[r["qid"]] != f])
        scored += [dict(r, verdict=rule_verdict(r, t)) for r in rows if fold[r["qid"]] == f]
    print("  5-fold CV:", _cv_text(scored))


def _cv_text(scored: list[dict]) -> str:
    def share(vs, want):
        return sum(v in want for v in vs) / max(1, len(vs))

    ans = [r["verdict"] for r in scored if r["answerable"]]
    non = [r["verdict"] for r in scored if not r["answerable"]]
    return (f"answerable {share(ans, {'none'}):.2%} refused, {share(ans, {'none', 'weak'}):.1%} refused or flagged; "
            f"'none' {share(non, {'none'}):.0%} refused, {share(non, {'none', 'weak'}):.0%} at least flagged")


# --- coverage weight --------------------------------------------------------------------------------
def part_coverage() -> None:
    from assistant.evaluation.metrics import ranking_metrics
    from assistant.retrieval import HybridRetriever
    from assistant.settings import Calibration

    a, idx = assistant()
    fit, held = [q for q in questions(TRAIN) if q["gold"]], [q for q in questions(HELD_OUT) if q["gold"]]
    vecs = {q["qid"]: v for q, v in zip(fit + held, idx.encoder.encode([q["question"] for q in fit + held]))}
    mrr = {}
    for w in (0.0, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.03):
        r = HybridRetriever(idx, a.settings.retrieval.candidates, 60, w or 1e-12, 30)  # 1e-12: names first, no coverage

        def score(qs, r=r):
            return float(np.mean([ranking_metrics([p.id for p in r.search(q["question"], k=10, query_vec=vecs[q["qid"]])],
                                                  q["gold"], q["kind"])["MRR"] for q in qs]))

        mrr[w] = (score(fit), score(held))
        print(f"  weight {w}: MRR {mrr[w][0]:.4f} ({len(fit)} training questions), {mrr[w][1]:.4f} (held out)", flush=True)
    best = max(m for m, _ in mrr.values())
    print("fitted", min(w for w, (m, _) in mrr.items() if m >= best - 0.001), "shipped", Calibration().fusion.coverage_weight)


# --- support threshold ------------------------------------------------------------------------------
def part_support() -> None:
    from assistant.settings import Calibration

    a, idx = assistant(model="")
    ids = sorted(set(idx.lexical().paper_ids))
    papers = idx.store.get_papers(ids)
    cache = a.sentences.get([papers[i] for i in ids])
    order = [i for i in ids if len(cache[i][1])]
    allv = np.vstack([cache[i][1] for i in order])
    owner = np.concatenate([[k] * len(cache[i][1]) for k, i in enumerate(order)])
    at = {i: k for k, i in enumerate(order)}

    def pairs(qs):
        good, bad = [], []
        for q, v in zip(qs, idx.encoder.encode([q["answer"] for q in qs])):
            best = np.full(len(order), -2.0)
            np.maximum.at(best, owner, allv @ v)
            g = at[q["gold"][0]]
            good.append(best[g])
            bad.extend(np.delete(best, g))
        return np.array(good), np.array(bad)

    good, bad = pairs([q for q in questions(TRAIN) if q["kind"] == "lookup"])
    t, j = youden(good, bad)
    shipped = Calibration().answer.support_threshold
    print(f"fitted {t:.4f} (J {j:.3f}; {len(good)} lookups) shipped {shipped}: gold supported {np.mean(good >= shipped):.0%}, "
          f"wrong pairs {np.mean(bad >= shipped):.1%}")
    hg, hb = pairs([q for q in questions(HELD_OUT) if q["kind"] == "lookup"])
    print(f"  held-out calibration.jsonl lookups: gold supported {np.mean(hg >= shipped):.0%}, wrong {np.mean(hb >= shipped):.1%}")


# --- the list bar and the list quotes ---------------------------------------------------------------
def list_phrases(idx, n: int = 40) -> list[str]:
    from assistant.learning.crossencoder_pairs import frequent_phrases

    papers = idx.store.get_papers(sorted(set(idx.lexical().paper_ids)))
    trained = set(frequent_phrases(papers, 40))
    return [p for p in frequent_phrases(papers, 10 * n, min_papers=4) if p not in trained][:n]


def part_lists() -> None:
    import dataclasses

    import assistant.answer.listed as listed
    from assistant.settings import Calibration

    a, idx = assistant()
    papers = idx.store.get_papers(sorted(set(idx.lexical().paper_ids)))
    seen: dict = {}
    real = listed.select

    def spy(candidates, bar, top_verdict, judge=None):
        seen["rows"] = [(c.id, c.lexical, c.semantic, bool(judge.named(c.relevance)),
                         judge.decide(dataclasses.replace(c.relevance, list_share=None)).value != "none") for c in candidates]
        seen["top"] = top_verdict.value
        return real(candidates, bar, top_verdict, judge)

    listed.select = spy
    lists = []
    for phrase in list_phrases(idx):
        seen.clear()
        a.prepare(f"Which papers study {phrase}?", k=a.list_bar.pool)
        if seen.get("top") in (None, "none"):
            continue
        rows = []
        for pid, lex, sem, named, kept in seen["rows"]:
            p = papers[pid]
            title, anywhere = phrase in p.title.lower(), phrase in (p.title + " " + p.text).lower()
            rows.append((lex, sem, named, kept, 1 if title else 0 if not anywhere else None, int(anywhere)))
        lists.append(rows)
    listed.select = real

    def run(bar, w, labels):
        ps, rs, fs = [], [], []
        for rows in lists:
            lab = [(r, r[4] if labels == "title" else r[5]) for r in rows if (r[4] if labels == "title" else r[5]) is not None]
            pos = sum(y for _, y in lab)
            if not pos:
                continue
            got = [y for r, y in lab if (w * r[0] + (1 - w) * r[1] >= bar - 1e-9 or r[2]) and r[3]]
            p, rc = (sum(got) / len(got) if got else 0.0), sum(got) / pos
            ps.append(p), rs.append(rc), fs.append(2 * p * rc / (p + rc) if p + rc else 0.0)
        return np.mean(ps), np.mean(rs), np.mean(fs)

    bars = np.round(np.arange(0.40, 0.951, 0.01), 2)
    for labels in ("title", "anywhere"):
        for w in (0.3, 0.4, 0.5, 0.6, 0.7):
            res = [(b, *run(b, w, labels)) for b in bars]
            top = max(r[3] for r in res)
            near = [r[0] for r in res if r[3] >= top - 0.01]
            best = max(res, key=lambda r: r[3])
            print(f"  {labels} labels, lexical weight {w}: best F1 {top:.3f} at {best[0]} (P {best[1]:.2f} R {best[2]:.2f}); "
                  f"within 0.01 of it {near[0]}–{near[-1]}")
    cal = Calibration().listing
    print(f"shipped relative_bar {cal.relative_bar}, lexical_weight {cal.lexical_weight}: P/R/F1 (title labels) "
          + "/".join(f"{x:.2f}" for x in run(cal.relative_bar, cal.lexical_weight, "title")))

    for margin in (0.0, 0.05, 0.1, 0.15, 0.2, 0.3, 1.0):
        a.calibration = a.calibration.model_copy(update={"answer": a.calibration.answer.model_copy(update={"topic_margin": margin})})
        hit = n = 0
        for phrase in list_phrases(idx):
            prep = a.prepare(f"Which papers study {phrase}?", k=a.list_bar.pool)
            for pid, (sent, _) in prep.evidence.items():
                p = papers[pid]
                if sent is not None and phrase in p.title.lower() and phrase in p.text.lower():
                    n, hit = n + 1, hit + (phrase in sent.text.lower())
        print(f"  topic_margin {margin}: {hit}/{n} quotes hold the phrase ({hit / max(1, n):.3f})", flush=True)
    print("shipped topic_margin", Calibration().answer.topic_margin)


# --- related work: unmatched sentences --------------------------------------------------------------
def part_unmatched() -> None:
    from assistant.evidence import SentenceCache
    from assistant.settings import Calibration, load_settings
    from vectorstore.chunks import Chunker
    from vectorstore.encoding import get_encoder, resolve_backend

    e = load_settings().embedding
    enc = get_encoder(e.model, e.batch_size, resolve_backend(e.model, e.backend))
    cache = SentenceCache(enc, None, chunker=Chunker.for_encoder(enc))
    corpus = {}
    for line in (CSFCUBE / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        if "id" in r:
            corpus[r["id"]] = ((r.get("title") or "") + ". " + (r.get("abstract") or "")).strip()
    vecs: dict = {}

    def of(pid):
        if pid not in vecs:
            vecs[pid] = cache.embed_text(corpus[pid])[1]
        return vecs[pid]

    rng, done, rel, unrel = random.Random(0), set(), [], []
    for q in (json.loads(x) for x in (CSFCUBE / "queries.jsonl").read_text().splitlines() if x.strip()):
        me, g = q["query_paper_id"], q["graded_relevance"]
        if me not in corpus:
            continue
        pos = [c for c, v in g.items() if v >= 2 and c in corpus and c != me]
        neg = [c for c, v in g.items() if v == 0 and c in corpus and c != me]
        for c in rng.sample(pos, min(4, len(pos))) + rng.sample(neg, min(4, len(neg))):
            if (me, c) not in done:
                done.add((me, c))
                (rel if g[c] >= 2 else unrel).extend((of(me) @ of(c).T).max(axis=1).tolist())
    rel, unrel = np.array(rel), np.array(unrel)
    t, j = youden(rel, unrel)
    grid = np.round(np.arange(0.3, 0.7, 0.01), 2)
    eer = min(grid, key=lambda x: abs((rel < x).mean() - (unrel >= x).mean()))
    print(f"{len(done)} pairs; best match median: related {np.median(rel):.3f}, unrelated {np.median(unrel):.3f}; "
          f"equal error at {eer} ({(rel < eer).mean():.0%} vs {(unrel >= eer).mean():.0%}); Youden's J at {t:.3f}")
    print("shipped unmatched_below", Calibration().related.unmatched_below)


PARTS = {"rules": part_rules, "coverage": part_coverage, "support": part_support, "lists": part_lists,
         "unmatched": part_unmatched}

if __name__ == "__main__":
    wanted = sys.argv[1:] or list(PARTS)
    unknown = [p for p in wanted if p not in PARTS]
    if unknown:
        sys.exit(f"unknown part {unknown[0]!r}: choose from {', '.join(PARTS)}")
    for part in wanted:
        print(f"== {part}", flush=True)
        PARTS[part]()
