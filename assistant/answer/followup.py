"""Follow-ups: what a question points back at, and the standalone question retrieval uses.

Two ways, as in chat-langchain's ``backend/chain.py``: with an LLM, the question and the recent
history are condensed into a standalone question (``prompts/condense.txt``); without one (or when
the rewrite fails or just echoes the question), the question is *anchored*: the earlier turn it
refers to is found by rule (:class:`assistant.question.analysis.Reference`: "[2]", "the second one", "tell
me more", a pronoun), its papers' names are appended to the query and its cited papers are fused
into the ranking. Ordinals and ``[n]`` are resolved by rule even with an LLM, exactly.

"It", "they", "the method" (a pronoun, even in a question with many words of its own: ``Question.pointer``) mean
the paper in focus (:func:`in_focus`: the one the previous answer was about, not a runner-up it also cites), pinned
like "the second one" (an LLM, when set, still rewrites such a question first); a paper pinned is judged as the question asked alone with its name (its label appended, no
amendment for the user's own words). "Another …" / "any other …" leaves the papers discussed out of retrieval.

What the follow-up says about relevance (the paper pointed at, the user's own words) goes to the
judge as fields of :class:`assistant.relevance.judge.RelevanceEvidence` (:meth:`FollowUps.evidence`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from assistant.answer.citations import strip_markers
from assistant.answer.llm import ChatModel
from assistant.answer.prompts import condense_prompt
from assistant.evidence import RelevanceEvidence
from assistant.question import (MAX_QUESTION_CHARS, Question, REFERENCE_WORDS, analyze, content_weights,
                                lexical_coverage, question_weights)
from assistant.retrieval import Filters, ScoredPaper, reciprocal_rank_fusion
from assistant.settings import Settings
from assistant.types import CitedAnswer, History
from vectorstore.index import Index
from vectorstore.papers import counted, name_to_ask_by


@dataclass
class Anchor:
    """What a follow-up refers to: an earlier turn and the sources of it meant (one, for an ordinal)."""

    question: str
    answer: CitedAnswer
    sources: list
    pinned: bool = False
    note: str = ""
    focus: bool = False
    """Pinned as the paper in focus ("it", "they"), not by an ordinal: an LLM may still rewrite the question."""


@dataclass
class FollowUp:
    """The follow-up step's result: the query to retrieve with and what it is anchored to."""

    query: str
    anchor: Anchor | None = None
    llm_error: BaseException | None = None
    """The endpoint failed while condensing: the answer is extractive, without waiting again."""
    exclude: frozenset[str] = frozenset()
    """Papers the conversation has discussed, left out of retrieval: the question asks for another one."""
    note: str = ""
    """What the answer says of them ("Left out as already discussed: KITE.")."""


def clean_rewrite(text: str) -> str:
    """The condensed question from an LLM reply, without label or quotes: the first line that asks
    something, else the first line. A preamble ("Sure! Here is the standalone question:") is skipped."""
    lines = [re.sub(r"^(?:standalone question|rewritten question|question)\s*:\s*", "", ln.strip(), flags=re.I)
             .strip().strip("\"'“”*").strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln and not ln.endswith(":")]
    line = next((ln for ln in lines if ln.endswith("?")), lines[0] if lines else "")
    return line[:MAX_QUESTION_CHARS]


def anchored_query(question: str, anchor: Anchor) -> str:
    """A follow-up made retrievable without an LLM: the names of the anchor's papers (what "it"
    refers to) appended, or, if it cited none, its question prepended. Bounded: the anchor is
    never a previous anchored query, so turns do not pile up. An untitled paper labelled by what it contributes
    is named by its label without that description (:func:`vectorstore.papers.name_to_ask_by`)."""
    names = [s.title or name_to_ask_by(s.label, s.abstract) for s in anchor.sources[:2] if s.title or s.label]
    return (f"{question} ({'; '.join(names)})" if names
            else f"{anchor.answer.question or anchor.question} {question}")


def quoted_before(turns: History) -> dict[str, set[str]]:
    """``{paper id: sentences quoted for it}`` over ``turns``: "tell me more" wants something new."""
    shown: dict[str, set[str]] = {}
    for _, ans in turns:
        for src in ans.sources:
            if src.sentence:
                shown.setdefault(src.paper_id, set()).add(src.sentence)
    return shown


def listed_turn(question: str, answer: CitedAnswer) -> bool:
    """True for an answer that lists papers ("Which papers …?"): no one of them is the paper in focus."""
    return len(answer.sources) > 1 and (answer.count is not None or analyze(question).is_list)


def in_focus(history: History) -> tuple[str, CitedAnswer] | None:
    """The latest turn that cited papers, when it was about one paper (its first source, the one the answer is
    about, not a runner-up it also cites); None when it listed papers or nothing was cited."""
    cited = [turn for turn in reversed(history) if turn[1].sources]
    if not cited or listed_turn(*cited[0]):
        return None
    return cited[0]


class FollowUps:
    """Resolves follow-ups over one index (its store finds an anchor's papers)."""

    def __init__(self, settings: Settings, index: Index):
        self.settings = settings
        self.index = index
        self.cal = settings.calibration

    def bounded_history(self, history: History) -> History:
        """The last ``condense_turns`` turns, oldest dropped until their text fits ``condense_tokens``
        word pieces (the latest turn is always kept; its text is cut to fit in :meth:`history_text`)."""
        cal = self.cal.history
        turns = list(history or [])[-cal.condense_turns:]
        while len(turns) > 1 and self.index.encoder.count_tokens(self.history_text(turns)) > cal.condense_tokens:
            turns = turns[1:]
        return turns

    def history_text(self, history: History) -> str:
        """History as the condense prompt sees it: each turn's question, answer without markers,
        and the titles of the papers it cited (what "it" most often refers to)."""
        lines = []
        for q, a in history:
            answer = " ".join(strip_markers(a.answer).split())[: self.cal.history.answer_chars]
            papers = "; ".join(s.title or s.label for s in a.sources)
            lines.append(f"User: {q}\nAssistant: {answer}" + (f" (papers: {papers})" if papers else ""))
        return "\n".join(lines)

    def condense(self, question: str, history: History,
                 llm: ChatModel | None) -> tuple[str, bool, BaseException | None]:
        """``(query, rewritten by the LLM?, endpoint error or None)`` for already bounded ``history``."""
        if not history or llm is None:
            return question, False, None
        messages = condense_prompt(self.settings.prompts_dir).invoke(
            {"history": self.history_text(history), "question": question}).to_messages()
        try:
            out = llm.complete(messages)
        except Exception as exc:  # the extractive conditioning applies instead
            return question, False, exc
        rewritten = clean_rewrite(out)
        return (rewritten or question), bool(rewritten), None

    def resolve(self, asked: Question, turns: History, filters: Filters | None,
                llm: ChatModel | None) -> FollowUp:
        """The query for ``asked`` given every earlier turn (``filters`` resolved). What a follow-up
        points at is looked up in every turn given (a list four turns back); only the LLM's rewrite
        prompt is bounded."""
        question = asked.text
        anchor = self.anchor(asked, turns, filters) if turns else None
        # "The second one", "[2]": resolved here, exactly, LLM or not. A pronoun ("its limitations")
        # the LLM rewrites, unless it fails or just echoes the question.
        pointed = anchor is not None and ((anchor.pinned and not anchor.focus) or bool(anchor.note))
        query, rewritten, llm_error = ((question, False, None) if pointed
                                       else self.condense(question, self.bounded_history(turns), llm))
        if rewritten and query.casefold() != question.casefold():
            anchor = None
        elif anchor is not None:
            query = anchored_query(question, anchor)
        if asked.another and turns and not asked.names:  # "is there another …?": none discussed, none pinned
            gone = {src.paper_id: src.title or src.label for _, ans in turns for src in ans.sources}
            note = f"Left out as already discussed: {'; '.join(gone.values())}." if gone else ""
            return FollowUp(query, None, llm_error, frozenset(gone), note)
        return FollowUp(query, anchor, llm_error)

    def anchor(self, asked: Question, history: History, filters: Filters | None = None) -> Anchor | None:
        """What a follow-up refers to, without an LLM, or None for a question that stands alone.

        A follow-up: "[2]" / "#2"; "the second one"; a bare reference ("tell me more", "and the last
        paper?"); or a pronoun / "tell me more about" in a question that names nothing itself and has
        at most ``MAX_OWN_TERMS`` content terms (assistant.question.analysis.Reference). It refers to the latest
        turn that cited papers (an abstained turn in between does not break the thread); an ordinal to
        the latest one that listed several, narrowed to that source (past the end: all of them, with a
        note). Sources outside ``filters`` (resolved) are left out.
        """
        ref, focus = asked.reference, in_focus(history)
        # "how do they check …": a pronoun in a question of many words of its own still means the paper in focus.
        if ref is None and not (asked.pointer and not asked.names and focus is not None):
            return None
        explicit = ref is not None and ref.kind == "ordinal"
        cited = [turn for turn in reversed(history) if turn[1].sources]
        listed = [turn for turn in cited if len(turn[1].sources) > 1]
        q, ans = (listed or cited or [history[-1]])[0] if explicit else (cited or [history[-1]])[0]
        # "it", "they", "the method": the paper the previous answer was about, not a runner-up it also cites.
        sources = list(ans.sources) if explicit or focus is None else ans.sources[:1]
        if filters is not None and filters.active() and sources:
            found = self.index.store.get_papers([src.paper_id for src in sources])
            sources = [src for src in sources if src.paper_id in found and filters.admits(found[src.paper_id])]
            if not sources:
                return None
        anchor = Anchor(q, ans, sources, pinned=not explicit and focus is not None, focus=not explicit and focus is not None)
        if explicit and sources:
            n = ref.n
            if n == -1 or 1 <= n <= len(sources):
                anchor.sources, anchor.pinned = [sources[-1] if n == -1 else sources[n - 1]], True
            else:
                anchor.note = (f"The earlier answer cites {counted(len(sources), 'paper')}, "
                               f"so “{ref.words}” matches none of them; answering about the papers it cited instead.")
        return anchor

    def condition(self, papers: list[ScoredPaper], anchor: Anchor, k: int) -> list[ScoredPaper]:
        """Fuse the anchor's cited papers into the ranking (first-cited first)."""
        prev = [s.paper_id for s in anchor.sources]
        if not prev:
            return papers
        ids, scores = reciprocal_rank_fusion([[p.id for p in papers], prev], k=self.cal.fusion.rrf_k,
                                             weights=[1.0, self.cal.fusion.history_weight])
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
        if anchor.pinned:  # the paper pointed at is the one answered, whatever the question's words retrieve
            out.sort(key=lambda sp: sp.id != prev[0])
        return out[: max(k, len(prev))]

    def evidence(self, asked: Question, anchor: Anchor, papers: list[ScoredPaper],
                 relevance: dict[str, RelevanceEvidence]) -> list[str]:
        """Add what the follow-up says to each paper's evidence (in place); returns the pinned paper ids.

        The label appended to a follow-up ("… (OmniMoE)") names its paper, which settles which paper,
        not whether the abstract answers: "what about its limitations?" of an abstract that never
        mentions limitations is a closest match, so each paper gets ``own_coverage`` of the user's own
        words. The top paper, when the earlier answer cited it, is ``pointed_at``.
        """
        # One paper pointed at is judged as the question asked alone with its name: no amendment for the user's own
        # words (the abstract holding "base model" is no answer to "which base model did they use?").
        weights = question_weights(asked, self.index.lexical(), self.cal.sentences.name_term_weight)
        own = content_weights({t: w for t, w in weights.items() if t not in REFERENCE_WORDS})
        if own and not anchor.pinned:
            for p in papers:
                relevance[p.id] = dataclasses.replace(relevance[p.id],
                                                      own_coverage=lexical_coverage(p.paper.searchable(), own))
        if not papers or papers[0].id not in {src.paper_id for src in anchor.sources}:
            return []
        top = papers[0].id
        relevance[top] = dataclasses.replace(relevance[top], pointed_at=True, bare_reference=asked.bare)
        return [top] if anchor.pinned else []
