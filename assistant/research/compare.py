"""Papers compared side by side: per facet (task, method, data, results) each paper's own sentence, and what
they share and where they differ, from related work's facets (:func:`assistant.research.facets.facet_notes`:
a facet is shared when the two papers' facet centroids reach ``SHARED_ABOVE``). With an LLM, a short written
comparison grounded in those sentences (``prompts/compare_*.txt``), each citation checked against its abstract;
without one, the side-by-side table (:class:`assistant.types.Comparison`) and the line :data:`COMPARE_NEEDS_LLM`."""

from __future__ import annotations

import re

import numpy as np

from assistant.research.facets import FACET_NAMES, FACETS, SHARED_ABOVE, facet_notes, is_content, sentence_facets
from assistant.retrieval import ScoredPaper
from assistant.types import CitedAnswer, Comparison, FacetRow, Source
from vectorstore.papers import Paper

COMPARE_NEEDS_LLM = ("A written comparison needs an LLM, and none is set (docs/llm.md says how to set one); "
                     "below, each paper's own sentences, facet by facet.")
LLM_FAILED = "Showing the side-by-side comparison from the abstracts instead."
# The data facet is no CSFCube facet (related work's model knows task, method and results): a sentence naming
# what the paper is trained or evaluated on. The one most like its abstract's centre, as facet_notes chooses.
_DATA = re.compile(r"\b(?:data ?sets?|benchmarks?|corpus|corpora|data|datasets?)\b", re.I)
ORDER = ("task", "method", "data", "results")


def _data_sentence(sents: list[str], vecs: np.ndarray) -> int | None:
    """The index of ``sents``' data sentence (a method or results sentence naming data, most like the abstract's
    centre), or None: a task sentence naming data speaks of others' ("existing models are trained on …")."""
    facets = sentence_facets(vecs)
    keep = [i for i, s in enumerate(sents) if is_content(s) and _DATA.search(s) and facets[i] != "background"]
    if not keep:
        return None
    centre = vecs.mean(axis=0)
    return max(keep, key=lambda i: float(vecs[i] @ centre))


def facet_rows(sides: list[tuple[list[str], np.ndarray]]) -> list[FacetRow]:
    """The comparison's rows for papers given as ``(sentences, their vectors)``, the first being the one each
    other paper is held against: its facets (task, method, results) as :func:`facet_notes` pairs them, then data."""
    first_s, first_v = sides[0]
    cells: dict[str, list[str]] = {}
    shared: dict[str, list[bool]] = {}
    sims: dict[str, list[float]] = {}
    for k, (sents, vecs) in enumerate(sides[1:], 1):
        ab = {n.facet: n for n in facet_notes(first_s, first_v, sents, vecs)}
        ba = {n.facet: n for n in facet_notes(sents, vecs, first_s, first_v)}
        for f in FACETS:
            name = FACET_NAMES[f]
            if f in ab:
                mine, theirs, same, sim = ab[f].query_sentence, ab[f].paper_sentence, ab[f].shared, ab[f].similarity
            elif f in ba:  # only the first paper states it
                mine, theirs, same, sim = ba[f].paper_sentence, "", False, 0.0
            else:
                mine, theirs, same, sim = "", "", False, 0.0
            row = cells.setdefault(name, [""] * len(sides))
            row[0] = row[0] or mine
            row[k] = theirs
            shared.setdefault(name, []).append(same)
            sims.setdefault(name, []).append(round(sim, 4))
    data = [_data_sentence(s, v) for s, v in sides]
    cells["data"] = [sides[k][0][i] if i is not None else "" for k, i in enumerate(data)]
    for k in range(1, len(sides)):
        sim = float(first_v[data[0]] @ sides[k][1][data[k]]) if data[0] is not None and data[k] is not None else 0.0
        shared.setdefault("data", []).append(sim >= SHARED_ABOVE)
        sims.setdefault("data", []).append(round(sim, 4))
    return [FacetRow(facet=f, sentences=cells[f], shared=shared[f], similarity=sims[f])
            for f in ORDER if f in cells and any(cells[f])]


def summary_line(comparison: Comparison) -> str:
    """One line saying what the compared papers share and where they differ, by facet ("they share the method and
    differ in task and results"; with more papers, each against the first)."""
    first, rest = comparison.papers[0], comparison.papers[1:]
    parts = []
    for k, n in enumerate(rest):
        same = [r.facet for r in comparison.rows if r.shared[k]]
        apart = [r.facet for r in comparison.rows if not r.shared[k] and r.sentences[0] and r.sentences[k + 1]]
        said = [f"share the {_joined(same)}" if same else "", f"differ in {_joined(apart)}" if apart else ""]
        who = "they" if len(rest) == 1 else f"[{first}] and [{n}]"
        parts.append(f"{who} " + (" and ".join(x for x in said if x) or "state no facet in common"))
    return "; ".join(parts) + "."


def _joined(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def comparison_answer(question: str, papers: list[Paper], sides: list[tuple], numbers: list[int] | None = None,
                      llm_text: str = "", rows: list[FacetRow] | None = None) -> CitedAnswer:
    """The answer comparing ``papers`` (``sides``: each one's ``(sentences, vectors)`` from the sentence cache, as
    :class:`assistant.evidence.Sentence` lists): its sources, the table, and the text (``llm_text`` when an LLM
    wrote it, else the summary line). ``numbers``: the source numbers to give them (default 1, 2, …); ``rows``: the
    table when already made (:func:`facet_rows` of ``sides``)."""
    numbers = numbers or list(range(1, len(papers) + 1))
    rows = rows if rows is not None else facet_rows([([s.text for s in sents], vecs) for sents, vecs in sides])
    comparison = Comparison(papers=numbers, rows=rows)
    sources = []
    for k, (paper, (sents, _)) in enumerate(zip(papers, sides)):
        quoted = next((r.sentences[k] for r in rows if r.sentences[k]), "")
        span = next((s for s in sents if s.text == quoted), None)
        sources.append(Source(n=numbers[k], paper_id=paper.id, label=paper.label, title=paper.title, sentence=quoted,
                              sentence_start=span.start if span else -1, sentence_end=span.end if span else -1,
                              abstract=paper.text, links=paper.links))
    names = " and ".join(f"{p.display()} [{n}]" for p, n in zip(papers, numbers))
    text = llm_text or f"Comparing {names}: {summary_line(comparison)}"
    return CitedAnswer(question=question, answer=text, sources=sources, comparison=comparison,
                       mode="llm" if llm_text else "extractive")


def llm_comparison(llm, prompts_dir, question: str, papers: list[Paper], rows: list[FacetRow], numbers: list[int]) -> str:
    """The LLM's short comparison of ``papers`` from the table's sentences (numbered as the sources), with
    citations of numbers not given removed. Raises whatever the endpoint raises."""
    from assistant.answer import compare_prompt

    blocks = []
    for k, (paper, n) in enumerate(zip(papers, numbers)):
        facets = "\n".join(f"- {r.facet}: {r.sentences[k]}" for r in rows if r.sentences[k])
        blocks.append(f"[{n}] {paper.display()}\n{facets}")
    text = llm.complete(compare_prompt(prompts_dir).invoke(
        {"papers": "\n\n".join(blocks), "question": question}).to_messages())
    return re.sub(r"\s*\[(\d+)\]", lambda m: m.group(0) if int(m.group(1)) in numbers else "", text.strip())


def checked(answer: CitedAnswer, generator, papers: list[Paper]) -> CitedAnswer:
    """``answer`` (an LLM comparison) with each cited claim checked against the abstract it cites
    (assistant.answer.generate.Generator.check_claims): its claims, and each source's support."""
    numbered = {s.n: ScoredPaper(p, 0.0) for s, p in zip(answer.sources, papers)}
    claims = generator.check_claims(answer.answer, numbered)
    for s in answer.sources:
        mine = [c for c in claims if c.n == s.n]
        if mine:
            weakest = min(mine, key=lambda c: c.similarity)
            s.support, s.similarity = weakest.support, weakest.similarity
    answer.claims = claims
    return answer
