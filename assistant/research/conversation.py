"""A turn of a conversation as every face answers it (``ask``, ``chat``, the page's chat, MCP's ``ask``): a comparison
asked ("compare it with the first one", "how does KITE differ from SyPE?", "compare these") is answered side by side
(:mod:`assistant.research.compare`) with the papers it means, told from the conversation: "it" the paper in focus,
"the first one" a source of the latest list, "these" the latest answer's papers, a name the paper it names; a
question asked before it in the same turn ("is there another forecasting paper? compare it with KITE") is answered
first and its paper is the "it". Any other question is the answer path's (:meth:`assistant.answer.Assistant.prepare`);
without an LLM, a synthesis it asks for ("summarise it", "what are its components", "what are the main
contributions") quotes the abstract's sentences that hold it, by facet, and says a written answer needs an LLM."""

from __future__ import annotations

from collections.abc import Iterator

from assistant.answer import explain_llm_error, in_focus
from assistant.question import ABOUT_A_PAPER, names_in
from assistant.research.compare import (COMPARE_NEEDS_LLM, LLM_FAILED, checked, comparison_answer, facet_rows,
                                        llm_comparison)
from assistant.research.facets import FACET_NAMES, sentence_facets, is_content
from assistant.types import CitedAnswer, History, Verdict

SYNTHESIS_NEEDS_LLM = ("A written answer needs an LLM, and none is set (docs/llm.md says how to set one); "
                       "above, the abstract's own sentences that hold it.")
MAX_COMPARED = 4
"""Papers one comparison shows side by side ("compare these" after a longer list: its first four)."""
ONE_PAPER = ("A comparison needs two papers, and {words} {point} at one ({label}); answering about it. Name the "
             "other paper, or say which of an earlier answer's (“the second one”).")
NO_PAPER = "A comparison needs two papers, and no indexed paper could be told from {words}; answering the question as asked."
_NUMBERS = {"one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


def reply_stream(assistant, question: str, history: History | None = None, filters=None, k: int | None = None,
                 hold: bool = False) -> Iterator[str | CitedAnswer]:
    """Text pieces, then the final :class:`CitedAnswer` (always last), as :meth:`Assistant.ask_stream` yields
    them, for ``question`` after ``history``. Raises QuestionError, FilterError as the answer path does."""
    asked = assistant.analyze(question)
    turns = list(history or [])
    why = ""
    if asked.compare is not None and asked.compare.targets:
        answer = compared(assistant, asked, turns, filters, k)
        if isinstance(answer, CitedAnswer):
            yield answer.answer
            yield answer
            return
        why = answer
    prep = assistant.prepare(asked, turns, filters, k)  # analysed once
    prep.add_note(why)
    if assistant.llm is None:
        quote_synthesis(assistant, prep)
    yield from assistant.generator.stream(prep, hold=hold)


def reply(assistant, question: str, history: History | None = None, filters=None, k: int | None = None) -> CitedAnswer:
    """The final answer of :func:`reply_stream`."""
    *_, answer = reply_stream(assistant, question, history, filters, k)
    return answer


def compared(assistant, asked, turns: History, filters, k: int | None) -> CitedAnswer | str:
    """The comparison ``asked`` asks for; when it does not point at two papers, the sentence saying why (the answer
    path then answers the question, with that note)."""
    comp, lead = asked.compare, None
    if comp.lead:  # "is there another forecasting paper? compare it with KITE": that question first
        lead = assistant.answer_prepared(assistant.prepare(comp.lead, turns, filters, k))
        if not lead.sources:
            return lead
        turns = [*turns, (comp.lead, lead)]
    ids = target_papers(assistant, comp, turns)
    found = assistant.index.store.get_papers(ids)
    papers = [found[i] for i in ids if i in found and (filters is None or not filters.active() or filters.admits(found[i]))]
    if len(papers) < 2:
        words = " and ".join(f"“{t.words}”" for t in comp.targets)
        if len(comp.targets) < 2:  # "how does it differ from earlier methods?": one paper asked about, no second
            why = ""
        elif papers:
            why = ONE_PAPER.format(words=words, point="both point" if len(comp.targets) == 2 else "all point",
                                   label=papers[0].display())
        else:
            why = NO_PAPER.format(words=words)
        if lead is not None:
            lead.note = " ".join(x for x in (lead.note, why) if x)
            return lead
        return why
    papers = papers[:MAX_COMPARED]
    numbers = _numbering(lead, papers)
    cache = assistant.sentences.get(papers)
    sides = [cache[p.id] for p in papers]
    text = note = ""
    rows = facet_rows([([s.text for s in sents], vecs) for sents, vecs in sides])
    if assistant.llm is not None:
        try:
            text = llm_comparison(assistant.llm, assistant.settings.prompts_dir, asked.text, papers, rows, numbers)
        except Exception as exc:  # any endpoint failure: the side-by-side table stands alone
            note = f"{explain_llm_error(exc, assistant.settings.llm)} {LLM_FAILED}"
    answer = comparison_answer(asked.text, papers, sides, numbers, text, rows)
    answer = checked(answer, assistant.generator, papers) if text else answer
    if assistant.llm is None:
        answer.answer += f"\n\n{COMPARE_NEEDS_LLM}"
    answer.note = note
    return _after_lead(answer, lead) if lead is not None else answer


def _numbering(lead: CitedAnswer | None, papers: list) -> list[int]:
    """Source numbers for ``papers``: a paper the lead answer cites keeps its number, others follow its sources."""
    have = {s.paper_id: s.n for s in lead.sources} if lead is not None else {}
    nxt, numbers = max(have.values(), default=0), []
    for p in papers:
        if p.id not in have:
            nxt += 1
            have[p.id] = nxt
        numbers.append(have[p.id])
    return numbers


def _after_lead(answer: CitedAnswer, lead: CitedAnswer) -> CitedAnswer:
    """The lead question's answer, then the comparison: one answer, one numbering."""
    known = {s.paper_id for s in lead.sources}
    sources = sorted([*lead.sources, *(s for s in answer.sources if s.paper_id not in known)], key=lambda s: s.n)
    cited = {s.paper_id for s in sources}
    return lead.model_copy(update={
        "question": answer.question, "answer": f"{lead.answer}\n\n{answer.answer}", "sources": sources,
        "also_retrieved": [s for s in lead.also_retrieved if s.paper_id not in cited], "comparison": answer.comparison,
        "note": " ".join(x for x in (lead.note, answer.note) if x), "claims": [*lead.claims, *answer.claims]})


def target_papers(assistant, comp, turns: History) -> list[str]:
    """The paper ids a comparison points at, in the order said, each once: a name → the paper it names;
    "it" → the paper in focus (assistant.answer.followup.in_focus; after a list, its first); "the first one" → a
    source of the latest turn that cited several; "these" → the latest answer's papers (or that list's)."""
    cited = [ans for _, ans in reversed(turns) if ans.sources]
    listed = [ans for ans in cited if len(ans.sources) > 1]
    focus = in_focus(turns)
    out: list[str] = []
    for t in comp.targets:
        if t.kind == "name":
            pid = named_paper(assistant, t.words)
            ids = [pid] if pid else []
        elif t.kind == "focus":
            ids = [focus[1].sources[0].paper_id] if focus else [cited[0].sources[0].paper_id] if cited else []
        elif t.kind == "ordinal":
            srcs = (listed or cited or [CitedAnswer(question="", answer="")])[0].sources
            ids = [srcs[t.n - 1 if t.n > 0 else -1].paper_id] if srcs and (t.n == -1 or 1 <= t.n <= len(srcs)) else []
        else:  # "these", "them", "both"
            ids = [s.paper_id for s in (cited[0].sources if cited and len(cited[0].sources) > 1
                                        else listed[0].sources if listed else [])]
        out += [i for i in ids if i not in out]
    return out


def named_paper(assistant, name: str) -> str | None:
    """The indexed paper ``name`` names: the one labelled or titled so, else the only one of the papers BM25
    finds for it that holds it; None when no paper or several do."""
    ids, _ = assistant.retriever.bm25(name)
    found = assistant.index.store.get_papers(list(ids[:10]))
    papers = [found[i] for i in ids[:10] if i in found]
    for p in papers:
        if name.casefold() in (p.label.casefold(), p.title.casefold()) or p.title.casefold().startswith(f"{name.casefold()}:"):
            return p.id
    holding = [p.id for p in papers if names_in([name], p.searchable())]
    return holding[0] if len(holding) == 1 else None


def quote_synthesis(assistant, prep) -> None:
    """Without an LLM: for a synthesis question (``summary``: a sentence per facet; ``components``: the method
    sentences, as many as it asks for; ``contributions``: method and results), quote each cited paper's sentences
    that hold it in ``prep`` (its ``quotes`` and quoted sentence), and end the answer with
    :data:`SYNTHESIS_NEEDS_LLM`. A comparison that points at one paper keeps its quote and ends with the
    comparison's line; a list keeps one sentence a paper."""
    a = prep.analysis
    kind = a.synthesis if a is not None else ""
    if not kind or prep.verdict == Verdict.none or not prep.papers:
        return
    prep.needs_llm = COMPARE_NEEDS_LLM.split(";")[0] + "." if kind == "comparison" else SYNTHESIS_NEEDS_LLM
    if prep.multi or kind not in ABOUT_A_PAPER:  # a list: one sentence a paper; one paper to compare: the evidence
        return
    wanted = {"summary": ("task", "method", "results"), "components": ("method",),
              "contributions": ("method", "results")}[kind]
    limit = next((_NUMBERS.get(c, int(c) if c.isdigit() else 0) for c in a.counts), 0)
    cited = assistant.generator.cited_candidates(prep)
    cache = assistant.sentences.get([p.paper for p in cited])
    for p in cited:
        sents, vecs = cache[p.id]
        if len(sents) < 2:
            continue
        facets = [FACET_NAMES[f] for f in sentence_facets(vecs)]
        centre = vecs.mean(axis=0)
        chosen = []
        for f in wanted:
            mine = [i for i, s in enumerate(sents) if facets[i] == f and is_content(s.text)]
            if kind == "components" or (kind == "contributions" and f == "method"):
                chosen += mine  # every method sentence: the parts, the contributions
            elif mine:
                chosen.append(max(mine, key=lambda i: float(vecs[i] @ centre)))  # its most representative
        chosen = sorted(set(chosen))[: limit or None]
        if chosen:
            prep.quotes[p.id] = [sents[i] for i in chosen]
            prep.evidence[p.id] = (sents[chosen[0]], prep.evidence.get(p.id, (None, 0.0))[1])
