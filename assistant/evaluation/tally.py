"""One pass of `paper-assistant eval` over its questions: what each question adds (``Tally``), the rules counted
(``RULES``, ``rules_fired``) and the number the abstention trade-off cuts at (``judge_score``). The report
itself and its text are :mod:`assistant.evaluation.harness`."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

from assistant.evaluation.metrics import ranking_metrics
from assistant.question import validate_question
from assistant.relevance import JUDGE_RULES
from assistant.types import Verdict

MODES = ("bm25", "dense", "hybrid")
RERANKED = "reranked"
"""The answer path's own order: the hybrid retriever's candidates reordered by the relevance cross-encoder."""

RULES = (
    "question: list", "question: list by its lead-in only", "question: definition frame", "question: quantity cue",
    "question: a count", "question: names", "question: several-word name", "question: name spelled as the corpus",
    "question: reference (ordinal)", "question: reference (bare)", "question: reference (pronoun)",
    *(f"judge: {r}" for r in JUDGE_RULES),
    "list: a named paper below the bar", "cite: each named paper", "cite: a runner-up",
)
"""Every rule ``paper-assistant eval`` counts; one that never fires on a question file shows 0."""


def _norm(s: str) -> str:
    return " ".join(s.split())


@dataclass
class Tally:
    """What the questions scored so far add up to: ranking metrics per mode and kind (``per_mode``), the rules
    that decided something, list precision and recall (``multi`` questions), absent-topic lists, each
    question's ``(verdict, judge score)`` by class, and the gold evidence sentences quoted first."""

    per_mode: dict[str, dict[str, list]] = field(
        default_factory=lambda: {m: defaultdict(list) for m in (*MODES, RERANKED)})
    rules: dict[str, int] = field(default_factory=lambda: dict.fromkeys(RULES, 0))
    precision: list[float] = field(default_factory=list)
    recall: list[float] = field(default_factory=list)
    absent: int = 0
    absent_empty: int = 0
    answerable: list[tuple[Verdict, float]] = field(default_factory=list)
    nones: list[tuple[Verdict, float]] = field(default_factory=list)
    evidence_hits: int = 0
    evidence_n: int = 0

    def add(self, assistant, idx, q: dict) -> None:
        """Score one question ``{kind, question, gold, evidence?}`` with ``assistant`` over the index ``idx``."""
        qvec = idx.encoder.encode_one(q["question"])
        if q["gold"]:
            for mode in MODES:
                ranked = [p.id for p in assistant.retriever.search(q["question"], k=10, mode=mode, query_vec=qvec)]
                self._rank(mode, ranked, q)
        prep = assistant.prepare(q["question"], k=10)
        if q["gold"]:
            self._rank(RERANKED, [p.id for p in prep.papers], q)
        self._lists(prep, q)
        for rule in rules_fired(assistant, prep, q["question"]):
            self.rules[rule] += 1
        top = prep.relevance.get(prep.papers[0].id) if prep.papers else None
        if top is not None and assistant.relevance_model is not None:  # the paper the verdict was read on
            top = max(prep.relevance.values(), key=lambda ev: ev.probability or 0.0)
        (self.answerable if q["gold"] else self.nones).append((prep.verdict, judge_score(assistant.judge, top)))
        if q["kind"] == "lookup" and q.get("evidence"):
            ans = assistant.answer_prepared(prep)
            self.evidence_n += 1
            if ans.sources and ans.sources[0].paper_id in q["gold"] and _norm(ans.sources[0].sentence) == _norm(q["evidence"]):
                self.evidence_hits += 1

    def _rank(self, mode: str, ranked: list[str], q: dict) -> None:
        m = ranking_metrics(ranked, q["gold"], q["kind"])
        self.per_mode[mode][q["kind"]].append(m)
        self.per_mode[mode]["overall"].append(m)

    def _lists(self, prep, q: dict) -> None:
        """A list question's precision and recall, or whether an absent topic's list stayed empty."""
        if q["gold"] and q["kind"] == "multi":  # a refused list recalls nothing; precision is of lists listing any
            listed = {c.id for c in prep.listing.papers} if prep.multi and prep.listing is not None else set()
            self.precision += [len(listed & set(q["gold"])) / len(listed)] if listed else []
            self.recall.append(len(listed & set(q["gold"])) / len(q["gold"]))
        if not q["gold"] and prep.analysis is not None and prep.analysis.is_list:
            self.absent += 1
            self.absent_empty += prep.verdict == Verdict.none or (prep.listing is not None and not prep.listing.papers)


def judge_score(judge, top) -> float:
    """The number the trade-off table cuts at: the learned judge's P(answers), or for the rules the
    best paper's dense + sentence cosine (what their 'closest match' threshold reads); 0 when nothing."""
    if top is None:
        return 0.0
    return judge.probability(top) if hasattr(judge, "probability") else top.dense + top.sentence


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
    if (prep.listing is not None and not hasattr(assistant.judge, "listed_paper")
            and any(c.score < prep.listing.bar.relative_bar for c in prep.listing.papers)):
        out.append("list: a named paper below the bar")
    cited = assistant.cited_candidates(prep)
    if len(cited) > 1 and not prep.multi and not prep.pinned:
        out.append("cite: each named paper" if assistant.judge.named(top) else "cite: a runner-up")
    return out
