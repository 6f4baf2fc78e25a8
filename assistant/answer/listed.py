"""The list step of the answer path: a prepared question's candidates held against list mode's bar
(:mod:`assistant.relevance.listing`), so the chat answers a list question with the same papers as list mode."""

from __future__ import annotations

import dataclasses

import numpy as np

from assistant.answer.prepared import Prepared
from assistant.evidence import Sentence, SentenceCache
from assistant.question import Question
from assistant.relevance import Judge, ListBar, ListResult, ListedPaper, bar_note, bar_scores, code_list, select
from assistant.retrieval import Filters, ScoredPaper, filters_scope
from assistant.types import Verdict
from vectorstore.encoding import Encoder


def listed_from(prep: Prepared, sentences: SentenceCache, encoder: Encoder, indexed: int, judge: Judge,
                bar: ListBar) -> ListResult:
    """The list for an already prepared question (:meth:`assistant.answer.pipeline.Assistant.prepare`, ``k`` = ``bar.pool``):
    the chat answers a list question with the same papers as list mode. ``indexed``: papers in the
    index (for the note)."""
    topic = prep.analysis.topic if prep.analysis is not None else prep.query
    result = ListResult(question=prep.question, topic=topic, papers=[], pool_size=len(prep.papers),
                        indexed=indexed, bar=bar, scope=prep.scope)
    if not prep.papers:
        result.note = bar_note(result)
        return result
    # prepare() embedded this very topic for a list question; any other question is embedded here.
    tvec = prep.topic_vec if prep.multi and prep.topic_vec is not None else encoder.encode_one(topic)
    cache = sentences.get([p.paper for p in prep.papers])
    best_sents: list[tuple[Sentence | None, float]] = []
    for p in prep.papers:
        sents, vecs = cache[p.id]
        if not sents:
            best_sents.append((None, 0.0))
            continue
        sims = vecs @ tvec
        i = int(np.argmax(sims))
        best_sents.append((sents[i], float(sims[i])))
    score, lex, sem = bar_scores([p.bm25 for p in prep.papers], [s for _, s in best_sents], bar.lexical_weight)

    def quote(pid: str) -> Sentence | None:
        # The sentence shown is the answer's quote (on the topic, no stock claims or bare links), so
        # `ask` and `list` quote alike; the bar itself reads the best cosine above.
        return prep.evidence.get(pid, (None, 0.0))[0] if prep.multi else None

    candidates = []
    for i, p in enumerate(prep.papers):
        ev = prep.relevance[p.id]
        candidates.append(ListedPaper(p.paper, 0, float(score[i]), float(lex[i]), float(sem[i]),
                                      quote(p.id) or best_sents[i][0], best_sents[i][1], ev, judge.decide(ev)))
    result.papers, result.near_misses = select(candidates, bar, prep.verdict, judge)
    result.note = bar_note(result)
    result.weak = prep.verdict == Verdict.weak and bool(result.papers)  # as the chat says for the same question
    return result


def code_prepared(asked: Question, filters: Filters, index, sentences: SentenceCache) -> Prepared:
    """ "Which papers release code?" prepared: every paper (within ``filters``) whose abstract links code or a
    project page, from the metadata (assistant.relevance.listing.code_list), none left to retrieval's chance."""
    store = index.store
    ids = store.paper_ids_where(filters.where()) or set()
    papers = [p for p in store.get_papers(sorted(ids)).values() if p.links and filters.admits(p)]
    listing = code_list(asked.text, papers, sentences, store.counts()[0])
    listing.scope = filters_scope(dataclasses.replace(filters, has_code=None))  # "with code" is the topic
    scored = [ScoredPaper(lp.paper, 1.0) for lp in listing.papers]
    prep = Prepared(asked.text, asked.text, index.encoder.encode_one(asked.text), scored,
                    {lp.id: (lp.sentence, 1.0) for lp in listing.papers},
                    {lp.id: lp.relevance for lp in listing.papers}, Verdict.answered if scored else Verdict.none,
                    multi=True, note=listing.note, analysis=asked, scope=listing.scope)
    prep.listing = listing
    return prep
