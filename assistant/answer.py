"""Answering: retrieve → numbered context → answer (LLM or extractive) → checked, cited answer.

The LCEL chain has two steps (``prepare | generate-and-finalize``), shared by ``invoke`` and the
streaming path: streaming only changes how the text arrives, and the citation check runs on the
streamed text when the stream ends, without generating again. Citation markers are rewritten while
streaming (:class:`assistant.citations.CitationRewriter`), so what was streamed is exactly the
final answer.

With history, the question is condensed by the LLM (as in chat-langchain's ``backend/chain.py``);
without an LLM (or when the rewrite fails), retrieval of a follow-up is conditioned on the previous
turn's papers. History is bounded by turns and by tokens.

Endpoint failures never raise: the user gets a one-line note and the extractive answer; text that
streamed before a cut is kept and marked incomplete.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np
from langchain_core.runnables import Runnable, RunnableLambda
from pydantic import BaseModel, Field

from assistant.citations import CitationRewriter, claims_with_citations, strip_markers
from assistant.evidence import Sentence, SentenceCache, lexical_coverage, question_weights
from assistant.features import Cues, judge_features, question_cues, retrieved_signals, sentence_features
from assistant.learned import load_model
from assistant.llm import ChatModel, OpenAIChat, explain_llm_error
from assistant.prompts import answer_prompt, condense_prompt
from assistant.listing import LOOSE_NOTE, ListBar, ListResult, listed_from
from assistant.question import (MAX_QUESTION_CHARS, REFERENCE_WORDS, Question, QuestionError, analyze,
                                embedding_text, names_in, validate_question)
from assistant.relevance import VERDICT_TEXT, Judge, LearnedJudge, RelevanceEvidence, Verdict, content_weights
from assistant.retrieval import Filters, HybridRetriever, ScoredPaper, reciprocal_rank_fusion, resolve_filters
from assistant.settings import Settings
from vectorstore.index import Index

INCOMPLETE_MARK = " … [incomplete]"
FALLBACK_NOTE = "Showing the extractive answer from the abstracts instead."
UNCITED_NOTE = ("The LLM's answer cites none of the given abstracts, so nothing in it was checked against "
                "them; the retrieved papers are listed below.")
CUT_NOTE = "The text received before the cut is kept and marked incomplete; the extractive answer follows."

# Delimiter look-alikes inside abstracts are neutralised so a paper cannot close its own data block.
_DELIMS = re.compile(r"<<<|>>>|</?abstracts>", re.I)


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
    similarity: float | None = Field(None, description="cosine of the weakest claim citing it to its best sentence")


class Claim(BaseModel):
    """One cited sentence of an LLM answer, checked against one cited abstract."""

    text: str
    n: int
    paper_id: str
    sentence: str
    similarity: float
    support: str = Field(description="'supported' | 'weak'")


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
    claims: list[Claim] = Field(default_factory=list, description="LLM claims and their support check")
    usage: dict[str, int] | None = Field(None, description="token usage reported by the endpoint, if any")


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
    llm_error: BaseException | None = None
    """The endpoint already failed while condensing: answer extractively without waiting again."""
    pinned: list[str] = field(default_factory=list)
    """Paper ids the question points at ("the second one"): the only ones cited."""
    note: str = ""
    """A remark from retrieval for the answer's note (e.g. an ordinal past the end of the list)."""
    topic_vec: np.ndarray | None = None
    """Embedding of a list question's topic (``question_topic(query)``); ``qvec`` otherwise."""
    listing: "ListResult | None" = None
    """For a list question: the papers above list mode's bar (assistant.listing), the ones it cites."""
    analysis: Question | None = None
    """The analysis of ``query`` (assistant.question): what every later step reads."""


@dataclass
class _Anchor:
    """What a follow-up refers to: an earlier turn and the sources of it meant (one, for an ordinal)."""

    question: str
    answer: "CitedAnswer"
    sources: list
    pinned: bool = False
    note: str = ""


@dataclass
class _Run:
    """State of one answer while it streams: who wrote it, the shown numbering, notes."""

    mode: str = "extractive"
    note: str = ""
    incomplete: bool = False
    numbering: dict[str, int] = field(default_factory=dict)  # paper id → number shown
    papers: dict[str, ScoredPaper] = field(default_factory=dict)
    removed: list[int] = field(default_factory=list)
    llm_text: str = ""  # the (rewritten) LLM part of the answer, for the support check
    usage: dict[str, int] | None = None


def as_data(text: str) -> str:
    """``text`` safe to place inside a ``<<< … >>>`` block: delimiter look-alikes are defused."""
    return _DELIMS.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)


def _clean_rewrite(text: str) -> str:
    """The condensed question from an LLM reply, without label or quotes: the first line that asks
    something, else the first line. A preamble ("Sure! Here is the standalone question:") is skipped."""
    lines = [re.sub(r"^(?:standalone question|rewritten question|question)\s*:\s*", "", ln.strip(), flags=re.I)
             .strip().strip("\"'“”*").strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.endswith(":")]
    line = next((ln for ln in lines if ln.endswith("?")), lines[0] if lines else "")
    return line[:MAX_QUESTION_CHARS]


class Assistant:
    """Retrieval + answering over one index; one per process, shared by CLI, UI and tests."""

    def __init__(self, settings: Settings, index: Index, rule: Judge | None = None,
                 chat_model: ChatModel | None = None, models: tuple | None = None):
        """``models``: ``(evidence ranker, relevance model)`` (assistant.learned.LinearModel) instead of
        the files ``settings.calibration.models`` names (training passes neutral ones, so what it
        collects does not depend on the models it replaces); ``rule``: a judge instead of the learned one."""
        self.settings = settings
        self.index = index
        cal = self.calibration = settings.calibration
        self.retriever = HybridRetriever(index, settings.retrieval.candidates, cal.fusion.rrf_k,
                                         cal.fusion.coverage_weight, cal.fusion.coverage_pool)
        self.sentences = SentenceCache(index.encoder, index.store, chunker=index.chunker())
        m = cal.models
        self.ranker, relevance_model = models or (load_model(m.evidence, m.evidence_version, m.folder),
                                                  load_model(m.judge, m.judge_version, m.folder))
        self.judge: Judge = rule or LearnedJudge(relevance_model, cal.abstention.follow_up_coverage)
        self.list_bar = ListBar(**cal.listing.model_dump())
        self.llm: ChatModel | None = chat_model or (OpenAIChat(settings.llm) if settings.llm.configured else None)
        self.chain: Runnable = (
            RunnableLambda(self._prepare_input) | RunnableLambda(self.answer_prepared)
        ).with_config(run_name="paper_assistant_answer")

    # --- step 1: retrieval --------------------------------------------------------------------
    def bounded_history(self, history: list[tuple[str, CitedAnswer]]) -> list[tuple[str, CitedAnswer]]:
        """The last ``condense_turns`` turns, oldest dropped until their text fits ``condense_tokens``
        word pieces (the latest turn is always kept; its text is cut to fit in :meth:`history_text`)."""
        cal = self.calibration.history
        turns = list(history or [])[-cal.condense_turns:]
        while len(turns) > 1 and self.index.encoder.count_tokens(self.history_text(turns)) > cal.condense_tokens:
            turns = turns[1:]
        return turns

    def history_text(self, history: list[tuple[str, CitedAnswer]]) -> str:
        """History as the condense prompt sees it: each turn's question, answer without markers,
        and the titles of the papers it cited (what "it" most often refers to)."""
        lines = []
        for q, a in history:
            answer = " ".join(strip_markers(a.answer).split())
            papers = "; ".join(s.title or s.label for s in a.sources)
            lines.append(f"User: {q}\nAssistant: {answer[:self.calibration.history.answer_chars]}" + (f" (papers: {papers})" if papers else ""))
        return "\n".join(lines)

    def _condense(self, question: str, history) -> tuple[str, bool, BaseException | None]:
        """``(query, rewritten by the LLM?, endpoint error or None)``."""
        if not history or self.llm is None:
            return question, False, None
        messages = condense_prompt(self.settings.prompts_dir).invoke(
            {"history": self.history_text(history), "question": question}).to_messages()
        try:
            out = self.llm.complete(messages)
        except Exception as exc:  # the extractive conditioning applies instead
            return question, False, exc
        rewritten = _clean_rewrite(out)
        return (rewritten or question), bool(rewritten), None

    def condense(self, question: str, history: list[tuple[str, CitedAnswer]]) -> str:
        """A standalone question: the LLM rewrites it when there is history; otherwise unchanged."""
        return self._condense(question, self.bounded_history(history))[0]

    def prepare(self, question: str, history: list[tuple[str, CitedAnswer]] | None = None,
                filters: Filters | None = None, k: int | None = None) -> Prepared:
        """Retrieve and score papers for ``question``; raises QuestionError for empty/huge questions."""
        # Names typed in any case ("omnimoe") are spelled as the corpus spells them ("OmniMoE").
        asked = analyze(validate_question(question), self.index.lexical().names)
        question = asked.text
        # What a follow-up points at is looked up in every turn given (a list four turns back);
        # only the LLM's rewrite prompt is bounded.
        turns = list(history or [])
        history = self.bounded_history(turns)
        if filters is not None and filters.active():
            filters = resolve_filters(filters, self.index.store.field_values)
        anchor = self._anchor(asked, turns, filters) if turns else None
        # "The second one", "[2]": resolved here, exactly, LLM or not. A pronoun ("its limitations")
        # the LLM rewrites, unless it fails or just echoes the question.
        pointed = anchor is not None and (anchor.pinned or bool(anchor.note))
        query, rewritten, llm_error = (question, False, None) if pointed else self._condense(question, history)
        rewritten = rewritten and query.casefold() != question.casefold()
        if rewritten:
            anchor = None
        if anchor is not None:
            query = self._anchored(question, anchor)
        analysis = asked if query == question else analyze(query)
        qvec = self.index.encoder.encode_one(embedding_text(query))
        multi = analysis.is_list
        k = k or self.settings.retrieval.k
        pool = max(k, self.list_bar.pool) if multi else k
        papers = self.retriever.search(analysis, k=pool, mode=self.settings.retrieval.mode, filters=filters,
                                       use_mmr=self.settings.retrieval.mmr,
                                       mmr_lambda=self.settings.retrieval.mmr_lambda, query_vec=qvec)
        if anchor is not None:
            papers = self._condition_on_history(papers, anchor, k)
        # A list question's lead-in ("Which papers …") carries no content: the relevance of its
        # sentences is judged against the topic alone.
        topic = analysis.topic
        tvec = self.index.encoder.encode_one(embedding_text(topic)) if topic != query else qvec
        # "Tell me more about the second one" wants something not shown yet, not a quote shown before.
        bare = anchor is not None and asked.bare
        shown: dict[str, set[str]] | None = None
        if bare:
            shown = {}
            for _, ans in turns:
                for src in ans.sources:
                    if src.sentence:
                        shown.setdefault(src.paper_id, set()).add(src.sentence)
        cues = question_cues(analysis, self.index.lexical())
        cues.ask_vec = self.index.encoder.encode_one(embedding_text(cues.ask)) if cues.ask != query else qvec
        evidence, relevance = self.score_evidence(cues, qvec, papers, relevance_vec=tvec, topical=multi, shown=shown)
        pinned: list[str] = []
        if anchor is not None:
            # The label appended to a follow-up ("… (OmniMoE)") names its paper, which settles which
            # paper, not whether the abstract answers: "what about its limitations?" of an abstract
            # that never mentions limitations is a closest match. The user's own words decide (the judge).
            own = content_weights({t: w for t, w in question_weights(asked, self.index.lexical(), self.calibration.sentences.name_term_weight).items()
                                   if t not in REFERENCE_WORDS})
            if own:
                for p in papers:
                    relevance[p.id] = dataclasses.replace(
                        relevance[p.id], own_coverage=lexical_coverage(p.paper.searchable(), own))
            if papers and papers[0].id in {src.paper_id for src in anchor.sources}:
                # The user points at a paper of an earlier answer.
                relevance[papers[0].id] = dataclasses.replace(relevance[papers[0].id], pointed_at=True,
                                                              bare_reference=bare)
                if anchor.pinned:
                    pinned = [papers[0].id]
        verdict = self.judge.decide(relevance[papers[0].id]) if papers else Verdict.none
        prep = Prepared(question, query, qvec, papers, evidence, relevance, verdict, multi=multi and not pinned,
                        llm_error=llm_error, pinned=pinned, note=anchor.note if anchor else "", topic_vec=tvec,
                        analysis=analysis)
        if prep.multi and verdict != Verdict.none:
            prep.listing = listed_from(self, prep)
            if prep.listing.loose:
                prep.note = " ".join(x for x in (prep.note, LOOSE_NOTE) if x)
        return prep

    def _anchor(self, asked: Question, history: list[tuple[str, CitedAnswer]],
                filters: Filters | None = None) -> _Anchor | None:
        """What a follow-up refers to, without an LLM, or None for a question that stands alone.

        A follow-up: "[2]" / "#2"; "the second one"; a bare reference ("tell me more", "and the last
        paper?"); or a pronoun / "tell me more about" in a question that names nothing itself and has
        at most ``MAX_OWN_TERMS`` content terms (assistant.question.Reference). It refers to the latest turn that cited papers (an
        abstained turn in between does not break the thread); an ordinal to the latest one that
        listed several, narrowed to that source (past the end: all of them, with a note). Sources
        outside ``filters`` (resolved) are left out.
        """
        ref = asked.reference
        if ref is None:
            return None
        explicit = ref.kind == "ordinal"
        cited = [turn for turn in reversed(history) if turn[1].sources]
        listed = [turn for turn in cited if len(turn[1].sources) > 1]
        q, ans = (listed or cited or [history[-1]])[0] if explicit else (cited or [history[-1]])[0]
        sources = list(ans.sources)
        if filters is not None and filters.active() and sources:
            found = self.index.store.get_papers([src.paper_id for src in sources])
            sources = [src for src in sources if src.paper_id in found and filters.admits(found[src.paper_id])]
            if not sources:
                return None
        anchor = _Anchor(q, ans, sources)
        if explicit and sources:
            n = ref.n
            if n == -1 or 1 <= n <= len(sources):
                anchor.sources, anchor.pinned = [sources[-1] if n == -1 else sources[n - 1]], True
            else:
                anchor.note = (f"The earlier answer cites {len(sources)} paper{'s' if len(sources) != 1 else ''}, "
                               f"so “{ref.words}” matches none of them; answering about the papers it cited instead.")
        return anchor

    @staticmethod
    def _anchored(question: str, anchor: _Anchor) -> str:
        """A follow-up made retrievable without an LLM: the names of the anchor's papers (what "it"
        refers to) appended, or, if it cited none, its question prepended. Bounded: the anchor is
        never a previous anchored query, so turns do not pile up."""
        names = [s.title or s.label for s in anchor.sources[:2] if s.title or s.label]
        return (f"{question} ({'; '.join(names)})" if names
                else f"{anchor.answer.question or anchor.question} {question}")

    def _condition_on_history(self, papers: list[ScoredPaper], anchor: _Anchor, k: int) -> list[ScoredPaper]:
        """Fuse the anchor's cited papers into the ranking (first-cited first)."""
        prev = [s.paper_id for s in anchor.sources]
        if not prev:
            return papers
        ids, scores = reciprocal_rank_fusion([[p.id for p in papers], prev], k=self.calibration.fusion.rrf_k,
                                             weights=[1.0, self.calibration.fusion.history_weight])
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

    def score_evidence(self, cues: Cues, qvec: np.ndarray, papers: list[ScoredPaper],
                       relevance_vec: np.ndarray | None = None, topical: bool = False,
                       shown: dict[str, set[str]] | None = None):
        """Best supporting sentence and relevance evidence for each paper (``papers`` best first).

        The sentence is the evidence ranker's argmax over the paper's sentences
        (assistant.features.sentence_features); each paper's :class:`RelevanceEvidence` carries the
        judge's features with that paper as the best match and the others as its runners-up.
        ``relevance_vec`` (default ``qvec``) is what the sentence cosine of the relevance evidence is
        measured against (a list question's topic). With ``topical`` (a list question) the quote is
        chosen among the sentences within ``calibration.answer.topic_margin`` of the paper's best
        cosine to the topic, so it shows the paper is on the topic. ``shown`` (paper id → sentences
        quoted before) are quoted again only if a paper has no other sentence.
        Returns ``({id: (sentence, score)}, {id: RelevanceEvidence})``.
        """
        rvec = qvec if relevance_vec is None else relevance_vec
        if not papers:
            return {}, {}
        cache = self.sentences.get([p.paper for p in papers])
        alone = {p.id: self.sentences.alone(p.paper) for p in papers}
        signals = retrieved_signals(cues, papers, cache, qvec, rvec, alone)
        evidence, relevance = {}, {}
        for p in papers:
            sents, vecs = cache[p.id]
            sig = signals[p.id]
            x = judge_features(cues, [sig, *(signals[o.id] for o in papers if o.id != p.id)])
            relevance[p.id] = RelevanceEvidence(sig.dense, sig.sentence, p.bm25, sig.name_share > 0, sig.coverage,
                                                features=x if sents else None)
            if not sents:
                evidence[p.id] = (None, 0.0)
                continue
            scores = self.ranker.score(sentence_features(cues, qvec, [s.text for s in sents], vecs, alone[p.id]))
            if topical:
                on_topic = vecs @ rvec
                scores = np.where(on_topic >= on_topic.max() - self.calibration.answer.topic_margin, scores, -np.inf)
            if shown and p.id in shown and len(sents) > 1:
                scores = np.where([x.text in shown[p.id] for x in sents], -np.inf, scores)
            i = int(np.argmax(scores))
            evidence[p.id] = (sents[i], float(scores[i]))
        return evidence, relevance

    # --- step 2: context ------------------------------------------------------------------------
    def cited_candidates(self, prep: Prepared) -> list[ScoredPaper]:
        """Papers worth citing: for a multi-paper question every paper that clears the relevance bar;
        for one that names things (acronyms, method names), the top paper plus each paper holding a
        name the ones before it do not; otherwise the top paper plus close runners-up."""
        if prep.verdict == Verdict.none or not prep.papers:
            return []
        if prep.pinned:
            return [p for p in prep.papers if p.id in prep.pinned][:1] or prep.papers[:1]
        if prep.multi:  # list mode's bar (assistant.listing), so both give the same papers and count
            have = {p.id: p for p in prep.papers}
            return [have[c.id] for c in prep.listing.papers] or prep.papers[:1]
        top = prep.relevance[prep.papers[0].id]
        out = [prep.papers[0]]
        if self.judge.named(top):
            # "Compare ViTL and VideoLoom": each paper that holds a name no cited paper holds yet.
            names = prep.analysis.names
            held = {n for n in names if names_in([n], prep.papers[0].paper.searchable())}
            for p in prep.papers[1:]:
                own = {n for n in names if n not in held and names_in([n], p.paper.searchable())}
                if own:
                    out.append(p)
                    held |= own
            return out
        margin = self.calibration.answer
        for p in prep.papers[1 : 1 + margin.runner_ups]:
            ev = prep.relevance[p.id]
            if self.judge.decide(ev) == Verdict.answered and ev.sentence >= top.sentence - margin.runner_up_margin:
                out.append(p)
        return out

    def context_blocks(self, prep: Prepared, papers: list[ScoredPaper]) -> tuple[str, list[ScoredPaper]]:
        """Numbered, delimited context blocks packed into the LLM's token budget.

        Returns ``(context text, papers included)``; block ``n`` is ``papers_included[n - 1]``. The
        budget is the context window minus the reply (``max_tokens``) and the prompt around the
        blocks; a block that does not fit is dropped whole and takes no number. Token counts use
        MiniLM's word pieces × ``token_scale`` (calibration), since they undercount most chat tokenizers.
        """
        cfg = self.settings.llm
        count = self.index.encoder.count_tokens
        frame = answer_prompt(self.settings.prompts_dir).format_messages(context="", question=prep.query)
        fudge = self.calibration.answer
        overhead = int(count("\n".join(str(m.content) for m in frame)) * fudge.token_scale) + fudge.prompt_slack
        budget = cfg.context_window - cfg.max_tokens - overhead
        blocks, used, total = [], [], 0
        for p in papers:
            block = (f"[{len(used) + 1}] {as_data(p.paper.display())} (id: {as_data(p.id)})\n"
                     f"<<<\n{as_data(p.paper.text)}\n>>>")
            cost = int(count(block) * fudge.token_scale) + fudge.block_slack
            if total + cost > budget:
                continue
            blocks.append(block)
            used.append(p)
            total += cost
        return "\n\n".join(blocks), used

    # --- step 3: generation ---------------------------------------------------------------------
    def extractive_text(self, prep: Prepared, cited: list[ScoredPaper], numbers: list[int] | None = None) -> str:
        """Answer composed from each cited paper's best sentence, marked [n] (``numbers``, default 1..)."""
        if not cited:
            return VERDICT_TEXT[Verdict.none]
        numbers = numbers or list(range(1, len(cited) + 1))
        lines = []
        if prep.verdict == Verdict.weak:  # a list question too: no paper cleared the bar, so no count
            lines.append(VERDICT_TEXT[Verdict.weak])
        elif prep.multi:
            lines.append(f"{len(cited)} paper{'s' if len(cited) != 1 else ''} in the index "
                         f"match{'es' if len(cited) == 1 else ''}:")
        for n, p in zip(numbers, cited):
            sent = prep.evidence.get(p.id, (None, 0))[0]
            text = sent.text if sent else p.paper.text[:300]
            lines.append(f"- {p.paper.display()}: {text} [{n}]")
        return "\n".join(lines)

    def _extractive(self, prep: Prepared, cited: list[ScoredPaper], run: _Run) -> str:
        """The extractive answer, numbered in the answer's shared numbering."""
        for p in cited:
            run.papers[p.id] = p
            run.numbering.setdefault(p.id, len(run.numbering) + 1)
        return self.extractive_text(prep, cited, [run.numbering[p.id] for p in cited])

    def _chat_pieces(self, inputs: dict, run: _Run) -> Iterator[str]:
        """Text pieces of the streamed LLM answer (assistant.llm.ChatModel.stream); records usage."""
        usage: dict[str, int] = {}
        try:
            yield from self.llm.stream(answer_prompt(self.settings.prompts_dir).invoke(inputs).to_messages(), usage)
        finally:
            run.usage = usage or run.usage

    def stream_text(self, prep: Prepared, cited: list[ScoredPaper], run: _Run) -> Iterator[str]:
        """Yield the answer's text pieces, final as shown (markers already checked and renumbered).

        Fills ``run``. The LLM path falls back to the extractive answer on any endpoint failure,
        keeping text that already streamed (marked incomplete); it never raises for endpoint errors.
        """
        if self.llm is None or not cited:
            yield self._extractive(prep, cited, run)
            return
        if prep.llm_error is not None:
            run.note = f"{explain_llm_error(prep.llm_error, self.settings.llm)} {FALLBACK_NOTE}"
            yield self._extractive(prep, cited, run)
            return
        pool = prep.papers[: max(len(cited), self.settings.retrieval.k)]
        context, used = self.context_blocks(prep, pool)
        if not used:
            run.note = (f"No abstract fits the LLM's context window ({self.settings.llm.context_window} tokens "
                        f"with {self.settings.llm.max_tokens} for the reply). {FALLBACK_NOTE}")
            yield self._extractive(prep, cited, run)
            return
        run.mode = "llm"
        run.papers.update({p.id: p for p in used})
        rewriter = CitationRewriter({n: p.id for n, p in enumerate(used, 1)}, run.numbering)
        raw, shown = [], []
        try:
            for piece in self._chat_pieces({"context": context, "question": prep.query}, run):
                raw.append(piece)
                out = rewriter.feed(piece)
                if out:
                    shown.append(out)
                    yield out
            shown.append(rewriter.flush())
            yield shown[-1]
            run.llm_text, run.removed = "".join(shown), rewriter.removed
            if run.llm_text.strip() and not run.numbering:
                run.note = UNCITED_NOTE
            if not run.llm_text.strip():  # a reply with no content (some servers stop at once)
                run.mode = "extractive"
                run.note = f"The LLM endpoint {self.settings.llm.base_url or 'the OpenAI API'} returned an empty answer. {FALLBACK_NOTE}"
                yield self._extractive(prep, cited, run)
        except Exception as exc:  # every endpoint failure degrades to the extractive answer
            mid = bool("".join(raw).strip())
            run.mode = "extractive"
            run.removed = rewriter.removed
            explanation = explain_llm_error(exc, self.settings.llm, mid_answer=mid)
            if mid:
                shown.append(rewriter.flush())
                run.llm_text = "".join(shown)
                run.incomplete = True
                run.note = f"{explanation} {CUT_NOTE}"
                yield shown[-1] + INCOMPLETE_MARK + "\n\n"
            else:
                run.note = f"{explanation} {FALLBACK_NOTE}"
                run.numbering.clear()
            yield self._extractive(prep, cited, run)

    def finalize(self, prep: Prepared, text: str, run: _Run) -> CitedAnswer:
        """Check citations and build the CitedAnswer from the streamed ``text`` (no generation here)."""
        numbered = {n: run.papers[pid] for pid, n in run.numbering.items()}
        claims = self.check_claims(run.llm_text, numbered) if run.llm_text else []
        sources = [self._source(n, numbered[n], prep, [c for c in claims if c.n == n]) for n in sorted(numbered)]
        cited_ids = {s.paper_id for s in sources}
        # Every retrieved paper (`-k` sets how many); a list question retrieves a pool of 20, shown 5.
        also = [self._source(0, p, prep, []) for p in prep.papers if p.id not in cited_ids][: 5 if prep.multi else None]
        return CitedAnswer(
            question=prep.question, standalone_question=prep.query if prep.query != prep.question else "",
            answer=text.strip(), sources=sources, also_retrieved=also, verdict=prep.verdict, mode=run.mode,
            note=" ".join(n for n in (prep.note, run.note) if n), incomplete=run.incomplete,
            removed_citations=run.removed,
            # The papers above the bar, also when an LLM cites only some of them.
            count=(prep.listing.count if prep.listing else len(sources))
            if prep.multi and prep.verdict == Verdict.answered else None,
            claims=claims, usage=run.usage,
        )

    def check_claims(self, text: str, numbered: dict[int, ScoredPaper]) -> list[Claim]:
        """Each cited sentence of ``text`` against each abstract it cites: the abstract's sentence
        most similar to it (MiniLM cosine) and 'supported' if that is ≥ ``support_threshold`` else 'weak'."""
        claims = [(c, [n for n in nums if n in numbered]) for c, nums in claims_with_citations(text)]
        claims = [(c, nums) for c, nums in claims if nums]
        if not claims:
            return []
        cache = self.sentences.get([p.paper for p in numbered.values()])
        vecs = self.index.encoder.encode([c for c, _ in claims])
        out = []
        for vec, (claim, nums) in zip(vecs, claims):
            for n in nums:
                sents, svecs = cache[numbered[n].id]
                if not sents:
                    continue
                sims = svecs @ vec
                i = int(np.argmax(sims))
                sim = float(sims[i])
                out.append(Claim(text=claim, n=n, paper_id=numbered[n].id, sentence=sents[i].text,
                                 similarity=round(sim, 4),
                                 support="supported" if sim >= self.calibration.answer.support_threshold else "weak"))
        return out

    def _source(self, n: int, p: ScoredPaper, prep: Prepared, claims: list[Claim]) -> Source:
        """A Source; with checked claims, its sentence is the one matching its best-supported claim,
        and its support is that of its weakest claim."""
        sent = prep.evidence.get(p.id, (None, 0))[0]
        support = similarity = None
        if claims:
            best = max(claims, key=lambda c: c.similarity)
            spans = self.sentences.get([p.paper])[p.id][0]
            sent = next((s for s in spans if s.text == best.sentence), sent)
            weakest = min(claims, key=lambda c: c.similarity)
            support, similarity = weakest.support, weakest.similarity
        return Source(
            n=n, paper_id=p.id, label=p.paper.label, title=p.paper.title,
            sentence=sent.text if sent else "", sentence_start=sent.start if sent else -1,
            sentence_end=sent.end if sent else -1, score=round(p.score, 6), abstract=p.paper.text,
            support=support, similarity=similarity,
        )

    # --- public API -----------------------------------------------------------------------------
    def _prepare_input(self, inp: dict) -> Prepared:
        return self.prepare(inp["question"], inp.get("history"), inp.get("filters"), inp.get("k"))

    def answer_prepared(self, prep: Prepared) -> CitedAnswer:
        """The answer for an already prepared question (the chain's second step; the eval reuses
        the retrieval it scored instead of preparing twice)."""
        run = _Run()
        text = "".join(self.stream_text(prep, self.cited_candidates(prep), run))
        return self.finalize(prep, text, run)

    def ask(self, question: str, history: list[tuple[str, CitedAnswer]] | None = None,
            filters: Filters | None = None, k: int | None = None) -> CitedAnswer:
        """Answer ``question`` through the LCEL chain. Raises QuestionError for empty/huge questions."""
        return self.chain.invoke({"question": question, "history": history, "filters": filters, "k": k})

    def ask_stream(self, question: str, history: list[tuple[str, CitedAnswer]] | None = None,
                   filters: Filters | None = None) -> Iterator[str | CitedAnswer]:
        """Yield text pieces as they arrive, then the final CitedAnswer (always last).

        The pieces joined are exactly the final ``answer``: the check at the end adds sources,
        support and notes, never different text. Raises QuestionError before the first piece.
        """
        prep = self.prepare(question, history, filters)
        run = _Run()
        pieces = []
        for piece in self.stream_text(prep, self.cited_candidates(prep), run):
            if piece:
                pieces.append(piece)
                yield piece
        yield self.finalize(prep, "".join(pieces), run)
