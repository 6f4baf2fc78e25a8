"""Plain-text and JSON renderings of results, shared by the CLI (and handy in tests)."""

from __future__ import annotations

import json

from assistant.answer import CitedAnswer
from assistant.related import RelatedPaper
from assistant.relevance import VERDICT_TEXT, Verdict


def answer_text(ans: CitedAnswer, show_abstract: bool = False) -> str:
    """The answer, then numbered sources with their supporting sentences, then 'also retrieved'."""
    lines = []
    if ans.note:
        lines += [f"Note: {ans.note}", ""]
    lines.append(ans.answer)
    if ans.verdict == Verdict.weak and VERDICT_TEXT[Verdict.weak] not in ans.answer:
        lines += ["", f"({VERDICT_TEXT[Verdict.weak]})"]
    if ans.count is not None:
        lines += ["", f"Found {ans.count} paper{'s' if ans.count != 1 else ''}."]
    if ans.sources:
        lines += ["", "Sources:"]
        for s in ans.sources:
            flag = "  [weak support]" if s.support == "weak" else ""
            lines.append(f"[{s.n}] {s.title or s.label} ({s.paper_id}){flag}")
            if s.sentence:
                lines.append(f'    "{s.sentence}"')
            if show_abstract:
                lines.append(f"    {s.abstract}")
    if ans.also_retrieved:
        lines += ["", "Also retrieved (not cited): " + "; ".join(f"{s.title or s.label} ({s.paper_id})" for s in ans.also_retrieved)]
    return "\n".join(lines)


def answer_json(ans: CitedAnswer) -> str:
    return ans.model_dump_json(indent=2)


def related_records(items: list[RelatedPaper]) -> list[dict]:
    return [
        {"rank": i, "paper_id": r.paper.id, "label": r.paper.display(), "score": round(r.score, 6),
         "similarity": round(r.similarity, 4),
         "explanation": [{"query_sentence": p.query_sentence, "paper_sentence": p.paper_sentence,
                          "similarity": round(p.similarity, 4)} for p in r.pairs]}
        for i, r in enumerate(items, 1)
    ]


def related_text(items: list[RelatedPaper]) -> str:
    if not items:
        return "No related papers found."
    lines = []
    for rec in related_records(items):
        lines.append(f"{rec['rank']:>2}. {rec['label']} ({rec['paper_id']})  score {rec['score']:.4f}  similarity {rec['similarity']:.2f}")
        for p in rec["explanation"]:
            lines.append(f"      yours: \"{p['query_sentence'][:160]}\"")
            lines.append(f"      paper: \"{p['paper_sentence'][:160]}\"  ({p['similarity']:.2f})")
    return "\n".join(lines)


def related_json(items: list[RelatedPaper]) -> str:
    return json.dumps(related_records(items), indent=2, ensure_ascii=False)
