"""The abstract-only caveat: the note an answer carries when its question asks for what abstracts
rarely state (:attr:`assistant.question.Question.beyond_abstracts`: exact hyper-parameters, training
details, proofs, table values, code details). It says the answer is limited to the abstracts and
points to the cited papers' full text."""

from __future__ import annotations


def caveat_text(kind: str, cited: list[tuple[int, str]]) -> str:
    """The caveat for a question asking for ``kind``: limited to abstracts, pointing to ``cited``
    (``[(n, label)]``, the answer's numbered sources; may be empty)."""
    head = f"Abstracts rarely give {kind}: this answer is limited to what the abstracts say."
    if not cited:
        return f"{head} The full papers, not their abstracts, would give them."
    papers = "; ".join(f"[{n}] {label}" for n, label in cited)
    which = "the cited paper" if len(cited) == 1 else "the cited papers"
    return f"{head} For them, see the full text of {which}: {papers}."
