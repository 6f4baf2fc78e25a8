"""The evaluation harness behind `paper-assistant eval`.

Scores a question file in the ``shared/eval/dev.jsonl`` format (``{qid, kind, question, gold, evidence?}``)
against an index, for BM25, dense and hybrid retrieval side by side:
- ranking: recall@1/5/10, MRR, nDCG@10 per kind and overall (``none`` questions excluded; see metrics.py);
- abstention: share of ``none`` questions answered "no relevant abstract found" and share at least
  flagged, against the share of answerable questions wrongly abstained / flagged; plus the trade-off
  across cutoffs of the relevance judge's probability (abstained vs wrongly abstained);
- evidence: share of ``lookup`` questions whose first citation quotes the gold evidence sentence;
- the shipped models' feature importances (the ranker's standardized coefficients, the judge's shares);
- with ``cv``: the same evidence and abstention figures 5-fold cross-validated (assistant.train:
  both models refitted on four folds of the question file, scored on the fifth).
``--corpus`` alone, or with ``--distractors FILE.jsonl``, builds (once, then reuses) a separate index
holding those papers. :func:`run_csfcube` re-ranks CSFCube candidate pools and reports NDCG@20 and recall@20.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from assistant.evalsets import corpus_settings, distractor_settings, load_question_files, load_questions  # noqa: F401  (re-exported)
from assistant.metrics import ranking_metrics
from assistant.question import validate_question
from assistant.relevance import JUDGE_RULES, Verdict
from assistant.settings import Settings

MODES = ("bm25", "dense", "hybrid")
METRICS = ("R@1", "R@5", "R@10", "MRR", "nDCG@10")


class AbstentionReport(BaseModel):
    none_questions: int = 0
    answerable_questions: int = 0
    none_abstained: float = 0.0
    none_flagged: float = 0.0
    answerable_abstained: float = 0.0
    answerable_flagged: float = 0.0
    tradeoff: list[dict] = Field(default_factory=list)


class CVFigures(BaseModel):
    """Cross-validated figures (assistant.train.cross_validate)."""

    folds: int
    evidence_n: int
    evidence_accuracy: float
    evidence_dense_only: float
    abstention: AbstentionReport
    evidence_importances: list[tuple[str, float]]
    judge_importances: list[tuple[str, float]]
    by_index: list[dict] = Field(default_factory=list, description="abstention per simulated small index")
    by_file: list[dict] = Field(default_factory=list, description="abstention on the whole index per question file")


class EvalReport(BaseModel):
    questions: str
    index: str
    papers: int
    ranking: dict[str, dict[str, dict[str, float]]] = Field(default_factory=dict, description="mode → kind → metric")
    abstention: AbstentionReport = AbstentionReport()
    evidence_accuracy: float | None = None
    evidence_n: int = 0
    missing_gold: list[str] = Field(default_factory=list, description="gold paper ids the index does not hold")
    rules: dict[str, int] = Field(default_factory=dict, description="rule → questions where it decided something")
    evidence_importances: list[tuple[str, float]] = Field(default_factory=list, description="shipped ranker's coefficients")
    judge_importances: list[tuple[str, float]] = Field(default_factory=list, description="shipped judge's coefficients")
    cv: CVFigures | None = None


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS} | {"n": len(rows)}


def _norm(s: str) -> str:
    return " ".join(s.split())


def run_eval(settings: Settings, questions: Path | list[Path], distractors: Path | None = None,
             corpus: list[Path] | None = None, progress=None, ingest_callbacks: dict | None = None,
             cv: int = 0) -> EvalReport:
    """Evaluate ``questions`` (a file or several: :func:`load_question_files`) on the configured index (or corpus + distractors).

    ``ingest_callbacks``: ``on_total`` / ``progress`` for building that index (see
    vectorstore.ingest.ingest); ``progress()`` is called after each question. ``cv`` ≥ 2 adds
    ``cv``-fold cross-validated evidence and abstention figures (the models refitted per fold).
    Raises ValueError for ``cv`` = 1 or a question file the models cannot be fitted on."""
    from assistant.pipeline import Assistant
    from assistant.service import get_index

    if cv == 1:
        raise ValueError("--cv needs at least 2 folds")
    qs = load_question_files(questions)
    if distractors is not None or corpus:
        from vectorstore.ingest import ingest

        corpus = list(corpus or settings.corpus)
        settings = corpus_settings(settings, corpus, Path(distractors) if distractors else None)
        idx = get_index(settings, create=True)
        ingest([*corpus, *([distractors] if distractors else [])], idx, write_batch=settings.store.write_batch,
               **(ingest_callbacks or {}))
    else:
        idx = get_index(settings)
    assistant = Assistant(settings, idx)
    names = [questions] if isinstance(questions, (str, Path)) else list(questions)
    report = EvalReport(questions=", ".join(map(str, names)), index=str(settings.index), papers=idx.store.counts()[0])
    gold = sorted({g for q in qs for g in q["gold"]})
    held = idx.store.get_papers(gold)
    report.missing_gold = [g for g in gold if g not in held]  # scored as misses: say so, it is likely a wrong index

    report.rules = dict.fromkeys(RULES, 0)
    per_mode: dict[str, dict[str, list]] = {m: defaultdict(list) for m in MODES}
    answerable, nones = [], []
    evidence_hits, evidence_n = 0, 0
    for q in qs:
        qvec = idx.encoder.encode_one(q["question"])
        if q["gold"]:
            for mode in MODES:
                ranked = [p.id for p in assistant.retriever.search(q["question"], k=10, mode=mode, query_vec=qvec)]
                m = ranking_metrics(ranked, q["gold"], q["kind"])
                per_mode[mode][q["kind"]].append(m)
                per_mode[mode]["overall"].append(m)
        prep = assistant.prepare(q["question"])
        for rule in rules_fired(assistant, prep, q["question"]):
            report.rules[rule] += 1
        top = prep.relevance.get(prep.papers[0].id) if prep.papers else None
        (answerable if q["gold"] else nones).append((prep.verdict, judge_score(assistant.judge, top)))
        if q["kind"] == "lookup" and q.get("evidence"):
            ans = assistant.answer_prepared(prep)
            evidence_n += 1
            if ans.sources and ans.sources[0].paper_id in q["gold"] and _norm(ans.sources[0].sentence) == _norm(q["evidence"]):
                evidence_hits += 1
        if progress:
            progress()
    for mode in MODES:
        report.ranking[mode] = {kind: _mean(rows) for kind, rows in per_mode[mode].items()}
    report.abstention = abstention_report(answerable, nones)
    if evidence_n:
        report.evidence_accuracy = evidence_hits / evidence_n
        report.evidence_n = evidence_n
    report.evidence_importances = [(f, round(c, 3)) for f, c in assistant.ranker.importances()]
    if getattr(assistant.judge, "model", None) is not None:  # the learned judge
        report.judge_importances = [(f, round(c, 3)) for f, c in assistant.judge.model.importances()]
    if cv:
        from assistant.train import TrainSettings, cross_validate
        from assistant.trainset import collect_all, neutral_models

        rows, extra, variants = collect_all(Assistant(settings, idx, models=neutral_models()), qs, TrainSettings(folds=cv))
        report.cv = cv_figures(cross_validate(rows, TrainSettings(folds=cv), extra, variants))
    return report


def judge_score(judge, top) -> float:
    """The number the trade-off table cuts at: the learned judge's P(answers), or for the rules the
    best paper's dense + sentence cosine (what their 'closest match' threshold reads); 0 when nothing."""
    if top is None:
        return 0.0
    return judge.probability(top) if hasattr(judge, "probability") else top.dense + top.sentence


def cv_figures(res) -> CVFigures:
    """The report's form of an :class:`assistant.train.CVReport`."""
    ab = AbstentionReport(**{name: getattr(res, name) for name in AbstentionReport.model_fields})
    return CVFigures(folds=res.folds, evidence_n=res.evidence_n, evidence_accuracy=res.evidence_accuracy,
                     evidence_dense_only=res.evidence_dense_only, abstention=ab,
                     evidence_importances=res.evidence_importances, judge_importances=res.judge_importances, by_index=res.by_index, by_file=res.by_file)


RULES = (
    "question: list", "question: list by its lead-in only", "question: definition frame", "question: quantity cue",
    "question: a count", "question: names", "question: several-word name", "question: name spelled as the corpus",
    "question: reference (ordinal)", "question: reference (bare)", "question: reference (pronoun)",
    *(f"judge: {r}" for r in JUDGE_RULES),
    "list: a named paper below the bar", "cite: each named paper", "cite: a runner-up",
)
"""Every rule ``paper-assistant eval`` counts; one that never fires on a question file shows 0."""


def rules_fired(assistant, prep, text: str) -> list[str]:
    """The rules of :data:`RULES` that decided something for one prepared question (``text`` as asked)."""
    a, out = prep.analysis, []
    flags = {"question: list": a.is_list, "question: list by its lead-in only": a.list_cue == "lead-in",
             "question: definition frame": a.definition, "question: quantity cue": a.quantity,
             "question: a count": bool(a.counts), "question: names": bool(a.names),
             "question: several-word name": any(" " in n for n in a.names),
             "question: name spelled as the corpus": prep.question != validate_question(text)}
    out += [rule for rule, on in flags.items() if on]
    if a.reference is not None:
        out.append(f"question: reference ({a.reference.kind})")
    top = prep.relevance.get(prep.papers[0].id) if prep.papers else None
    explain = getattr(assistant.judge, "explain", None)
    if explain is not None:
        out.append(f"judge: {explain(top)[1]}")
    if prep.listing is not None and any(c.score < prep.listing.bar.relative_bar for c in prep.listing.papers):
        out.append("list: a named paper below the bar")
    cited = assistant.cited_candidates(prep)
    if len(cited) > 1 and not prep.multi and not prep.pinned:
        out.append("cite: each named paper" if assistant.judge.named(top) else "cite: a runner-up")
    return out


def abstention_report(answerable: list[tuple[Verdict, float]], nones: list[tuple[Verdict, float]]) -> AbstentionReport:
    """Shares abstained/flagged for both groups (``(verdict, judge's P(answerable))`` per question),
    and the trade-off: for cutoffs refusing 0–20 % of the answerable questions, the share of ``none``
    questions refused."""
    import numpy as np

    from assistant.learned import tradeoff

    rep = AbstentionReport(none_questions=len(nones), answerable_questions=len(answerable))
    share = lambda rows, verdicts: sum(v in verdicts for v, _ in rows) / len(rows) if rows else 0.0  # noqa: E731
    rep.none_abstained = share(nones, {Verdict.none})
    rep.none_flagged = share(nones, {Verdict.none, Verdict.weak})
    rep.answerable_abstained = share(answerable, {Verdict.none})
    rep.answerable_flagged = share(answerable, {Verdict.none, Verdict.weak})
    rep.tradeoff = tradeoff(np.array([p for _, p in answerable]), np.array([p for _, p in nones]))
    return rep


def format_report(rep: EvalReport) -> str:
    """The report as aligned text tables."""
    from assistant.train import abstention_lines, format_cv, importance_lines

    lines = [f"questions: {rep.questions}   index: {rep.index} ({rep.papers} papers)", ""]
    if rep.missing_gold:
        lines[1:1] = [f"warning: {len(rep.missing_gold)} gold paper ids are not in this index (e.g. "
                      f"{', '.join(rep.missing_gold[:3])}); questions naming them score as misses"]
    kinds = [k for k in ("lookup", "concept", "acronym", "multi", "related", "overall") if k in rep.ranking.get("hybrid", {})]
    lines.append(f"{'mode':<8}{'kind':<9}{'n':>4}" + "".join(f"{m:>9}" for m in METRICS))
    for mode in MODES:
        for k in kinds:
            row = rep.ranking[mode][k]
            lines.append(f"{mode:<8}{k:<9}{int(row['n']):>4}" + "".join(f"{row[m]:>9.3f}" for m in METRICS))
        lines.append("")
    lines += abstention_lines(rep.abstention)
    if rep.evidence_accuracy is not None:
        lines += ["", f"evidence accuracy (lookup, first citation quotes the gold sentence): "
                      f"{rep.evidence_accuracy:.2f} ({round(rep.evidence_accuracy * rep.evidence_n)}/{rep.evidence_n})"]
    if rep.evidence_importances:
        lines += ["", "feature importances, largest first (ranker: standardized coefficients; judge: share of |coefficient| and split gain)"]
        lines += importance_lines("  evidence ranker", rep.evidence_importances)
        lines += (importance_lines("  relevance judge", rep.judge_importances) if rep.judge_importances else
                  ["  relevance judge: the rules decide (AbstentionRule); the learned judge is opt-in (calibration.abstention.learned)"])
    if rep.cv is not None:
        lines += [""] + format_cv(rep.cv)
    if rep.rules:
        fired = [(r, n) for r, n in rep.rules.items() if n]
        lines += ["", "rules that decided something (questions of the file):"]
        lines += [f"  {n:>4}  {r}" for r, n in fired]
        never = [r for r, n in rep.rules.items() if not n]
        if never:
            lines.append("  never fired: " + "; ".join(never))
    return "\n".join(lines)


def eval_command(settings: Settings, questions: Path | list[Path] | None, distractors: Path | None = None,
                 corpus: list[Path] | None = None, csfcube: Path | None = None, cv: int = 0, as_json: bool = False,
                 ingest_callbacks: dict | None = None) -> str:
    """``paper-assistant eval``: the CSFCube re-ranking figures, or the report on a question file
    (:func:`run_eval`), as text or JSON. Raises ValueError when neither is given."""
    if csfcube is not None:
        from vectorstore.embedding import get_encoder, resolve_backend

        e = settings.embedding
        return format_csfcube(run_csfcube(get_encoder(e.model, e.batch_size, resolve_backend(e.model, e.backend)),
                                          csfcube), as_json)
    if not questions:
        raise ValueError("give --questions FILE (or --csfcube DIR)")
    report = run_eval(settings, questions, distractors=distractors, corpus=corpus, ingest_callbacks=ingest_callbacks,
                      cv=cv)
    return report.model_dump_json(indent=2) if as_json else format_report(report)


def format_csfcube(res: dict, as_json: bool = False) -> str:
    """:func:`run_csfcube`'s result as JSON or as lines (overall, then per facet)."""
    if as_json:
        return json.dumps(res, indent=2)
    lines = [f"CSFCube ({res['queries']} queries, candidate re-ranking): NDCG@20 {res['NDCG@20']:.3f}  R@20 {res['R@20']:.3f}"]
    for facet, r in sorted(res["per_facet"].items()):
        lines.append(f"  {facet:<11} n={r['n']:<3} NDCG@20 {r['NDCG@20']:.3f}  R@20 {r['R@20']:.3f}")
    return "\n".join(lines)


# --- CSFCube: related-work re-ranking ------------------------------------------------------------
def ndcg_graded(ranked: list[str], gains: dict[str, float], k: int = 20) -> float:
    """nDCG@k with graded gains (CSFCube relevance 0–3), log2 discount."""
    dcg = sum(gains.get(d, 0.0) / math.log2(i + 2) for i, d in enumerate(ranked[:k]))
    ideal = sorted(gains.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def run_csfcube(encoder, folder: Path) -> dict:
    """Re-rank each CSFCube query's candidate pool; returns mean NDCG@20 and recall@20 (overall and per facet).

    Scoring (see :func:`assistant.related.facet_scores`): the facet's sentences are aligned to each
    candidate's sentences (mean over facet sentences of the best cosine), fused with whole-abstract
    similarity — the sentence-alignment idea of Mysore et al. (2022, "Multi-vector models with textual
    guidance for fine-grained scientific document similarity"), here with the packaged MiniLM.
    """
    from assistant.related import facet_scores
    from vectorstore.chunking import split_sentences

    folder = Path(folder)
    for need in ("corpus.jsonl", "queries.jsonl"):
        if not (folder / need).is_file():
            raise FileNotFoundError(f"{folder} is not a CSFCube folder: {need} is missing (see shared/corpora/csfcube)")
    corpus = {}
    for line in (folder / "corpus.jsonl").read_text(encoding="utf-8").splitlines():
        if line.strip():
            r = json.loads(line)
            if "id" not in r:
                continue
            corpus[r["id"]] = ((r.get("title") or "") + ". " + (r.get("abstract") or "")).strip()
    queries = [json.loads(line) for line in (folder / "queries.jsonl").read_text().splitlines() if line.strip()]
    if not queries:
        raise ValueError(f"{folder / 'queries.jsonl'}: no queries in the file")
    need = ("qid", "query", "facet", "facet_text", "query_paper_id", "gold_ids", "candidate_ids", "graded_relevance")
    for n, q in enumerate(queries, 1):
        missing = [k for k in need if k not in q]
        if missing:
            raise ValueError(f"{folder / 'queries.jsonl'}: query {n} lacks {', '.join(missing)}")
    needed = sorted({c for q in queries for c in q["candidate_ids"] if c in corpus})
    sents = {c: split_sentences(corpus[c]) or [corpus[c]] for c in needed}
    flat = [s for c in needed for s in sents[c]]
    vecs = encoder.encode(flat, batch_size=64)
    cache, pos = {}, 0
    for c in needed:
        cache[corpus[c]] = vecs[pos : pos + len(sents[c])]
        pos += len(sents[c])
    per_facet: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for q in queries:
        cands = [c for c in q["candidate_ids"] if c in corpus and c != q["query_paper_id"]]
        scores = facet_scores(encoder, q["facet_text"], q["query"], [corpus[c] for c in cands],
                              sentence_vectors=cache.__getitem__)
        ranked = [c for _, c in sorted(zip(scores, cands), key=lambda t: -t[0])]
        gains = {d: float(g) for d, g in q["graded_relevance"].items() if d != q["query_paper_id"]}
        gold = set(q["gold_ids"]) - {q["query_paper_id"]}
        rec = len(gold & set(ranked[:20])) / len(gold) if gold else 0.0
        per_facet[q["facet"]].append((ndcg_graded(ranked, gains, 20), rec))
    allrows = [r for rows in per_facet.values() for r in rows]
    summary = {"queries": len(allrows), "NDCG@20": sum(r[0] for r in allrows) / len(allrows),
               "R@20": sum(r[1] for r in allrows) / len(allrows)}
    summary["per_facet"] = {f: {"n": len(rows), "NDCG@20": sum(r[0] for r in rows) / len(rows),
                                "R@20": sum(r[1] for r in rows) / len(rows)} for f, rows in per_facet.items()}
    return summary
