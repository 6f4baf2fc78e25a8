"""Related work explained by an LLM: a short paragraph per related paper on what it shares with the
query text and where it differs, citing sentences as [Q1] (query) and [P2] (paper).

Optional: without an LLM, :mod:`assistant.research.related`'s sentence pairs (shares) and unmatched sentences
(differs) are the explanation. Prompt: ``prompts/related_system.txt`` + ``prompts/related_user.txt``.
"""

from __future__ import annotations

import re

from assistant.answer import related_prompt
from assistant.research.related import RelatedPaper
from vectorstore.chunks import split_sentences

_CITE = re.compile(r"\[([QP])(\d+)\]")
# Answer-style numeric citations ("[7]", "[2, 9]") point at nothing in this prompt's numbering.
_NUMERIC_CITE = re.compile(r"\s*\[\d+(?:\s*[,;-]\s*\d+)*\]")


def llm_explanation(llm, prompts_dir, query_text: str, item: RelatedPaper, timeout: float | None = None) -> str:
    """The paragraph for ``item``; citations of sentences that do not exist, and numeric ones
    (``[7]``), are removed.

    ``llm`` is an :class:`assistant.answer.llm.ChatModel`, whose timeout bounds the whole call, retries included.
    Raises whatever the endpoint raises, or LLMDeadlineError (callers fall back to the sentence pairs).
    """
    q_sents = split_sentences(query_text)
    p_sents = split_sentences(item.paper.text)

    def number(tag: str, sents: list[str]) -> str:
        return "\n".join(f"[{tag}{i}] {s}" for i, s in enumerate(sents, 1))

    text = llm.complete(related_prompt(prompts_dir).invoke(
        {"query": number("Q", q_sents), "paper": number("P", p_sents), "label": item.paper.display()}).to_messages())
    limit = {"Q": len(q_sents), "P": len(p_sents)}
    text = _CITE.sub(lambda m: m.group(0) if 1 <= int(m.group(2)) <= limit[m.group(1)] else "", text.strip())
    return _NUMERIC_CITE.sub("", text).strip()


def add_llm_summaries(llm, cfg, prompts_dir, query_text: str, items: list[RelatedPaper], n: int = 3) -> str:
    """Fill ``summary`` of the first ``n`` items, each call bounded by ``cfg.timeout`` (``cfg``: the
    LLMSettings). Returns "" or, when the endpoint fails, a one-line note naming what went wrong
    (the sentence pairs remain the explanation)."""
    from assistant.answer import explain_llm_error

    for item in items[:n]:
        try:
            item.summary = llm_explanation(llm, prompts_dir, query_text, item)
        except Exception as exc:  # any endpoint failure: keep the extractive explanation
            return f"{explain_llm_error(exc, cfg)} Showing sentence pairs only."
    return ""
