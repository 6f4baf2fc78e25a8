"""Training rows: what each training question shows the two models (:mod:`assistant.learning.train` fits them).

:func:`collect` runs every question of a question file through the answer path's own
retrieval once (:meth:`Assistant.prepare`) and records :class:`QuestionRow`: the relevance judge's
features (assistant.relevance.features.JUDGE_FEATURES) and the sentence features of the top and gold abstracts.
:func:`collect_all` adds synthetic definition questions (for the evidence ranker) and simulated copies
of the questions (for the judge):

The judge must carry across index sizes (the bundled index holds 38 papers, a user's may hold 23,000).
:func:`collect_variants` asks every question again over simulated indexes (:class:`SubsetIndex`: the
stored vectors and chunks, dense search masked to a subset and BM25 rebuilt over it, nothing written)
of ``TrainSettings.small_indexes`` papers, each holding its questions' gold and near papers and random
others (:func:`simulated_indexes`); and, with ``held_out``, every answerable question with its gold
papers hidden (an unanswerable question of the absent-topic kind). A copy shares its question's fold.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from assistant.evidence import SENTENCE_FEATURES, sentence_features
from assistant.evidence import question_cues
from assistant.relevance import JUDGE_FEATURES, judge_features, retrieved_signals
from assistant.evidence import LinearModel

from assistant.learning.types import TrainSettings


@dataclass
class QuestionRow:
    """What one training question contributes: judge features, and sentence features of the top and gold abstracts."""

    qid: str
    kind: str
    answerable: bool
    judge_x: np.ndarray
    gold: list[str]
    evidence: str = ""
    top_id: str = ""
    top_texts: list[str] = field(default_factory=list)
    top_x: np.ndarray | None = None
    gold_x: np.ndarray | None = None
    gold_label: int = -1
    """Index of the evidence sentence in the gold abstract's sentences (most characters in common), -1 if none."""
    weight: float = 1.0  # in the evidence ranker's fit (a synthetic question weighs less)
    origin: str = ""
    """For a simulated copy (:func:`collect_variants`): the qid of the question it copies, whose fold it shares."""
    variant: str = ""
    """"" for the question over the whole index; "held-out" (its gold papers hidden), "small-N" (an index of N papers)."""
    source: str = ""
    """The question file the question came from (``load_question_files``' tag), for figures per file."""


def _norm(s: str) -> str:
    return " ".join(s.split())

def _evidence_index(sentences, evidence: str, text: str) -> int:
    """The sentence of ``sentences`` (with .start/.end into ``text``) that overlaps ``evidence`` most."""
    at = text.find(evidence)
    if at < 0:
        at = _norm(text).find(_norm(evidence))
        if at < 0:
            return -1
    end = at + len(evidence)
    overlaps = [max(0, min(end, s.end) - max(at, s.start)) for s in sentences]
    best = int(np.argmax(overlaps)) if overlaps else -1
    return best if best >= 0 and overlaps[best] > 0 else -1


class _SubsetStore:
    """``store`` whose dense search sees only the ``allowed`` papers; everything else is the store's."""

    def __init__(self, store, allowed: set[str]):
        self._store, self._where = store, {"paper_id": {"$in": sorted(allowed)}}

    def query(self, embedding, n: int, where: dict | None = None):
        return self._store.query(embedding, n, {"$and": [where, self._where]} if where else self._where)

    def __getattr__(self, name):
        return getattr(self._store, name)


class _SubsetLexical:
    """The whole index's BM25 (its idf) searching only the ``allowed`` papers."""

    def __init__(self, lexical, allowed: set[str]):
        self._lexical, self._allowed = lexical, allowed

    def search(self, query: str, n: int, allowed: set[str] | None = None):
        return self._lexical.search(query, n, self._allowed if allowed is None else allowed & self._allowed)

    def __getattr__(self, name):
        return getattr(self._lexical, name)


class SubsetIndex:
    """``index`` as retrieval would see it holding only the ``allowed`` paper ids: dense search masked to
    them, and BM25 either rebuilt over their ``chunks`` (``(chunk id, paper id, title + text)`` of the
    whole index, :func:`lexical_chunks`: idf and max idf as a small index's) or, without ``chunks``, the
    whole index's restricted to them (hiding a question's gold papers from 2,000 changes no idf).
    Training's simulated indexes (:func:`collect_variants`); nothing is written."""

    def __init__(self, index, allowed: set[str], chunks: list[tuple[str, str, str]] | None = None):
        from vectorstore.store import LexicalIndex

        self._index, self.store = index, _SubsetStore(index.store, allowed)
        self._lexical = (_SubsetLexical(index.lexical(), allowed) if chunks is None
                         else LexicalIndex.build([c for c in chunks if c[1] in allowed], "subset"))

    def lexical(self):
        return self._lexical

    def __getattr__(self, name):
        return getattr(self._index, name)


def lexical_chunks(store) -> list[tuple[str, str, str]]:
    """Every chunk of ``store`` as BM25 reads it: ``(chunk id, paper id, title + newline + text)``
    (as vectorstore.index.Index.lexical builds it)."""
    titles = store.titles()
    return [(cid, pid, f"{titles[pid]}\n{text}" if pid in titles else text) for cid, pid, text in store.iter_chunks()]


def simulated_indexes(questions: list[dict], paper_ids: list[str], size: int, group: int,
                      seed: int = 0) -> list[tuple[set[str], list[int]]]:
    """Small indexes like the bundled one: ``[(paper ids, indices of the questions asked over them)]``.
    The questions, shuffled with ``seed``, go ``group`` at a time; each group's index holds its
    questions' gold and ``near`` papers, filled with random others up to ``size`` papers."""
    rng = np.random.RandomState(seed)
    order = rng.permutation(len(questions))
    ids = sorted(paper_ids)
    out = []
    for start in range(0, len(order), group):
        members = sorted(int(i) for i in order[start:start + group])
        allowed = {p for i in members for p in list(questions[i].get("gold") or []) + list(questions[i].get("near") or [])}
        allowed &= set(ids)
        rest = [p for p in ids if p not in allowed]
        fill = max(0, size - len(allowed))
        allowed |= {rest[j] for j in rng.permutation(len(rest))[:fill]}
        out.append((allowed, members))
    return out


def collect_variants(assistant_for, index, questions: list[dict], cfg: TrainSettings,
                     progress=None) -> list[QuestionRow]:
    """Simulated copies of ``questions`` (each row's ``origin`` its question's qid, so it shares its fold):

    - ``held-out``: every answerable question with its gold papers hidden from retrieval, labelled
      unanswerable: from the index's point of view an absent topic or a near miss;
    - ``small-N`` for each N of ``cfg.small_indexes``: every question over an index of N papers
      (:func:`simulated_indexes`: its gold and near papers plus random others; BM25 rebuilt over them),
      and the answerable ones again with their gold hidden. The bundled index holds 38 papers.

    ``assistant_for(index)`` gives the Assistant (neutral models) over a (subset) index."""
    all_ids = sorted(set(index.lexical().paper_ids))
    out: list[QuestionRow] = []

    def run(sub, qs, variant, hide):
        shared = None if callable(sub) else assistant_for(sub)
        for q in qs:
            q2 = dict(q, gold=[], evidence="") if hide else q
            rows = collect(shared or assistant_for(sub(q)), [q2], judge_only=True)
            for r in rows:
                r.origin, r.variant, r.kind, r.source = q.get("qid", ""), variant, q.get("kind", ""), q.get("source", "")
            out.extend(rows)
            if progress:
                progress()

    answerable = [q for q in questions if q.get("gold")]
    if cfg.held_out:
        run(lambda q: SubsetIndex(index, set(all_ids) - set(q["gold"])), answerable, "held-out", True)
    chunks = lexical_chunks(index.store) if cfg.small_indexes else []
    for size in cfg.small_indexes:
        for allowed, members in simulated_indexes(questions, all_ids, size, cfg.small_group, cfg.seed):
            sub = SubsetIndex(index, allowed, chunks)
            qs = [questions[i] for i in members]
            run(sub, qs, f"small-{size}", False)
            if cfg.held_out:
                run(lambda q, allowed=allowed: SubsetIndex(index, allowed - set(q["gold"]), chunks),
                    [q for q in qs if q.get("gold")], f"small-{size} held-out", True)
    return out


def collect(assistant, questions: list[dict], progress=None, judge_only: bool = False) -> list[QuestionRow]:
    """Features of every question in ``questions`` (a question file's) on ``assistant``'s index, through
    the answer path's own retrieval (:meth:`Assistant.prepare`); ``judge_only``: the judge's features
    alone (no sentence features of the top and gold abstracts)."""
    rows = []
    for q in questions:
        prep = assistant.prepare(q["question"])
        cues = prep.cues if prep.cues is not None else question_cues(  # none made: no papers, or a metadata list
            prep.analysis, assistant.index.lexical(), encoder=assistant.index.encoder, qvec=prep.qvec)
        rvec = prep.topic_vec if prep.topic_vec is not None else prep.qvec
        gold = list(q.get("gold") or [])
        gold_papers = assistant.index.store.get_papers(gold[:1]) if q.get("evidence") and not judge_only else {}
        cache = assistant.sentences.get([p.paper for p in prep.papers] + list(gold_papers.values()))
        row = QuestionRow(q.get("qid", ""), q.get("kind", ""), bool(gold),
                          np.zeros(len(JUDGE_FEATURES), np.float32), gold, q.get("evidence") or "",
                          source=q.get("source", ""))
        if prep.papers:
            signals = retrieved_signals(cues, prep.papers, cache, prep.qvec, rvec)
            row.judge_x = judge_features(cues, [signals[p.id] for p in prep.papers])
            top = prep.papers[0]
            sents, vecs = cache[top.id]
            row.top_id, row.top_texts = top.id, [s.text for s in sents]
            row.top_x = None if judge_only else sentence_features(cues, prep.qvec, sents, vecs)
        for pid, paper in gold_papers.items():
            sents, vecs = cache[pid]
            row.gold_x = sentence_features(cues, prep.qvec, sents, vecs)
            row.gold_label = _evidence_index(sents, row.evidence, paper.text)
        # Rounded to 1e-4: the encoder's float sums vary in the last bits, and a refit must write the same bytes.
        for name in ("judge_x", "top_x", "gold_x"):
            setattr(row, name, None if getattr(row, name) is None else np.round(getattr(row, name), 4))
        rows.append(row)
        if progress:
            progress()
    return rows


def collect_all(assistant, questions: list[dict], cfg: TrainSettings, progress=None) -> tuple[list, list, list]:
    """``(rows, synthetic rows, simulated rows)``: :func:`collect` of ``questions``; of ``cfg.synthetic``
    definition and ``cfg.quantity`` quantity questions made from the index's papers
    (assistant.learning.synthetic.synthetic_questions), weighing ``cfg.synthetic_share`` × the lookups in all; and
    :func:`collect_variants` of ``questions`` (the judge's held-out and small-index copies)."""
    from assistant.answer import Assistant
    from assistant.learning.synthetic import synthetic_questions

    rows = collect(assistant, questions, progress)
    papers = assistant.index.store.get_papers(sorted(set(assistant.index.lexical().paper_ids)))
    made = synthetic_questions(list(papers.values()), questions, cfg.synthetic, getattr(cfg, "quantity", 0))
    extra = collect(assistant, made) if made else []
    for r in extra:
        r.weight = cfg.synthetic_share * sum(x.gold_x is not None for x in rows) / len(extra)
    variants = collect_variants(lambda idx: Assistant(assistant.settings, idx, models=neutral_models()),
                                assistant.index, questions, cfg)
    return rows, extra, variants


def _xy(rows: list[QuestionRow]) -> tuple[np.ndarray, np.ndarray]:
    return (np.vstack([r.judge_x for r in rows]).astype(np.float64) if rows else np.zeros((0, len(JUDGE_FEATURES))),
            np.array([r.answerable for r in rows], dtype=int))


def _index_of(row: QuestionRow) -> str:
    """The (simulated) index a row was collected over: "" for the whole one, else "small-N"."""
    return row.variant.replace(" held-out", "") if row.variant.startswith("small-") else ""


def trains_on(row: QuestionRow, cfg: TrainSettings) -> bool:
    """Whether the judge is fitted on a simulated copy (held-out copies: ``cfg.held_out``; small-index
    ones: ``cfg.train_on_small``); the others only set the cutoffs and are cross-validated."""
    if row.variant == "held-out":
        return cfg.held_out
    return cfg.train_on_small and (cfg.held_out or not row.variant.endswith("held-out"))


def neutral_models() -> tuple[LinearModel, LinearModel]:
    """Models that prefer nothing, for an Assistant that only collects features."""
    return LinearModel.neutral("evidence", SENTENCE_FEATURES), LinearModel.neutral("judge", JUDGE_FEATURES)
