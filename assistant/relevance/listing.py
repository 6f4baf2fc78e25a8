"""“All papers that…”: every indexed paper above a per-paper relevance bar, with a count and evidence.

The bar, in plain numbers
-------------------------
1. The question's *topic* (assistant.question.analysis) is the question without its "Which papers …" lead-in
   ("Which papers study personality in LLMs?" → "study personality in LLMs").
2. A candidate pool: the ``pool`` (20) best papers from the hybrid retriever (:meth:`assistant.answer.pipeline.Assistant.prepare`).
3. Two pieces of evidence per candidate, each taken *relative to the best candidate* (so they do not
   depend on how wordy the question is, or on the corpus' absolute score scale):

   - ``lexical`` = the paper's BM25 score / the pool's best BM25 score (names, rare terms);
   - ``semantic`` = the best single-sentence cosine (MiniLM) of the paper to the topic / the pool's best.

   ``score = (lexical + semantic) / 2``; the top paper has a score near 1.
4. A paper is listed when ``score ≥ relative_bar`` (0.70: "its evidence is at least 70 % of the best
   paper's"), and two absolute floors hold: the best listed paper must pass the abstention rule
   (:class:`assistant.relevance.judge.AbstentionRule`: the verdict ``ask`` gives; ``none`` lists nothing, "no
   paper found"), and every listed paper must not be a ``none`` for that rule on its own evidence.
   When more than half of the pool clears the bar the evidence is flat, and the note says the list
   may be loose.

How 0.70 and the equal weights were chosen (the training corpus, eval/train/corpus2k.jsonl; never the dev questions):
40 list questions "Which papers study <phrase>?" for frequent two- and three-word title phrases (those the
relevance model's list calibration holds out, assistant.learning.crossencoder_calibrate.list_rows), each asked
through the answer path (its 20-paper pool). A pooled paper is on the topic when it holds the phrase (its title or
its abstract) and off it when neither does: 0.70 has the best mean F1 (P 0.61, R 0.87; 5-fold CV over the phrases:
the folds choose 0.69–0.75, P 0.63, R 0.82). Counting only a title that holds the phrase as on the topic (the rest
of the phrase-holders left out), the best F1 lies at 0.75–0.78 (P 0.60, R 0.86), but recall falls off past 0.70
(0.95 at 0.70, 0.90 at 0.72, 0.86 at 0.76), and 0.70 has the best F2 there: a missed paper is invisible to the
reader, an extra one is shown with its evidence, so recall weighs more. Equal weights of BM25 and the topic sentence
have the widest range near the best among the weights 0.3–0.7. The labels are weak (a phrase), so the bar is a
compromise between precision and recall, not a target met. The former bar, 0.62, was fitted on the ten 'multi'
dev questions (P 0.91, R 0.87 there); `paper-assistant eval` reports what 0.70 gives on them as a regression
gate. Nothing in the rule names a question or a paper.

What it may miss: a paper that addresses the topic in other words than the question and whose best
sentence is only loosely similar; papers outside the 20-paper pool. What it may add: papers that share
the question's vocabulary but not its intent. :func:`assistant.research.lists.list_papers` reports the near misses.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from assistant.evidence import Sentence, SentenceCache
from assistant.relevance.judge import AbstentionRule, Judge, RelevanceEvidence, Verdict
from assistant.settings import ListCalibration
from assistant.types import CitedAnswer, Source
from vectorstore.papers import Paper

LOOSE_NOTE = ("More than half of the candidates clear the bar, so the evidence is flat and this list may be loose: "
              "a narrower question helps.")


ListBar = ListCalibration
"""The knobs of the per-paper bar (pool, relative_bar, lexical_weight, near_misses; see the module
docstring for how they were set): ``Settings.calibration.listing``."""


@dataclass
class ListedPaper:
    """A candidate paper with the evidence for listing it."""

    paper: Paper
    rank: int
    score: float
    lexical: float
    semantic: float
    sentence: Sentence | None
    sentence_similarity: float
    relevance: RelevanceEvidence
    verdict: Verdict

    @property
    def id(self) -> str:
        return self.paper.id

    def to_dict(self) -> dict:
        s = self.sentence
        return {"rank": self.rank, "paper_id": self.paper.id, "label": self.paper.display(),
                "score": round(self.score, 4), "lexical": round(self.lexical, 4), "semantic": round(self.semantic, 4),
                "sentence": s.text if s else "", "sentence_start": s.start if s else -1,
                "sentence_end": s.end if s else -1, "verdict": self.verdict.value}


@dataclass
class ListResult:
    """Every paper above the bar (best first), the near misses just below it, and how the bar was set."""

    question: str
    topic: str
    papers: list[ListedPaper]
    near_misses: list[ListedPaper] = field(default_factory=list)
    pool_size: int = 0
    indexed: int = 0
    bar: ListBar = field(default_factory=ListBar)
    note: str = ""
    scope: str = ""
    """Where the papers were searched when filters narrowed it ("in 004_….txt"), else ""."""
    weak: bool = False
    """The best match is only a closest match (the abstention rule's ``weak``): the list may not answer."""

    @property
    def count(self) -> int:
        return len(self.papers)

    @property
    def loose(self) -> bool:
        """More than half of the candidates clear the bar: the evidence is flat."""
        return bool(self.pool_size) and self.count > self.pool_size * self.bar.loose_share

    def to_dict(self) -> dict:
        return {"question": self.question, "topic": self.topic, "count": self.count,
                "papers": [p.to_dict() for p in self.papers],
                "near_misses": [p.to_dict() for p in self.near_misses],
                "pool_size": self.pool_size, "indexed": self.indexed,
                "bar": {"relative_bar": self.bar.relative_bar, "pool": self.bar.pool,
                        "lexical_weight": self.bar.lexical_weight},
                "note": self.note, "weak": self.weak}


def as_answer(result: ListResult) -> CitedAnswer:
    """The list as a :class:`assistant.types.CitedAnswer` (sources numbered by rank), so a chat
    follow-up ("tell me more about the second one") can refer to a list shown in list mode."""
    sources = [Source(n=c.rank, paper_id=c.id, label=c.paper.label, title=c.paper.title,
                      sentence=c.sentence.text if c.sentence else "",
                      sentence_start=c.sentence.start if c.sentence else -1,
                      sentence_end=c.sentence.end if c.sentence else -1, score=round(c.score, 6),
                      abstract=c.paper.text) for c in result.papers]
    return CitedAnswer(question=result.question, answer=f"{result.count} papers listed.", sources=sources,
                       verdict=Verdict.answered if sources else Verdict.none, count=result.count)


def relative(values: list[float]) -> np.ndarray:
    """``values / max(values)`` clipped to [0, 1]; all zeros when the best value is not positive."""
    x = np.asarray(values, dtype=np.float32)
    if x.size == 0:
        return x
    top = float(x.max())
    return np.clip(x / top, 0.0, 1.0) if top > 0 else np.zeros_like(x)


def bar_scores(bm25: list[float], semantic: list[float], lexical_weight: float = 0.5) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(score, lexical, semantic)`` arrays, each relative to the pool's best (see module docstring)."""
    lex, sem = relative(bm25), relative(semantic)
    return lexical_weight * lex + (1 - lexical_weight) * sem, lex, sem


def select(candidates: list[ListedPaper], bar: ListBar, top_verdict: Verdict,
           judge: Judge | None = None) -> tuple[list[ListedPaper], list[ListedPaper]]:
    """``(listed, near_misses)`` from scored candidates (any order); both sorted best first.

    ``top_verdict`` is the abstention rule's verdict on the best retrieved paper (the one ``ask`` gives):
    ``none`` lists nothing. A paper is listed when the judge (default :class:`AbstentionRule`), given its
    share of the best paper's evidence and the bar, does not say ``none``.
    """
    judge = judge or AbstentionRule()
    # The relevance model's judge with an absolute list cutoff set: each paper's own probability decides.
    absolute = judge.listed_paper if getattr(judge, "listed", None) is not None else None
    if absolute is not None:
        for c in candidates:
            c.score = float(c.relevance.probability or 0.0)
    ranked = sorted(candidates, key=lambda c: -c.score)
    # With the relevance model, the figure shown beside a paper is its own calibrated P(about the topic), not a
    # share of the best paper's evidence.
    shown = {c.id: float(c.relevance.probability) for c in candidates if c.relevance.probability is not None}
    show = bool(candidates) and len(shown) == len(candidates)
    if not ranked or top_verdict == Verdict.none:
        return [], (_shown(ranked, shown) if show else ranked)[: bar.near_misses]
    if absolute is not None:
        listed = [c for c in ranked if absolute(c.relevance)]
    else:
        listed = [c for c in ranked
                  if judge.decide(dataclasses.replace(c.relevance, list_share=c.score, list_bar=bar.relative_bar))
                  != Verdict.none]
    kept = {c.id for c in listed}
    if show:
        listed, ranked = _shown(listed, shown), _shown(ranked, shown)
    near = [c for c in ranked if c.id not in kept][: bar.near_misses]
    for i, c in enumerate(listed, 1):
        c.rank = i
    return listed, near


def _shown(papers: list[ListedPaper], probability: dict[str, float]) -> list[ListedPaper]:
    """``papers`` with their shown score set to ``probability`` (paper id → P), best first."""
    for c in papers:
        c.score = probability[c.id]
    return sorted(papers, key=lambda c: -c.score)


def bar_note(result: ListResult) -> str:
    """How the bar was set and what it may miss, in one paragraph."""
    b = result.bar
    head = (f"Listed every paper whose evidence reaches {b.relative_bar:.0%} of the best match's "
            f"(equal parts keyword match by BM25 and best-sentence similarity to “{result.topic}”), "
            f"among the {result.pool_size} top-ranked of {result.indexed} indexed papers.")
    if not result.papers:
        head = (f"No indexed paper is about “{result.topic}”: none of the {result.pool_size} top-ranked of "
                f"{result.indexed} indexed papers passes the relevance judge.")
    if result.loose:
        head += " " + LOOSE_NOTE
    miss = ("It may miss papers that describe the topic in other words, and list papers that share the "
            "question's words but not its intent.")
    if result.near_misses:
        miss += " Next best, not listed (below the bar, or too weak on their own evidence): " + "; ".join(
            f"{c.paper.display()} ({c.id}, {c.score:.2f})" for c in result.near_misses) + "."
    return f"{head} {miss}"


CODE_NOTE = ("Listed from the links the abstracts give (code, models or project pages), not by relevance: "
             "a paper that releases code without saying so in its abstract is missing.")


MAX_CODE_LISTED = 100
"""Papers with code listed at most (in file order); the count and the note give the rest."""


def code_list(question: str, papers: list[Paper], sentences: SentenceCache, indexed: int) -> ListResult:
    """Every paper of ``papers`` (those whose abstract links code: ``Paper.links``) listed in file order,
    each with the sentence giving its first link as evidence: "which papers release code?" is
    answered from the metadata, not from retrieval (which found none of them: the link sentence shares
    no word with the question but "code")."""
    def in_file_order(p: Paper):  # "x#2" before "x#11"
        head, _, n = p.id.rpartition("#")
        return (head, int(n), "") if n.isdigit() else (p.id, 0, p.id)

    shown = sorted(papers, key=in_file_order)[:MAX_CODE_LISTED]
    cache = sentences.get(shown)
    listed = []
    for rank, p in enumerate(shown, 1):
        link = p.links[0]
        spans = cache[p.id][0]
        sent = next((x for x in spans if link in x.text), spans[-1] if spans else None)
        ev = RelevanceEvidence(dense=1.0, sentence=1.0, bm25=0.0, named_hit=False)
        listed.append(ListedPaper(p, rank, 1.0, 0.0, 0.0, sent, 1.0, ev, Verdict.answered))
    note = CODE_NOTE if len(papers) == len(shown) else (
        f"{CODE_NOTE} The first {len(shown)} of {len(papers)} in file order: name a topic (\"code for …\") or a filter to narrow.")
    return ListResult(question=question, topic="papers with code", papers=listed, pool_size=len(papers),
                      indexed=indexed, note=note)
