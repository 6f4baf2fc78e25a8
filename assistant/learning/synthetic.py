"""Training questions made by program from a corpus: "What is X?" for the names its abstracts define.

The hand-written training lookups (``eval/train/train.jsonl``) ask details; none asks what a named
thing is ("What does CABS stand for?", "What is the main contribution of OmniMoE?"), so the evidence
ranker would learn no weight for its definition features. :func:`definition_questions` writes such
questions from the abstracts themselves: a name spelled out in a sentence ("multinomial logit
(MNL)") or introduced by one ("we propose OmniMoE, …") gives a question about the name, with that
sentence as its evidence. The abstract's first sentence is allowed: a reader asking what X is wants
the sentence that defines X wherever it stands. Deterministic: papers in id order, templates in turn.

Only for training (``paper-assistant train`` over the training corpus); never from the dev questions.
"""

from __future__ import annotations

import re
from collections import Counter

from assistant.question import COMMON_NAMES, analyze
from vectorstore.chunks import sentence_spans
from vectorstore.papers import Paper

# "the multinomial logit (MNL) model": up to eight words, then an acronym in parentheses.
_EXPANSION = re.compile(r"((?:[A-Za-z][\w-]*\s+){1,8})\(\s*([A-Z][A-Za-z0-9-]*[A-Z0-9][A-Za-z0-9-]*?)s?\s*\)")
# "we propose OmniMoE", "we introduce a method called GraphX": a name right after the verb (or its naming word).
_INTRODUCED = re.compile(r"\b[Ww]e (?:\w+ )?(?:propose|introduce|present|develop|design)\s+(?:(?:a|an|the)\s+[\w\s-]{0,40}?"
                         r"(?:called|named|termed|dubbed)\s+)?([A-Z][A-Za-z]*[A-Z0-9][A-Za-z0-9-]*)\b")
TEMPLATES = ("What is {name}?", "What does {name} stand for?", "What is the main contribution of {name}?",
             "How does {name} work?", "Explain {name}.")
"""Question frames, used in turn ("stand for" only for a spelled-out acronym)."""


def _spells_out(words: str, acronym: str) -> bool:
    """True when the acronym's first letter opens one of the last words before it ("multinomial logit (MNL)")."""
    initials = [w[0].lower() for w in re.split(r"[\s-]+", words.strip()) if w]
    letters = [c for c in acronym if c.isupper()]
    return bool(letters) and letters[0].lower() in initials[-(len(letters) + 2):]


def _papers_holding(papers: list[Paper]) -> Counter[str]:
    """Lower-cased word → how many of ``papers`` hold it (a name held by few is a paper's own)."""
    held: Counter[str] = Counter()
    for paper in papers:
        held.update({w.lower() for w in re.findall(r"[A-Za-z][\w-]*", paper.text)})
    return held


def definition_questions(papers: list[Paper], limit: int = 150, max_papers: int = 2) -> list[dict]:
    """Up to ``limit`` questions in the question-file format (``kind`` "synthetic", ``gold`` the paper,
    ``evidence`` the sentence that spells out or introduces the name), from ``papers`` in id order.
    A name is used once, only if at most ``max_papers`` abstracts hold it (a paper's own name, as a
    user asks about, not "SGD"), and only if the question analysis reads it as a definition question."""
    held = _papers_holding(papers)
    out, used = [], set()
    for paper in sorted(papers, key=lambda p: p.id):
        if len(out) >= limit:
            break
        text = paper.text
        found = None
        for start, end in sentence_spans(text):
            sentence = text[start:end]
            m = _EXPANSION.search(sentence)
            if m and _spells_out(m.group(1), m.group(2)):
                found = (m.group(2), sentence, True)
                break
            m = _INTRODUCED.search(sentence)
            if m and found is None:
                found = (m.group(1), sentence, False)
        if found is None:
            continue
        name, sentence, spelled = found
        if name in COMMON_NAMES or name.lower() in used or len(name) < 2 or held[name.lower()] > max_papers:
            continue
        templates = TEMPLATES if spelled else tuple(t for t in TEMPLATES if "stand for" not in t)
        question = templates[len(out) % len(templates)].format(name=name)
        if not analyze(question).definition:
            continue
        used.add(name.lower())
        out.append({"qid": f"synthetic-definition-{len(out) + 1}", "kind": "synthetic", "question": question,
                    "gold": [paper.id], "evidence": sentence})
    return out


# What a figure in a sentence measures, and the word a question asks it by ("10.6x speed improvement" → "speedup").
_MEASURES = ((re.compile(r"speed-?ups?|faster|accelerat\w*|speed improvement", re.I), "speedup"),
             (re.compile(r"\baccuracy\b", re.I), "accuracy"), (re.compile(r"\berrors?\b", re.I), "error"),
             (re.compile(r"\b(?:BLEU|FID|F1|AUC|AUROC|mAP|perplexity)\b"), None),
             (re.compile(r"\bmemory\b", re.I), "memory saving"), (re.compile(r"\breduc\w*", re.I), "reduction"),
             (re.compile(r"\b(?:improv\w*|gains?)\b", re.I), "improvement"))
QUANTITY_TEMPLATES = ("What {measure} does {name} achieve?", "How much {measure} does {name} report?",
                      "{name} {measure}", "what {measure} did {name} get?")
"""Question frames for :func:`quantity_questions`, used in turn (plain, plain, search-box, casual)."""


def _measure(sentence: str) -> str | None:
    """The word a question would ask ``sentence``'s figure by, or None when it states no share, ratio or
    decimal figure beside a measure word ("O(1/t)" or "(i)" state none)."""
    from assistant.evidence import SHARE

    if not (SHARE.search(sentence) or re.search(r"(?<![\w.^{/$])\d+\.\d+(?![\w.}])", sentence)):
        return None
    for pattern, word in _MEASURES:
        m = pattern.search(sentence)
        if m:
            return word or m.group(0)
    return None


def quantity_questions(papers: list[Paper], limit: int = 100, max_papers: int = 2) -> list[dict]:
    """Up to ``limit`` quantity questions ("What speedup does X achieve?") in the question-file format
    (``kind`` "synthetic"), from ``papers`` in id order: X a name the abstract introduces or spells out
    (as :func:`definition_questions` finds them), the evidence the one sentence after the first that
    states a figure beside a measure word (none when two sentences do: the question would not say which)."""
    held = _papers_holding(papers)
    out, used = [], set()
    for paper in sorted(papers, key=lambda p: p.id):
        if len(out) >= limit:
            break
        sentences = [paper.text[s:e] for s, e in sentence_spans(paper.text)]
        name = next((m.group(2) if m.re is _EXPANSION else m.group(1) for s in sentences
                     for m in (_EXPANSION.search(s), _INTRODUCED.search(s)) if m), None)
        if (not name or name in COMMON_NAMES or name.lower() in used or len(name) < 3 or held[name.lower()] > max_papers
                or sum(name in s for s in sentences) < 2):  # a name the abstract goes on to use, not a passing acronym
            continue
        measured = [(s, _measure(s)) for s in sentences[1:]]
        measured = [(s, m) for s, m in measured if m]
        if not measured or sum(m == measured[0][1] for _, m in measured) > 1:
            continue
        sentence, measure = measured[0]
        question = QUANTITY_TEMPLATES[len(out) % len(QUANTITY_TEMPLATES)].format(name=name, measure=measure)
        used.add(name.lower())
        out.append({"qid": f"synthetic-quantity-{len(out) + 1}", "kind": "synthetic", "question": question,
                    "gold": [paper.id], "evidence": sentence})
    return out


def synthetic_questions(papers: list[Paper], questions: list[dict], definitions: int = 150,
                        quantities: int = 100) -> list[dict]:
    """:func:`definition_questions` and :func:`quantity_questions` of ``papers`` (up to ``definitions`` and
    ``quantities``); the quantity ones only on papers that no question of ``questions`` (question-file format) is
    answered by: they would repeat its lookups and, in cross-validation, give them away."""
    named = {g for q in questions for g in q.get("gold") or []}
    made = definition_questions(papers, definitions) if definitions > 0 else []
    return made + (quantity_questions([p for p in papers if p.id not in named], quantities) if quantities > 0 else [])
