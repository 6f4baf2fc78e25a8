"""The answer pipeline, one step per method, in order:

    analyze → follow_up → retrieve → score_evidence → decide → (listing) → cite → generate → check

:meth:`Assistant.prepare` runs the steps up to the verdict and returns a :class:`Prepared`;
:meth:`Assistant.ask_stream` / :meth:`Assistant.ask` hand it to the :class:`Generator` (cite,
generate, check citations). Each step is logged by name with its duration (logger
``assistant.answer.pipeline``, level DEBUG), so a trace reads like this list. The modules behind the steps:
assistant.question.analysis, assistant.answer.followup, assistant.retrieval.hybrid, assistant.evidence.sentences,
assistant.relevance.judge, assistant.relevance.listing, assistant.answer.generate.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import numpy as np

from assistant.answer.followup import Anchor, FollowUp, FollowUps, quoted_before
from assistant.answer.generate import Generator
from assistant.answer.listed import code_prepared, listed_from
from assistant.answer.llm import ChatModel, OpenAIChat
from assistant.answer.notes import annotate, grounded_verdict
from assistant.answer.prepared import Prepared
from assistant.evidence import (Cues, RelevanceEvidence, SentenceCache, question_cues, relevance_evidence,
                                sentence_features)
from assistant.question import (Question, analyze, code_request, coverage, reads_as_english, validate_question,
                                what_it_is)
from assistant.relevance import (AbstentionRule, CrossEncoderJudge, Judge, LOOSE_NOTE, LearnedJudge, ListBar, NameCheck,
                                 ListResult, check_question, list_judges, title_leads, judge_features, load_model, load_relevance, passage,
                                 relevance_query, retrieved_signals, token_counts)
from assistant.retrieval import (Filters, HybridRetriever, ScoredPaper, absent_variant, filters_scope,
                                 resolve_filters)
from assistant.settings import Settings
from assistant.trace import step
from assistant.types import CitedAnswer, History, Verdict
from vectorstore.index import Index

NO_EARLIER_ANSWER = "“{words}” refers to an earlier answer, and there is none yet; answering the question as asked."


class Assistant:
    """Retrieval + answering over one index; one per process, shared by CLI, UI, MCP and tests.

    ``rule``: the relevance :class:`Judge` (default: the calibrated :class:`AbstentionRule`, or the
    :class:`LearnedJudge` with ``calibration.abstention.learned``); the quoted sentence is always the
    learned evidence ranker's (``calibration.sentences.learned``); ``chat_model``: any :class:`ChatModel`
    (default: OpenAIChat when an LLM is configured); ``models``: ``(evidence ranker, relevance model)``
    (assistant.relevance.learned.LinearModel) for the learned path instead of the files the calibration names
    (training passes neutral ones, so what it collects does not depend on the models it replaces).
    """

    def __init__(self, settings: Settings, index: Index, rule: Judge | None = None,
                 chat_model: ChatModel | None = None, models: tuple | None = None):
        self.settings = settings
        self.index = index
        cal = self.calibration = settings.calibration
        self.retriever = HybridRetriever(index, settings.retrieval.candidates, cal.fusion.rrf_k,
                                         cal.fusion.coverage_weight, cal.fusion.coverage_pool)
        self.sentences = SentenceCache(index.encoder, index.store, chunker=index.chunker())
        self.ranker = models[0] if models is not None else load_model(f"evidence-{cal.sentences.learned}")
        self.learned_judge = models is not None or bool(cal.abstention.learned)
        rc = cal.relevance
        self.relevance_model = load_relevance(rc.model) if rc.model and models is None else None
        if self.relevance_model is not None:
            cut = self.relevance_model.cutoffs
            self.judge: Judge = rule or CrossEncoderJudge(
                answered=cut["answered"] if rc.answered is None else rc.answered,
                weak=cut["weak"] if rc.weak is None else rc.weak,
                listed=rc.listed, veto=cut.get("veto", 0.0) if rc.veto is None else rc.veto,
                follow_up_coverage=cal.abstention.follow_up_coverage)
        elif self.learned_judge:
            judge_model = models[1] if models is not None else load_model(f"judge-{cal.abstention.learned}")
            self.judge: Judge = rule or LearnedJudge(judge_model, cal.abstention.follow_up_coverage)
        else:
            self.judge = rule or AbstentionRule(**cal.abstention.model_dump(exclude={"learned"}))
        topic = rc.topic if rc.topic is not None or self.relevance_model is None else self.relevance_model.cutoffs.get("topic")
        self.list_judge, self.topic_judge = list_judges(self.judge, topic, AbstentionRule(**cal.abstention.model_dump(exclude={"learned"})))
        self.list_bar = ListBar(**cal.listing.model_dump())
        self.follow_ups = FollowUps(settings, index)
        llm = chat_model or (OpenAIChat(settings.llm) if settings.llm.configured else None)
        self.generator = Generator(settings, index.encoder, self.sentences, self.judge, llm)

    @property
    def llm(self) -> ChatModel | None:
        """The chat model, or None (extractive answers only)."""
        return self.generator.llm

    @llm.setter
    def llm(self, model: ChatModel | None) -> None:
        self.generator.llm = model

    # --- the steps up to the verdict ---------------------------------------------------------------
    def prepare(self, question: str | Question, history: History | None = None, filters: Filters | None = None,
                k: int | None = None) -> Prepared:
        """Analyze (unless ``question`` is :meth:`analyze`'s already), resolve the follow-up, retrieve, score evidence
        and judge ``question``. Raises QuestionError for an empty or over-long question, FilterError for an unknown filter value."""
        asked = question if isinstance(question, Question) else self.analyze(question)
        turns = list(history or [])
        filters = self.resolve(filters)
        follow = self.follow_up(asked, turns, filters)
        # "Tell me more about the second one" in a fresh chat: nothing to point at, so say so and
        # answer the question as asked (it used to read as a plain "No relevant abstract found").
        unanchored = NO_EARLIER_ANSWER.format(words=asked.reference.words or asked.text) \
            if asked.reference is not None and not turns else ""
        analysis = (asked if follow.query == asked.text
                    else analyze(follow.query, max_own_terms=self.calibration.question.max_own_terms))
        code, rest = code_request(analysis.topic) if analysis.is_list or analysis.text[:6].lower() == "papers" \
            else (False, "")
        if code:  # "Which papers release code [for X]?": the links in the abstracts decide, as a filter
            filters = dataclasses.replace(filters, has_code=True) if filters else Filters(has_code=True, resolved=True)
            if not rest:
                return self.code_papers(asked, filters)
            follow = dataclasses.replace(follow, query=f"Which papers are about {rest}?")
            analysis = analyze(follow.query, max_own_terms=self.calibration.question.max_own_terms)
        qvec = self.index.encoder.encode_one(follow.query)
        k = k or self.settings.retrieval.k
        # The relevance model reranks the hybrid retriever's top N (a follow-up's papers keep the order
        # its anchor gave them; a list question is ordered by its list).
        reranked = self.relevance_model is not None and follow.anchor is None and not analysis.is_list
        papers = self.retrieve(analysis, qvec, follow.anchor, filters,
                               max(k, self.calibration.relevance.rerank) if reranked else k, follow.exclude)
        # A list question's lead-in ("Which papers …") carries no content: the relevance of its
        # sentences is judged against the topic alone.
        tvec = self.index.encoder.encode_one(analysis.topic) if analysis.topic != analysis.text else qvec
        # "Tell me more about the second one" wants something not shown yet, not a quote shown before.
        shown = quoted_before(turns) if follow.anchor is not None and asked.bare else None
        evidence, relevance, cues = self.score_evidence(analysis, qvec, tvec, papers, shown)
        if follow.anchor is not None and follow.anchor.pinned and analysis is not asked and not asked.bare and papers:
            # The paper pointed at is quoted for the user's own words, not for its label appended to find it.
            own = self.index.encoder.encode_one(asked.text)
            evidence[papers[0].id] = self.score_evidence(asked, own, own, papers[:1])[0][papers[0].id]
        if self.relevance_model is not None:
            probabilities = self.rerank(analysis, tvec, papers, relevance)
            relevance = {pid: dataclasses.replace(ev, probability=probabilities.get(pid, 0.0), definition=what_it_is(analysis))
                         for pid, ev in relevance.items()}
            if reranked:
                # A paper the question names stays first ("… of Romberg-ZOGE?"; retrieval.hybrid.names_first).
                papers = sorted(papers, key=lambda p: (not relevance[p.id].named_hit, -probabilities.get(p.id, 0.0)))[:k]
                evidence = {p.id: evidence[p.id] for p in papers if p.id in evidence}
                relevance = {p.id: relevance[p.id] for p in papers if p.id in relevance}
        pinned = self.follow_ups.evidence(asked, follow.anchor, papers, relevance) if follow.anchor else []
        verdict = self.decide(papers, relevance, analysis.is_list, bool(pinned))
        variant = absent_variant(analysis, papers) if not analysis.is_list else ""  # "ZebraNet Pro": ZebraNet found
        verdict = Verdict.weak if variant and verdict == Verdict.answered else verdict
        names = self.check_names(analysis, papers)
        verdict = grounded_verdict(verdict, names, analysis.is_list)
        prep = Prepared(asked.text, follow.query, qvec, papers, evidence, relevance, verdict,
                        multi=analysis.is_list and not pinned, llm_error=follow.llm_error, pinned=pinned,
                        note=follow.anchor.note if follow.anchor else unanchored or follow.note, topic_vec=tvec, analysis=analysis,
                        scope=filters_scope(filters), cues=cues, excluded=follow.exclude)
        named_top = (self.relevance_model is not None and bool(papers) and papers[0].id in relevance
                     and self.judge.named(relevance[papers[0].id]))
        foreign = not reads_as_english(asked.text)  # a note only: ranking and verdict stay as they are
        annotate(prep, names, variant, named_top, foreign, filters)
        if prep.multi and verdict != Verdict.none:
            prep.listing = self.listing(prep)
            if prep.listing.loose:
                prep.add_note(LOOSE_NOTE)
        return prep

    @step
    def check_names(self, question: Question, papers: list[ScoredPaper]) -> NameCheck:
        """The question's names in the index and the top paper (relevance.names); none if ``name_check`` is off."""
        rc, top = self.calibration.relevance, papers[0].paper.searchable() if papers else None
        return check_question(question, self.index.lexical(), top, rc.name_subject_terms) if rc.name_check else NameCheck()

    @step
    def rerank(self, question: Question, tvec: np.ndarray, papers: list[ScoredPaper],
               relevance: dict[str, RelevanceEvidence]) -> dict[str, float]:
        """``{paper id: P(answers)}`` of the relevance model (assistant.relevance.crossencoder: the cross-encoder's logit
        on relevance_query, a list question's topic, stacked with ``relevance``'s pair features). Ordering the
        top 10 by it raised the gold paper's CV MRR from 0.95 (hybrid) to 0.98 (the logit alone: 0.86)."""
        if not papers:
            return {}
        query = relevance_query(question)
        # The passage is chosen by similarity to what the model reads, so a topic picks the same sentences
        # however it is asked.
        tvec = self.index.encoder.encode_one(query) if query != question.text else tvec
        cache = self.sentences.get([p.paper for p in papers])
        qtok = token_counts([query])[0]
        texts = [passage(tvec, [s.text for s in cache[p.id][0]], cache[p.id][1], p.paper.text, qtok) for p in papers]
        pair = np.array([[relevance[p.id].dense, relevance[p.id].sentence, float(relevance[p.id].named_hit)]
                         for p in papers], dtype=np.float64)  # crossencoder.PAIR_FEATURES
        probs = self.relevance_model.probabilities(query, texts, pair)
        return {p.id: float(x) for p, x in zip(papers, probs)}

    @step
    def analyze(self, question: str) -> Question:
        """The question analysed once; names typed in any case ("omnimoe") spelled as the corpus does."""
        return analyze(validate_question(question), self.index.lexical().names,
                       self.calibration.question.max_own_terms, title_leads(self.index))

    @step
    def resolve(self, filters: Filters | None) -> Filters | None:
        """Filters with the index's own spelling of each value (raises FilterError for none)."""
        if filters is not None and filters.active():
            return resolve_filters(filters, self.index.store.field_values)
        return filters

    @step
    def follow_up(self, asked: Question, turns: History, filters: Filters | None) -> FollowUp:
        """The standalone query and the earlier turn it is anchored to (assistant.answer.followup)."""
        return self.follow_ups.resolve(asked, turns, filters, self.llm)

    @step
    def retrieve(self, question: Question, qvec: np.ndarray, anchor: Anchor | None, filters: Filters | None,
                 k: int, exclude: frozenset[str] = frozenset()) -> list[ScoredPaper]:
        """Hybrid retrieval (a list question's pool is the list bar's), fused with an anchor's papers; the papers
        in ``exclude`` (those discussed, when the question asks for another) left out."""
        r = self.settings.retrieval
        pool = max(k, self.list_bar.pool) if question.is_list else k
        papers = self.retriever.search(question, k=pool + len(exclude), mode=r.mode, filters=filters, use_mmr=r.mmr,
                                       mmr_lambda=r.mmr_lambda, query_vec=qvec)
        papers = [p for p in papers if p.id not in exclude][:pool] if exclude else papers
        return self.follow_ups.condition(papers, anchor, k) if anchor is not None else papers

    @step
    def score_evidence(self, question: Question, qvec: np.ndarray, tvec: np.ndarray, papers: list[ScoredPaper],
                       shown: dict[str, set[str]] | None = None):
        """Each paper's quoted sentence (the evidence ranker's, :meth:`learned_sentences`) and its relevance
        evidence: the learned judge's features (:meth:`learned_evidence`) or what the rules judge reads
        (assistant.evidence.sentences.relevance_evidence); and the question's cues they read (None for no papers)."""
        if not papers:
            return {}, {}, None
        cache = self.sentences.get([p.paper for p in papers])
        cues = question_cues(question, self.index.lexical(), self.calibration.sentences.name_term_weight,
                             self.index.encoder, qvec)
        # A list question, or one asking which paper ("Which work makes …?"), wants a quote that shows the
        # paper matches, not a detail: the ranker chooses among the sentences closest to it.
        topical = question.is_list or question.answer_type == "paper"
        if self.learned_judge:
            return *self.learned_evidence(cues, qvec, tvec, papers, cache, shown, topical), cues
        return (self.learned_sentences(cues, qvec, tvec, papers, cache, shown, topical),
                relevance_evidence(cues, qvec, papers, cache, relevance_vec=tvec), cues)

    def learned_sentences(self, cues: Cues, qvec: np.ndarray, tvec: np.ndarray, papers: list[ScoredPaper],
                          cache: dict, shown: dict[str, set[str]] | None, topical: bool) -> dict:
        """``{paper id: (sentence, score)}``: the evidence ranker's argmax sentence of each paper
        (``(None, 0.0)`` for a paper without sentences). With ``topical`` (a list or "which paper" question) the quote is
        the one holding most of the topic's words among sentences within ``calibration.answer.topic_margin``
        of the paper's best cosine to ``tvec`` (the topic), the ranker breaking ties, so it shows the paper
        is on the topic; ``shown`` sentences are quoted again only if a paper has no other."""
        evidence = {}
        for p in papers:
            sents, vecs = cache[p.id]
            if not sents:
                evidence[p.id] = (None, 0.0)
                continue
            scores = self.ranker.score(sentence_features(cues, qvec, sents, vecs))
            first = np.zeros(len(sents))  # what decides before the ranker's score (a topical quote's topic words)
            if topical:
                on_topic = vecs @ tvec
                first = np.array([coverage(s.terms, cues.content) for s in sents])
                first = np.where(on_topic >= on_topic.max() - self.calibration.answer.topic_margin, first, -np.inf)
            if shown and p.id in shown and len(sents) > 1:
                first = np.where([s.text in shown[p.id] for s in sents], -np.inf, first)
            i = int(np.lexsort((scores, first))[-1])
            evidence[p.id] = (sents[i], float(scores[i]))
        return evidence

    def learned_evidence(self, cues: Cues, qvec: np.ndarray, tvec: np.ndarray, papers: list[ScoredPaper],
                         cache: dict, shown: dict[str, set[str]] | None, topical: bool):
        """The evidence ranker's sentences (:meth:`learned_sentences`), and relevance evidence carrying the
        learned judge's features with each paper as the best match and the others as its runners-up.
        ``tvec``: what the sentence cosine is measured against (a list question's topic)."""
        signals = retrieved_signals(cues, papers, cache, qvec, tvec)
        relevance = {}
        for p in papers:
            sents, _ = cache[p.id]
            sig = signals[p.id]
            x = judge_features(cues, [sig, *(signals[o.id] for o in papers if o.id != p.id)])
            relevance[p.id] = RelevanceEvidence(sig.dense, sig.sentence, p.bm25, sig.name_share > 0, sig.coverage,
                                                features=x if sents else None, definition=bool(
                                                    cues.analysis is not None and cues.analysis.definition))
        return self.learned_sentences(cues, qvec, tvec, papers, cache, shown, topical), relevance

    @step
    def decide(self, papers: list[ScoredPaper], relevance: dict[str, RelevanceEvidence], listing: bool = False,
               pinned: bool = False) -> Verdict:
        """The judge's verdict on the top paper: the answer's verdict. With the cross-encoder, on the paper it
        rates highest (its calibration reads that paper's probability), or on the top paper the question names or
        a follow-up points at (``pinned``)."""
        if not papers:
            return Verdict.none
        judge, top = self.topic_judge if listing else self.judge, relevance[papers[0].id]
        if self.relevance_model is not None and not top.named_hit and not pinned:
            top = max((relevance[p.id] for p in papers), key=lambda ev: ev.probability or 0.0)
        return judge.decide(top)

    @step
    def code_papers(self, asked: Question, filters: Filters) -> Prepared:
        """ "Which papers release code?": every paper (within ``filters``) whose abstract links code or a
        project page, from the metadata (assistant.answer.listed.code_prepared), none left to retrieval's chance."""
        return code_prepared(asked, filters, self.index, self.sentences)

    @step
    def listing(self, prep: Prepared) -> ListResult:
        """A list question's papers: every one above list mode's bar (assistant.relevance.listing)."""
        return listed_from(prep, self.sentences, self.index.encoder, self.index.store.counts()[0], self.list_judge, self.list_bar)

    # --- cite → generate → check (assistant.answer.generate) ----------------------------------------------
    def cited_candidates(self, prep: Prepared) -> list[ScoredPaper]:
        return self.generator.cited_candidates(prep)

    def context_blocks(self, prep: Prepared, papers: list[ScoredPaper]):
        return self.generator.context_blocks(prep, papers)

    def stream_text(self, prep: Prepared, cited: list[ScoredPaper], run, hold: bool = False) -> Iterator[str]:
        return self.generator.stream_text(prep, cited, run, hold)

    def bounded_history(self, history: History) -> History:
        return self.follow_ups.bounded_history(history)

    def history_text(self, history: History) -> str:
        return self.follow_ups.history_text(history)

    def condense(self, question: str, history: History) -> str:
        """A standalone question: the LLM rewrites it when there is history; otherwise unchanged."""
        return self.follow_ups.condense(question, self.bounded_history(history), self.llm)[0]

    # --- public API ----------------------------------------------------------------------------------
    def answer_prepared(self, prep: Prepared) -> CitedAnswer:
        """The answer for an already prepared question (the eval reuses the retrieval it scored)."""
        *_, answer = self.generator.stream(prep)
        return answer

    def ask(self, question: str, history: History | None = None, filters: Filters | None = None,
            k: int | None = None) -> CitedAnswer:
        """Answer ``question``. Raises QuestionError for empty/huge questions."""
        return self.answer_prepared(self.prepare(question, history, filters, k))

    def ask_stream(self, question: str, history: History | None = None,
                   filters: Filters | None = None, hold: bool = False) -> Iterator[str | CitedAnswer]:
        """Yield text pieces as they arrive, then the final CitedAnswer (always last).

        The pieces joined are exactly the final ``answer``: the check at the end adds sources,
        support and notes, never different text. One exception: a reply cut before its end in which
        no citation is supported streams, then the final answer leaves it out (``cut_reply`` keeps
        it), so a face that shows the stream must redraw the final answer. With ``hold`` (a face
        that cannot redraw, such as a terminal) LLM text waits for its first supported citation, so
        such a reply never shows and the exception never happens. Raises QuestionError before the
        first piece.
        """
        prep = self.prepare(question, history, filters)
        yield from self.generator.stream(prep, hold=hold)
