"""The abstract-only caveat: questions that ask for what abstracts rarely state.

An abstract gives a paper's problem, method and headline result; it seldom gives exact
hyper-parameters, training details, proofs, table values or implementation details. A question
asking for one of these is answered from the abstracts with a caveat saying so and pointing to the
cited papers' full text.

A deterministic rule: no training data labels such questions (the training and dev questions are
lookup, concept, list and none questions, all answerable from abstracts; the rule fires on none
of them, see tests/unit/test_caveat.py), so the cues are listed by hand, one pattern per kind.
List questions ("Which papers study learning-rate schedules?") ask which papers, which abstracts
do answer, and get no caveat.
"""

from __future__ import annotations

import re

_KINDS: list[tuple[str, re.Pattern]] = [
    ("exact hyper-parameters", re.compile(
        r"\b(?:what|which)\s+(?:(?:were|was|are|is)\s+)?(?:the\s+)?(?:exact\s+|specific\s+)?"
        r"(?:hyper-?\s?parameters?|learning[- ]rates?|batch[- ]sizes?|weight[- ]decay|warm-?up\s+(?:steps|schedule|ratio)"
        r"|dropout(?:\s+rate)?|optimi[sz]er(?:\s+settings)?|random\s+seeds?|(?:adam|sgd)\s+(?:betas?|momentum))\b"
        r"|\bhyper-?\s?parameter\s+(?:settings|values|choices|configurations?|config)\b"
        r"|\b(?:how\s+many|number\s+of)\s+(?:training\s+)?epochs\b"
        r"|\b(?:learning[- ]rate|batch[- ]size|optimi[sz]er)s?\s+(?:did|does|do|was|were)\b"
        r"|\bvalues?\s+of\s+(?:the\s+)?(?:learning\s+rate|batch\s+size|hyper-?\s?parameters?)\b", re.I)),
    ("exact training details", re.compile(
        r"\btraining\s+(?:details|setup|set-up|configuration|config)\b"
        r"|\b(?:how\s+many|number\s+of|which|what)\s+(?:gpus?|tpus?|accelerators)\b|\bgpu[- ]hours?\b"
        r"|\bhow\s+long\s+(?:did|does|do|was|were)\b.{0,40}\bto\s+train\b|\bwhat\s+hardware\b"
        r"|\b(?:exact|full)\s+(?:experimental|training)\s+(?:setup|details|settings)\b|\bimplementation\s+details\b", re.I)),
    ("proofs", re.compile(
        r"\bproofs?\b(?![- ]of[- ]concept)(?!\s+(?:search|assistants?|generation|systems?|automation))|\bhow (do|does|did) (they|the authors|it|\w+) prove\b|\bderivations?\b"
        r"|\bderive[sd]?\b.{0,30}\b(bound|theorem|lemma|result|formula|equation)\b|\blemma\s*\d|\btheorem\s*\d"
        r"|\bstep[- ]by[- ]step (derivation|proof)\b", re.I)),
    ("table values", re.compile(
        r"\btables?\s*\d+\b|\b(in|from) (the|their|its) tables?\b|\btable values?\b|\bper[- ](dataset|task|benchmark|language|class) (results?|scores?|numbers|accuracy)\b"
        r"|\bexact (numbers?|values?|scores?|figures?|results?|accuracy|numbers)\b|\bfull (results?|table|numbers)\b"
        r"|\b(ablation|results?) tables?\b|\bfigure\s*\d+\b|\bappendix\b", re.I)),
    ("code details", re.compile(
        r"\bpseudo-?\s?code\b|\bsource code\b|\bcode (snippet|example|listing|details|structure)\b"
        r"|\b(which|what) (library|libraries|framework|frameworks|programming language)\b"
        r"|\bhow (is|was|are|were) (it|they|\w+) implemented\b|\bimplemented in (pytorch|jax|tensorflow|which|what)\b"
        r"|\b(function|class|api) (names?|signatures?)\b|\bgithub (repo|repository)? ?(structure|files?)\b", re.I)),
]

_LIST = re.compile(r"^\s*(?:please\s+)?(?:which|what|list|find|show(?:\s+me)?|are there(?:\s+any)?|is there(?:\s+any)?|all)\s+"
                   r"(?:of\s+)?(?:all\s+|the\s+|any\s+|other\s+)?(?:papers|works|studies|approaches|methods|articles|abstracts)\b",
                   re.I)


def beyond_abstracts(question: str) -> str | None:
    """What the question asks for that abstracts rarely state ("exact hyper-parameters",
    "exact training details", "proofs", "table values", "code details"), or None.

    List questions ("Which papers …") get None: they ask which papers, not a paper's details.
    """
    if not question or _LIST.search(question):
        return None
    for kind, pattern in _KINDS:
        if pattern.search(question):
            return kind
    return None


def caveat_text(kind: str, cited: list[tuple[int, str]]) -> str:
    """The caveat for a question asking for ``kind``: limited to abstracts, pointing to ``cited``
    (``[(n, label)]``, the answer's numbered sources; may be empty)."""
    head = f"Abstracts rarely give {kind}: this answer is limited to what the abstracts say."
    if not cited:
        return f"{head} The full papers, not their abstracts, would give them."
    papers = "; ".join(f"[{n}] {label}" for n, label in cited)
    which = "the cited paper" if len(cited) == 1 else "the cited papers"
    return f"{head} For them, see the full text of {which}: {papers}."
