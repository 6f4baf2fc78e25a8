"""Generation: which papers to cite, the numbered context, the answer (LLM or extractive), the check.

The LLM path streams through :class:`assistant.answer.llm.ChatModel`; citation markers are rewritten while
streaming (:class:`assistant.answer.citations.CitationRewriter`), so what was streamed is exactly the final
answer, and the citation check (:meth:`Generator.finalize`) runs on the streamed text when the
stream ends, without generating again. Endpoint failures never raise: the user gets a one-line note
and the extractive answer; text that streamed before a cut is kept and marked incomplete.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field

import numpy as np

from assistant.answer.citations import CitationRewriter, claims_with_citations
from assistant.answer.llm import ChatModel, explain_llm_error
from assistant.answer.prepared import Prepared
from assistant.answer.prompts import answer_prompt
from assistant.evidence import SentenceCache
from assistant.question import analyze, names_in
from assistant.relevance import Judge
from assistant.retrieval import ScoredPaper
from assistant.settings import Settings
from assistant.trace import step
from assistant.types import CitedAnswer, Claim, Source, VERDICT_TEXT, Verdict
from vectorstore.encoding import Encoder
from vectorstore.papers import counted

INCOMPLETE_MARK = " … [incomplete]"
FALLBACK_NOTE = "Showing the extractive answer from the abstracts instead."
UNCITED_NOTE = ("The LLM's answer cites none of the given abstracts, so nothing in it was checked against "
                "them; the retrieved papers are listed below.")
CUT_NOTE = "The text received before the cut is kept and marked incomplete; the extractive answer follows."
CUT_HIDDEN_NOTE = ("No citation in the cut reply is supported by the abstracts, so it is not shown as the answer "
                   "(it is kept, shown on request); the extractive answer follows.")


def caveat_text(kind: str, cited: list[tuple[int, str]], authors: dict[int, list[str]] | None = None) -> str:
    """The abstract-only caveat for a question asking for what abstracts rarely state (``kind``, from
    :attr:`assistant.question.analysis.Question.beyond_abstracts`, e.g. "proofs"): the answer is limited to the
    abstracts; see the full text of ``cited`` (``[(n, label)]``, the answer's sources; may be empty).
    For "author names", the authors the paper records hold (``authors``: n → names) are given instead."""
    head = f"Abstracts rarely give {kind}: this answer is limited to what the abstracts say."
    listed = {n: names for n, names in (authors or {}).items() if names}
    if kind == "author names" and listed:
        return f"{head} The paper records name them: " + "; ".join(
            f"[{n}] {label}: {', '.join(listed[n])}" for n, label in cited if n in listed) + "."
    if not cited:
        return f"{head} The full papers, not their abstracts, would give them."
    papers = "; ".join(f"[{n}] {label}" for n, label in cited)
    which = "the cited paper" if len(cited) == 1 else "the cited papers"
    return f"{head} For them, see the full text of {which}: {papers}."


# Delimiter look-alikes inside abstracts are neutralised so a paper cannot close its own data block.
_DELIMS = re.compile(r"<<<|>>>|</?abstracts>", re.I)


def as_data(text: str) -> str:
    """``text`` safe to place inside a ``<<< … >>>`` block: delimiter look-alikes are defused."""
    return _DELIMS.sub(lambda m: m.group(0).replace("<", "‹").replace(">", "›"), text)


@dataclass
class Run:
    """State of one answer while it streams: who wrote it, the shown numbering, notes."""

    mode: str = "extractive"
    note: str = ""
    incomplete: bool = False
    numbering: dict[str, int] = field(default_factory=dict)  # paper id → number shown
    papers: dict[str, ScoredPaper] = field(default_factory=dict)
    removed: list[int] = field(default_factory=list)
    llm_text: str = ""  # the (rewritten) LLM part of the answer, for the support check
    usage: dict[str, int] | None = None
    cut_reply: str = ""  # a cut LLM reply that failed the citation check (not part of the answer)
    dropped: str = ""  # the part of it that streamed before the check (the final answer starts after it)


class Generator:
    """Cites, packs, generates and checks for one settings tree; ``llm`` None means extractive only."""

    def __init__(self, settings: Settings, encoder: Encoder, sentences: SentenceCache, judge: Judge,
                 llm: ChatModel | None = None):
        self.settings = settings
        self.encoder = encoder
        self.sentences = sentences
        self.judge = judge
        self.llm = llm
        self.calibration = settings.calibration

    @step
    def cited_candidates(self, prep: Prepared) -> list[ScoredPaper]:
        """Papers worth citing: for a multi-paper question every paper that clears the relevance bar;
        for one that names things (acronyms, method names), the top paper plus each paper holding a
        name the ones before it do not; otherwise the top paper plus close runners-up."""
        if prep.verdict == Verdict.none or not prep.papers:
            return []
        if prep.pinned:
            return [p for p in prep.papers if p.id in prep.pinned][:1] or prep.papers[:1]
        if prep.multi:  # list mode's bar (assistant.relevance.listing), so both give the same papers and count
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
        count = self.encoder.count_tokens
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

    def extractive_text(self, prep: Prepared, cited: list[ScoredPaper], numbers: list[int] | None = None) -> str:
        """Answer composed from each cited paper's best sentence, marked [n] (``numbers``, default 1..)."""
        if not cited:
            return f"{prep.headline} {VERDICT_TEXT[Verdict.none]}" if prep.headline else VERDICT_TEXT[Verdict.none]
        numbers = numbers or list(range(1, len(cited) + 1))
        lines = []
        if prep.verdict == Verdict.weak:  # a list question too: no paper cleared the bar, so no count
            lines.append(VERDICT_TEXT[Verdict.weak])
        elif prep.multi:
            where = prep.scope or "in the index"  # a filtered count names its filters
            lines.append(f"{counted(len(cited), 'paper')} {'' if prep.scope else where + ' '}"
                         f"match{'es' if len(cited) == 1 else ''}{' ' + where if prep.scope else ''}:")
        for n, p in zip(numbers, cited):
            sent = prep.evidence.get(p.id, (None, 0))[0]
            text = " ".join(s.text for s in prep.quotes.get(p.id, ())) or (sent.text if sent else p.paper.text[:300])
            # One paper is a sentence, not a one-item bulleted list.
            lines.append(f"{'- ' if len(cited) > 1 or prep.multi else ''}{p.paper.display()}: {text} [{n}]")
        return "\n".join(lines + (["", prep.needs_llm] if prep.needs_llm else []))

    def _extractive(self, prep: Prepared, cited: list[ScoredPaper], run: Run) -> str:
        """The extractive answer, numbered in the answer's shared numbering."""
        for p in cited:
            run.papers[p.id] = p
            run.numbering.setdefault(p.id, len(run.numbering) + 1)
        return self.extractive_text(prep, cited, [run.numbering[p.id] for p in cited])

    def chat_pieces(self, inputs: dict, run: Run) -> Iterator[str]:
        """Text pieces of the streamed LLM answer (assistant.answer.llm.ChatModel.stream); records usage."""
        usage: dict[str, int] = {}
        try:
            yield from self.llm.stream(answer_prompt(self.settings.prompts_dir).invoke(inputs).to_messages(), usage)
        finally:
            run.usage = usage or run.usage

    def stream_text(self, prep: Prepared, cited: list[ScoredPaper], run: Run, hold: bool = False) -> Iterator[str]:
        """Yield the answer's text pieces, final as shown (markers already checked and renumbered).

        Fills ``run``. The LLM path falls back to the extractive answer on any endpoint failure,
        keeping text that already streamed (marked incomplete); it never raises for endpoint errors.
        A reply cut before its end (reply budget, dropped or stalled stream) in which no citation is
        supported (a base model echoing the prompt with invented ids until ``max_tokens``) is not
        kept in the answer: it goes to ``run.cut_reply`` and the extractive answer stands alone.
        With ``hold``, LLM text is held back until it has a supported citation (or ends), so such a
        reply is never shown; without it (a face that redraws the final answer), it streams first.
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
        raw, shown, held = [], [], []
        checked = not hold  # False while LLM text is held back for want of a supported citation
        try:
            for piece in self.chat_pieces({"context": context, "question": prep.query}, run):
                raw.append(piece)
                out = rewriter.feed(piece)
                if not out:
                    continue
                if not checked:
                    held.append(out)
                    if "]" in out and run.numbering and self._supported("".join(held), run):
                        checked = True
                        out, held = "".join(held), []
                    else:
                        continue
                shown.append(out)
                yield out
            shown.append("".join(held) + rewriter.flush())
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
            streamed = "".join(shown)
            received = streamed + "".join(held) + rewriter.flush()
            if mid and ((hold and checked) or self._supported(received, run)):
                run.llm_text = received
                run.incomplete = True
                run.note = f"{explanation} {CUT_NOTE}"
                yield received[len(streamed):] + INCOMPLETE_MARK + "\n\n"
            else:
                if mid:  # the cut reply failed the citation check: kept aside, not leading the answer
                    run.cut_reply, run.dropped = received.strip(), streamed
                    run.note = f"{explanation} {CUT_HIDDEN_NOTE}"
                    run.removed = []
                else:
                    run.note = f"{explanation} {FALLBACK_NOTE}"
                run.numbering.clear()
            yield self._extractive(prep, cited, run)

    def _supported(self, text: str, run: Run) -> bool:
        """True when some cited claim of ``text`` is 'supported' by the abstract it cites."""
        numbered = {n: run.papers[pid] for pid, n in run.numbering.items()}
        return any(c.support == "supported" for c in self.check_claims(text, numbered))

    @step
    def finalize(self, prep: Prepared, text: str, run: Run) -> CitedAnswer:
        """Check citations and build the CitedAnswer from the streamed ``text`` (no generation here);
        a cut reply that failed the check and had streamed (``run.dropped``) is left out of it."""
        if run.dropped and text.startswith(run.dropped):
            text = text[len(run.dropped):]
        numbered = {n: run.papers[pid] for pid, n in run.numbering.items()}
        claims = self.check_claims(run.llm_text, numbered) if run.llm_text else []
        sources = [self._source(n, numbered[n], prep, [c for c in claims if c.n == n]) for n in sorted(numbered)]
        cited_ids = {s.paper_id for s in sources}
        # Every retrieved paper (`-k` sets how many); a list question retrieves a pool of 20, shown 5.
        also = [self._source(0, p, prep, []) for p in prep.papers if p.id not in cited_ids][: self.calibration.listing.also_shown if prep.multi else None]
        kind = (prep.analysis or analyze(prep.query)).beyond_abstracts
        caveat = caveat_text(kind, [(s.n, s.title or s.label) for s in sources],
                             {n: p.paper.authors for n, p in numbered.items()}) if kind else ""
        return CitedAnswer(
            question=prep.question, standalone_question=prep.query if prep.query != prep.question else "",
            answer=text.strip(), sources=sources, also_retrieved=also, verdict=prep.verdict, mode=run.mode,
            note=" ".join(n for n in (prep.note, run.note, caveat) if n), incomplete=run.incomplete,
            removed_citations=run.removed,
            # The papers above the bar, also when an LLM cites only some of them.
            count=(prep.listing.count if prep.listing else len(sources))
            if prep.multi and prep.verdict == Verdict.answered else None,
            claims=claims, usage=run.usage, caveat=caveat, cut_reply=run.cut_reply,
        )

    def check_claims(self, text: str, numbered: dict[int, ScoredPaper]) -> list[Claim]:
        """Each cited sentence of ``text`` against each abstract it cites: the abstract's sentence
        most similar to it (MiniLM cosine) and 'supported' if that is ≥ ``support_threshold`` else 'weak'."""
        claims = [(c, [n for n in nums if n in numbered]) for c, nums in claims_with_citations(text)]
        claims = [(c, nums) for c, nums in claims if nums]
        if not claims:
            return []
        cache = self.sentences.get([p.paper for p in numbered.values()])
        vecs = self.encoder.encode([c for c, _ in claims])
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
            support=support, similarity=similarity, links=p.paper.links,
        )


    def stream(self, prep: Prepared, hold: bool = False) -> Iterator[str | CitedAnswer]:
        """Text pieces as they arrive, then the final CitedAnswer (always last); the pieces joined are
        exactly its ``answer`` (but see ``hold`` in :meth:`stream_text` and
        :meth:`assistant.answer.pipeline.Assistant.ask_stream`)."""
        run = Run()
        pieces = []
        for piece in self.stream_text(prep, self.cited_candidates(prep), run, hold):
            if piece:
                pieces.append(piece)
                yield piece
        yield self.finalize(prep, "".join(pieces), run)
