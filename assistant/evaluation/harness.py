"""The evaluation harness behind `paper-assistant eval`.

Scores a question file in the ``shared/eval/dev.jsonl`` format (``{qid, kind, question, gold, evidence?}``)
against an index, for BM25, dense and hybrid retrieval side by side:
- ranking: recall@1/5/10, MRR, nDCG@10 per kind and overall (``none`` questions excluded; see metrics.py);
- abstention: share of ``none`` questions answered "no relevant abstract found" and share at least
  flagged, against the share of answerable questions wrongly abstained / flagged; plus the trade-off
  across cutoffs of the relevance judge's probability (abstained vs wrongly abstained);
- evidence: share of ``lookup`` questions whose first citation quotes the gold evidence sentence;
- the shipped models' feature importances (the ranker's standardized coefficients, the judge's shares);
- with ``cv``: the same evidence and abstention figures 5-fold cross-validated (assistant.learning.train:
  both models refitted on four folds of the question file, scored on the fifth).
``--corpus`` alone, or with ``--distractors FILE.jsonl``, builds (once, then reuses) a separate index
holding those papers. :func:`assistant.evaluation.csfcube.run_csfcube` re-ranks CSFCube candidate pools and reports NDCG@20 and recall@20.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from assistant.evaluation.tally import MODES, RERANKED, Tally
from assistant.learning import load_question_files
from assistant.settings import Settings
from assistant.types import Verdict

METRICS = ("R@1", "R@5", "R@10", "MRR", "nDCG@10")


class AbstentionReport(BaseModel):
    """How often the judge refuses (``none``: "no relevant abstract found") or flags (``weak``: "closest
    match") each class of question; shares in [0, 1]."""

    none_questions: int = 0
    """Questions no indexed paper answers (kind ``none``)."""
    answerable_questions: int = 0
    none_abstained: float = 0.0
    """Share of the ``none`` questions refused: the higher the better."""
    none_flagged: float = 0.0
    """Share of the ``none`` questions refused or flagged."""
    answerable_abstained: float = 0.0
    """Share of the answerable questions wrongly refused: the lower the better (target ≤ 0.03)."""
    answerable_flagged: float = 0.0
    tradeoff: list[dict] = Field(default_factory=list)
    """The rules' refusals across thresholds: one row per setting."""


class CVFigures(BaseModel):
    """Cross-validated figures (assistant.learning.train.cross_validate)."""

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
    cross_encoder: bool = False
    lists: dict[str, float] = Field(default_factory=dict, description="list questions: precision, recall, absent topics listing none")
    cv: CVFigures | None = None
    relevance_cv: dict[str, float] = Field(default_factory=dict, description="relevance model's cutoffs refitted per fold")


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: sum(r[m] for r in rows) / len(rows) for m in METRICS} | {"n": len(rows)}


def run_eval(settings: Settings, questions: Path | list[Path], distractors: Path | None = None,
             corpus: list[Path] | None = None, progress=None, ingest_callbacks: dict | None = None,
             cv: int = 0) -> EvalReport:
    """Evaluate ``questions`` (a file or several: :func:`load_question_files`) on the configured index (or corpus + distractors).

    ``ingest_callbacks``: ``on_total`` / ``progress`` for building that index (see
    vectorstore.ingest.run.ingest); ``progress()`` is called after each question. ``cv`` ≥ 2 adds
    ``cv``-fold cross-validated evidence and abstention figures (the models refitted per fold).
    Raises ValueError for ``cv`` = 1 or a question file the models cannot be fitted on."""
    from assistant.answer import Assistant

    if cv == 1:
        raise ValueError("--cv needs at least 2 folds")
    qs = load_question_files(questions)
    if cv and cv > len(qs):  # one fit per fold: --cv 99999 on 2 questions fitted on and on, saying nothing (13th round)
        raise ValueError(f"--cv {cv}: more folds than questions ({len(qs)}); give at most {len(qs)}")
    settings, idx = _eval_index(settings, distractors, corpus, ingest_callbacks)
    assistant = Assistant(settings, idx)
    names = [questions] if isinstance(questions, (str, Path)) else list(questions)
    report = EvalReport(questions=", ".join(map(str, names)), index=str(settings.index), papers=idx.store.counts()[0],
                        cross_encoder=assistant.relevance_model is not None)
    gold = sorted({g for q in qs for g in q["gold"]})
    held = idx.store.get_papers(gold)
    report.missing_gold = [g for g in gold if g not in held]  # scored as misses: say so, it is likely a wrong index
    tally = Tally()
    for q in qs:
        tally.add(assistant, idx, q)
        if progress:
            progress()
    _fill(report, tally, assistant)
    if cv:
        _add_cv(report, settings, idx, assistant, qs, cv)
    return report


def _eval_index(settings: Settings, distractors: Path | None, corpus: list[Path] | None,
                ingest_callbacks: dict | None):
    """``(settings, index)`` to evaluate on: the configured index, or with ``corpus`` or ``distractors`` a
    separate one holding those papers (built once, then refreshed)."""
    from assistant.answer import get_index

    if distractors is None and not corpus:
        return settings, get_index(settings)
    from assistant.learning import open_corpus_index

    return open_corpus_index(settings, list(corpus or settings.corpus), ingest_callbacks=ingest_callbacks,
                             distractors=distractors)


def _fill(report: EvalReport, tally: Tally, assistant) -> None:
    """Write the figures of a finished ``tally`` and the shipped models' importances into ``report``."""
    report.rules = tally.rules
    for mode in (*MODES, RERANKED):
        report.ranking[mode] = {kind: _mean(rows) for kind, rows in tally.per_mode[mode].items()}
    if tally.recall:
        report.lists.update(precision=sum(tally.precision) / len(tally.precision) if tally.precision else 0.0,
                            recall=sum(tally.recall) / len(tally.recall), n=len(tally.recall))
    if tally.absent:
        report.lists.update(absent=tally.absent, absent_empty=tally.absent_empty)
    report.abstention = abstention_report(tally.answerable, tally.nones)
    if tally.evidence_n:
        report.evidence_accuracy = tally.evidence_hits / tally.evidence_n
        report.evidence_n = tally.evidence_n
    report.evidence_importances = [(f, round(c, 3)) for f, c in assistant.ranker.importances()]
    if getattr(assistant.judge, "model", None) is not None:  # the learned judge
        report.judge_importances = [(f, round(c, 3)) for f, c in assistant.judge.model.importances()]


def _add_cv(report: EvalReport, settings: Settings, idx, assistant, qs: list[dict], cv: int) -> None:
    """The ``cv``-fold figures: the relevance model's calibration refitted per fold (when it is on), then the
    evidence ranker and the judge refitted per fold."""
    from assistant.answer import Assistant

    if assistant.relevance_model is not None:
        from assistant.learning import FitSettings, candidate_logits
        from assistant.relevance import calibrate

        fit = FitSettings(folds=cv)
        rows = candidate_logits(assistant, assistant.relevance_model.encoder, qs, fit.rerank)
        report.relevance_cv = {**calibrate(rows, fit)[2], "folds": cv}
    from assistant.learning import TrainSettings, cross_validate
    from assistant.learning import collect_all, neutral_models

    rows, extra, variants = collect_all(Assistant(settings, idx, models=neutral_models()), qs, TrainSettings(folds=cv))
    report.cv = cv_figures(cross_validate(rows, TrainSettings(folds=cv), extra, variants))


def cv_figures(res) -> CVFigures:
    """The report's form of an :class:`assistant.learning.train.CVReport`."""
    ab = AbstentionReport(**{name: getattr(res, name) for name in AbstentionReport.model_fields})
    return CVFigures(folds=res.folds, evidence_n=res.evidence_n, evidence_accuracy=res.evidence_accuracy,
                     evidence_dense_only=res.evidence_dense_only, abstention=ab,
                     evidence_importances=res.evidence_importances, judge_importances=res.judge_importances, by_index=res.by_index, by_file=res.by_file)


def abstention_report(answerable: list[tuple[Verdict, float]], nones: list[tuple[Verdict, float]]) -> AbstentionReport:
    """Shares abstained/flagged for both groups (``(verdict, judge's P(answerable))`` per question),
    and the trade-off: for cutoffs refusing 0–20 % of the answerable questions, the share of ``none``
    questions refused."""
    import numpy as np

    from assistant.relevance import tradeoff

    rep = AbstentionReport(none_questions=len(nones), answerable_questions=len(answerable))
    share = lambda rows, verdicts: sum(v in verdicts for v, _ in rows) / len(rows) if rows else 0.0  # noqa: E731
    rep.none_abstained = share(nones, {Verdict.none})
    rep.none_flagged = share(nones, {Verdict.none, Verdict.weak})
    rep.answerable_abstained = share(answerable, {Verdict.none})
    rep.answerable_flagged = share(answerable, {Verdict.none, Verdict.weak})
    rep.tradeoff = tradeoff(np.array([p for _, p in answerable]), np.array([p for _, p in nones]))
    return rep


def honesty_lines(rep: EvalReport) -> list[str]:
    """The honesty figures: unanswerable questions answered with no hedge, answerable ones refused, and refused or
    flagged, absent-topic lists listing nothing, list precision and recall ('multi' questions)."""
    a = rep.abstention
    lines = ["honesty (verdicts of the answer path as configured):"]
    if a.none_questions:
        lines.append(f"  unanswerable answered with no hedge: {1 - a.none_flagged:.1%} of {a.none_questions}")
    if a.answerable_questions:
        lines.append(f"  answerable refused: {a.answerable_abstained:.1%}; refused or flagged: {a.answerable_flagged:.1%} (of {a.answerable_questions})")
    if rep.lists.get("absent"):
        lines.append(f"  absent-topic lists with zero papers: {int(rep.lists['absent_empty'])} of {int(rep.lists['absent'])}")
    if rep.lists.get("n"):
        lines.append(f"  list precision {rep.lists['precision']:.2f}, recall {rep.lists['recall']:.2f} "
                     f"({int(rep.lists['n'])} 'multi' questions)")
    return lines


def format_report(rep: EvalReport) -> str:
    """The report as aligned text tables."""
    from assistant.learning import abstention_lines, format_cv, importance_lines

    lines = [f"questions: {rep.questions}   index: {rep.index} ({rep.papers} papers)", ""]
    if rep.missing_gold:
        lines[1:1] = [f"warning: {len(rep.missing_gold)} gold paper ids are not in this index (e.g. "
                      f"{', '.join(rep.missing_gold[:3])}); questions naming them score as misses"]
    kinds = [k for k in ("lookup", "concept", "acronym", "multi", "related", "overall") if k in rep.ranking.get("hybrid", {})]
    lines.append(f"{'mode':<9}{'kind':<9}{'n':>4}" + "".join(f"{m:>9}" for m in METRICS))
    for mode in (*MODES, RERANKED):
        for k in kinds:
            row = rep.ranking[mode][k]
            lines.append(f"{mode:<9}{k:<9}{int(row['n']):>4}" + "".join(f"{row[m]:>9.3f}" for m in METRICS))
        lines.append("")
    lines += honesty_lines(rep) + [""]
    lines += abstention_lines(rep.abstention)
    if rep.lists.get("n"):
        lines.append(f"lists ('multi' questions, {int(rep.lists['n'])}): precision {rep.lists['precision']:.2f}, "
                     f"recall {rep.lists['recall']:.2f}")
    if rep.lists.get("absent"):
        lines.append(f"lists about an absent topic ('none' list questions): {int(rep.lists['absent_empty'])} of "
                     f"{int(rep.lists['absent'])} list zero papers")
    if rep.relevance_cv:
        c = rep.relevance_cv
        lines.append(f"relevance model, {int(c['folds'])}-fold CV of its calibration on these questions: answerable "
                     f"{c['answerable_refused']:.1%} refused, {c['answerable_flagged']:.1%} flagged; 'none' "
                     f"{c['none_refused']:.0%} refused, {c['none_flagged']:.0%} at least flagged")
    if rep.evidence_accuracy is not None:
        lines += ["", f"evidence accuracy (lookup, first citation quotes the gold sentence): "
                      f"{rep.evidence_accuracy:.2f} ({round(rep.evidence_accuracy * rep.evidence_n)}/{rep.evidence_n})"]
    if rep.evidence_importances:
        lines += ["", "feature importances, largest first (ranker: standardized coefficients; judge: share of |coefficient| and split gain)"]
        lines += importance_lines("  evidence ranker", rep.evidence_importances)
        lines += (importance_lines("  relevance judge", rep.judge_importances) if rep.judge_importances else
                  ["  relevance judge: the cross-encoder's calibrated probability (calibration.relevance.model)"]
                  if rep.cross_encoder else
                  ["  relevance judge: the rules decide (AbstentionRule); the learned judge and the cross-encoder are opt-in "
                   "(calibration.abstention.learned, calibration.relevance.model)"])
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
        from vectorstore.encoding import get_encoder, resolve_backend

        e = settings.embedding
        from assistant.evaluation.csfcube import format_csfcube, run_csfcube

        return format_csfcube(run_csfcube(get_encoder(e.model, e.batch_size, resolve_backend(e.model, e.backend)),
                                          csfcube), as_json)
    if not questions:
        raise ValueError("give --questions FILE (or --csfcube DIR)")
    report = run_eval(settings, questions, distractors=distractors, corpus=corpus, ingest_callbacks=ingest_callbacks,
                      cv=cv)
    return report.model_dump_json(indent=2) if as_json else format_report(report)

