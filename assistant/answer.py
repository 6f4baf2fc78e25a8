"""Answering: retrieve → numbered context → answer (LLM or extractive) → checked, cited answer.

The LCEL chain has three steps (``prepare | generate | finalize``), shared by ``invoke`` and the
streaming path: streaming only changes how ``generate``'s text arrives, and the citation check runs
on the final text without generating again. With history, the question is condensed by the LLM
(as in chat-langchain's ``backend/chain.py``), or, without an LLM, retrieval is conditioned on the
previous turn's papers.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from langchain_core.output_parsers import StrOutputParser
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, Field

from assistant.citations import claims_with_citations, cited_numbers, strip_invalid
from assistant.evidence import Sentence, SentenceCache, score_sentences, term_weights
from assistant.llm import explain_llm_error, make_chat_model
from assistant.prompts import answer_prompt, condense_prompt
from assistant.relevance import (VERDICT_TEXT, AbstentionRule, RelevanceEvidence, Verdict, names_in,
                                 question_names)
from assistant.retrieval import Filters, HybridRetriever, ScoredPaper, reciprocal_rank_fusion
from assistant.settings import Settings
from vectorstore.index import Index

MAX_QUESTION_CHARS = 4000
SUPPORT_THRESHOLD = 0.45
"""Cosine similarity (MiniLM) above which a cited answer sentence counts as supported by its best
sentence in the cited abstract (the dev.jsonl lookup answers vs. their gold evidence sentences)."""

_MULTI = re.compile(r"\b(which|what|list|all|any|find)\b[^?]*\b(papers|works|studies|approaches|methods)\b|"
                    r"\bpapers\b[^?]*\b(that|which|on|about)\b", re.I)
_FOLLOW_UP = re.compile(r"\b(it|its|they|their|them|this|that|these|those|the paper|the method|the same|he|she)\b", re.I)


class QuestionError(ValueError):
    """The question cannot be asked (empty, or too long)."""


class Source(BaseModel):
    """A numbered source of an answer: the paper and the sentence that supports the citation."""

    n: int
    paper_id: str
    label: str
    title: str = ""
    sentence: str = ""
    sentence_start: int = -1
    sentence_end: int = -1
    score: float = 0.0
    abstract: str = ""
    support: str | None = Field(None, description="'supported' | 'weak' for cited LLM claims; None if unchecked")


class CitedAnswer(BaseModel):
    """What every face shows: the answer with [n] markers, the cited sources, and what else was retrieved."""

    question: str
    standalone_question: str = ""
    answer: str
    sources: list[Source] = Field(default_factory=list)
    also_retrieved: list[Source] = Field(default_factory=list)
    verdict: Verdict = Verdict.answered
    mode: str = "extractive"
    note: str = ""
    incomplete: bool = False
    removed_citations: list[int] = Field(default_factory=list)
    count: int | None = Field(None, description="papers found, for 'which papers…' questions")


@dataclass
class Prepared:
    """The output of the retrieval step: everything generation and the citation check need."""

    question: str
    query: str
    qvec: np.ndarray
    papers: list[ScoredPaper]
    evidence: dict[str, tuple[Sentence | None, float]]
    relevance: dict[str, RelevanceEvidence]
    verdict: Verdict
    context_ids: list[str] = field(default_factory=list)
    multi: bool = False


def validate_question(question: str) -> str:
    """The question, whitespace-normalised. Raises QuestionError if empty or over the length limit."""
    if question is None or not str(question).strip():
        raise QuestionError("the question is empty: type a question about the papers")
    q = " ".join(str(question).split())
    if len(q) > MAX_QUESTION_CHARS:
        raise QuestionError(f"the question is {len(q):,} characters long; the limit is {MAX_QUESTION_CHARS:,}. "
                            "To find papers related to a long text, use `related` instead")
    return q


def is_multi_question(question: str) -> bool:
    """True for questions that ask for every paper with a property ("Which papers study X?")."""
    return bool(_MULTI.search(question))


class Assistant:
    """Retrieval + answering over one index; one per process, shared by CLI, UI and tests."""

    def __init__(self, settings: Settings, index: Index, rule: AbstentionRule | None = None):
        self.settings = settings
        self.index = index
        self.retriever = HybridRetriever(index, settings.retrieval.candidates, settings.retrieval.rrf_k)
        self.sentences = SentenceCache(index.encoder)
        self.rule = rule or AbstentionRule()
        self.llm = make_chat_model(settings.llm) if settings.llm.configured else None
        self.chain: Runnable = (
            RunnableLambda(self._prepare_input) | RunnableLambda(self._generate_and_finalize)
        ).with_config(run_name="paper_assistant_answer")

    # --- step 1: retrieval --------------------------------------------------------------------
    def condense(self, question: str, history: list[tuple[str, CitedAnswer]]) -> str:
        """A standalone question: the LLM rewrites it when there is history; otherwise unchanged."""
        if not history or self.llm is None:
            return question
        turns = "\n".join(f"User: {q}\nAssistant: {a.answer}" for q, a in history[-3:])
        try:
            chain = condense_prompt(self.settings.prompts_dir) | self.llm | StrOutputParser()
            out = chain.invoke({"history": turns, "question": question}).strip()
            return out or question
        except Exception:
            return question  # the extractive conditioning below still applies

    def prepare(self, question: str, history: list[tuple[str, CitedAnswer]] | None = None,
                filters: Filters | None = None, k: int | None = None) -> Prepared:
        """Retrieve and score papers for ``question``; raises QuestionError for empty/huge questions."""
        question = validate_question(question)
        history = history or []
        query = self.condense(question, history)
        follow_up = bool(history) and self.llm is None and bool(_FOLLOW_UP.search(question))
        if follow_up:
            # Without an LLM to rewrite it, a follow-up borrows the previous turn's question as context.
            query = f"{history[-1][0]} {question}"
        qvec = self.index.encoder.encode_one(query)
        multi = is_multi_question(query)
        k = k or self.settings.retrieval.k
        pool = max(k, 10) if multi else k
        papers = self.retriever.search(query, k=pool, mode=self.settings.retrieval.mode, filters=filters,
                                       use_mmr=self.settings.retrieval.mmr,
                                       mmr_lambda=self.settings.retrieval.mmr_lambda, query_vec=qvec)
        if follow_up:
            papers = self._condition_on_history(papers, history, k)
        evidence, relevance = self.score_evidence(query, qvec, papers)
        verdict = self.rule.decide(relevance[papers[0].id]) if papers else Verdict.none
        return Prepared(question, query, qvec, papers, evidence, relevance, verdict, multi=multi)

    def _condition_on_history(self, papers: list[ScoredPaper], history, k: int) -> list[ScoredPaper]:
        """Fuse the previous turn's cited papers into the ranking (first-cited first)."""
        prev = [s.paper_id for s in history[-1][1].sources]
        if not prev:
            return papers
        ids, scores = reciprocal_rank_fusion([[p.id for p in papers], prev], k=self.settings.retrieval.rrf_k,
                                             weights=[1.0, 2.0])
        have = {p.id: p for p in papers}
        missing = [i for i in ids if i not in have]
        for pid, paper in self.index.store.get_papers(missing).items():
            have[pid] = ScoredPaper(paper, 0.0)
        out = []
        for pid, s in zip(ids, scores):
            if pid in have:
                sp = have[pid]
                sp.score = s
                out.append(sp)
        return out[: max(k, len(prev))]

    def score_evidence(self, question: str, qvec: np.ndarray, papers: list[ScoredPaper]):
        """Best supporting sentence and relevance evidence for each paper."""
        if not papers:
            return {}, {}
        cache = self.sentences.get([p.paper for p in papers])
        weights = term_weights(question, self.index.lexical())
        names = question_names(question)
        evidence, relevance = {}, {}
        for p in papers:
            sents, vecs = cache[p.id]
            if not sents:
                evidence[p.id] = (None, 0.0)
                relevance[p.id] = RelevanceEvidence(p.dense, 0.0, p.bm25, False)
                continue
            scores = score_sentences(question, qvec, sents, vecs, weights)
            i = int(np.argmax(scores))
            evidence[p.id] = (sents[i], float(scores[i]))
            dense = p.dense if p.dense else float(np.max(vecs @ qvec))
            relevance[p.id] = RelevanceEvidence(dense, float(np.max(vecs @ qvec)), p.bm25,
                                                bool(names) and names_in(names, p.paper.text))
        return evidence, relevance

    # --- step 2: context ------------------------------------------------------------------------
    def cited_candidates(self, prep: Prepared) -> list[ScoredPaper]:
        """Papers worth citing: for a multi-paper question every paper that clears the relevance bar;
        otherwise the top paper plus close runners-up (at most ``retrieval.k``)."""
        if prep.verdict == Verdict.none or not prep.papers:
            return []
        if prep.multi:
            ok = [p for p in prep.papers if self.rule.decide(prep.relevance[p.id]) == Verdict.answered]
            return ok or prep.papers[:1]
        top = prep.relevance[prep.papers[0].id]
        out = [prep.papers[0]]
        for p in prep.papers[1:3]:
            ev = prep.relevance[p.id]
            if self.rule.decide(ev) == Verdict.answered and ev.sentence >= top.sentence - 0.05 and not top.named_hit:
                out.append(p)
        return out

    def context_blocks(self, prep: Prepared, papers: list[ScoredPaper]) -> tuple[str, list[ScoredPaper]]:
        """Numbered, delimited context blocks packed into the LLM's token budget (whole blocks only)."""
        cfg = self.settings.llm
        budget = cfg.context_window - cfg.max_tokens - 600  # system prompt, question, reply
        count = self.index.encoder.count_tokens
        blocks, used, total = [], [], 0
        for p in papers:
            block = (f"[{len(used) + 1}] {p.paper.display()} (id: {p.id})\n"
                     f"<<<\n{p.paper.text}\n>>>")
            # MiniLM's word pieces undercount most chat tokenizers a little; keep a margin.
            cost = int(count(block) * 1.2) + 8
            if total + cost > budget:
                continue
            blocks.append(block)
            used.append(p)
            total += cost
        return "\n\n".join(blocks), used

    # --- step 3: generation ---------------------------------------------------------------------
    def extractive_text(self, prep: Prepared, cited: list[ScoredPaper]) -> str:
        """Answer composed from each cited paper's best sentence, marked [n]."""
        if not cited:
            return VERDICT_TEXT[Verdict.none]
        lines = []
        if prep.multi:
            lines.append(f"{len(cited)} paper{'s' if len(cited) != 1 else ''} in the index match:")
        elif prep.verdict == Verdict.weak:
            lines.append(VERDICT_TEXT[Verdict.weak])
        for n, p in enumerate(cited, 1):
            sent = prep.evidence.get(p.id, (None, 0))[0]
            text = sent.text if sent else p.paper.text[:300]
            lines.append(f"- {p.paper.display()}: {text} [{n}]")
        return "\n".join(lines)

    def stream_text(self, prep: Prepared, cited: list[ScoredPaper], state: dict) -> Iterator[str]:
        """Yield answer text pieces. Sets ``state['mode'|'note'|'incomplete'|'cited']`` on the way.

        The LLM path falls back to the extractive answer on any endpoint failure, keeping text that
        already streamed (marked incomplete); it never raises for endpoint errors.
        """
        state.update(mode="extractive", note="", incomplete=False, cited=cited)
        if self.llm is None or not cited:
            yield self.extractive_text(prep, cited)
            return
        pool = prep.papers[: max(len(cited), self.settings.retrieval.k)]
        context, used = self.context_blocks(prep, pool)
        state["cited"] = used
        state["mode"] = "llm"
        chain = answer_prompt(self.settings.prompts_dir) | self.llm | StrOutputParser()
        received = []
        try:
            for piece in chain.stream({"context": context, "question": prep.query}):
                received.append(piece)
                yield piece
        except Exception as exc:  # every endpoint failure degrades to the extractive answer
            note = explain_llm_error(exc, self.settings.llm)
            state["cited"] = cited
            state["note"] = note
            if received:
                state["incomplete"] = True
                state["partial"] = "".join(received)
            state["mode"] = "extractive"
            yield "\x00FALLBACK"

    def finalize(self, prep: Prepared, text: str, state: dict) -> CitedAnswer:
        """Check citations and build the CitedAnswer (no generation here)."""
        cited_papers: list[ScoredPaper] = state.get("cited", [])
        if "\x00FALLBACK" in text:
            text = self.extractive_text(prep, self.cited_candidates(prep))
            cited_papers = self.cited_candidates(prep)
            if state.get("incomplete"):
                state["note"] += " The streamed answer was cut off; shown below it is the extractive answer."
        numbered = {n: p for n, p in enumerate(cited_papers, 1)}
        clean, removed = strip_invalid(text, set(numbered))
        used_numbers = cited_numbers(clean)
        support: dict[int, tuple[str, Sentence | None]] = {}
        if state.get("mode") == "llm":
            support = self.check_support(clean, numbered)
        # Renumber so that sources read 1, 2, 3 in order of first citation.
        order = {old: new for new, old in enumerate(used_numbers, 1)}
        clean = re.sub(r"\[(\d+(?:\s*,\s*\d+)*)\]",
                       lambda m: "[" + ", ".join(str(order[int(x)]) for x in re.split(r"\s*,\s*", m.group(1))) + "]",
                       clean)
        sources = [self._source(order[old], numbered[old], prep, support.get(old)) for old in used_numbers]
        cited_ids = {s.paper_id for s in sources}
        also = [self._source(0, p, prep, None) for p in prep.papers if p.id not in cited_ids][:5]
        note = state.get("note", "")
        if state.get("incomplete"):
            clean = state.get("partial", "").rstrip() + " …[incomplete]\n\n" + clean
        verdict = prep.verdict
        return CitedAnswer(
            question=prep.question, standalone_question=prep.query if prep.query != prep.question else "",
            answer=clean, sources=sources, also_retrieved=also, verdict=verdict, mode=state.get("mode", "extractive"),
            note=note, incomplete=state.get("incomplete", False), removed_citations=removed,
            count=len(sources) if prep.multi and verdict != Verdict.none else None,
        )

    def check_support(self, text: str, numbered: dict[int, ScoredPaper]) -> dict[int, tuple[str, Sentence | None]]:
        """For each cited number: ('supported' | 'weak', best-matching sentence of the cited abstract)."""
        claims = claims_with_citations(text)
        if not claims:
            return {}
        cache = self.sentences.get([p.paper for p in numbered.values()])
        claim_vecs = self.index.encoder.encode([c for c, _ in claims])
        best: dict[int, tuple[float, Sentence | None]] = {}
        for vec, (_, nums) in zip(claim_vecs, claims):
            for n in nums:
                if n not in numbered:
                    continue
                sents, svecs = cache[numbered[n].id]
                if not sents:
                    continue
                sims = svecs @ vec
                i = int(np.argmax(sims))
                if n not in best or sims[i] > best[n][0]:
                    best[n] = (float(sims[i]), sents[i])
        return {n: ("supported" if s >= SUPPORT_THRESHOLD else "weak", sent) for n, (s, sent) in best.items()}

    def _source(self, n: int, p: ScoredPaper, prep: Prepared, support: tuple[str, Sentence | None] | None) -> Source:
        sent = support[1] if support and support[1] else prep.evidence.get(p.id, (None, 0))[0]
        return Source(
            n=n, paper_id=p.id, label=p.paper.label, title=p.paper.title,
            sentence=sent.text if sent else "", sentence_start=sent.start if sent else -1,
            sentence_end=sent.end if sent else -1, score=round(p.score, 6), abstract=p.paper.text,
            support=support[0] if support else None,
        )

    # --- public API -----------------------------------------------------------------------------
    def _prepare_input(self, inp: dict) -> Prepared:
        return self.prepare(inp["question"], inp.get("history"), inp.get("filters"), inp.get("k"))

    def _generate_and_finalize(self, prep: Prepared) -> CitedAnswer:
        state: dict = {}
        cited = self.cited_candidates(prep)
        text = "".join(self.stream_text(prep, cited, state))
        return self.finalize(prep, text, state)

    def ask(self, question: str, history: list[tuple[str, CitedAnswer]] | None = None,
            filters: Filters | None = None, k: int | None = None) -> CitedAnswer:
        """Answer ``question`` through the LCEL chain. Raises QuestionError for empty/huge questions."""
        return self.chain.invoke({"question": question, "history": history, "filters": filters, "k": k})

    def ask_stream(self, question: str, history: list[tuple[str, CitedAnswer]] | None = None,
                   filters: Filters | None = None) -> Iterator[str | CitedAnswer]:
        """Yield text pieces as they arrive, then the final CitedAnswer (always last)."""
        prep = self.prepare(question, history, filters)
        state: dict = {}
        cited = self.cited_candidates(prep)
        pieces = []
        for piece in self.stream_text(prep, cited, state):
            pieces.append(piece)
            if piece != "\x00FALLBACK":
                yield piece
        yield self.finalize(prep, "".join(pieces), state)
