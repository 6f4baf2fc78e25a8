"""Grounding of the names a question asks about: is each one in any indexed abstract, and in the paper answered?

A method, model, dataset or benchmark name (FlashPrune, QuasarNet, ImageNet) is a claim the papers can
check outright: either some indexed title or abstract holds it or none does. No model can say that better
than the index's own vocabulary, so this is a lookup, not a learned score:

- *absent*: the name is in no indexed title or abstract. When the question's first name (what it is about)
  is absent and the question says little else (at most ``calibration.relevance.name_subject_terms`` content
  terms of its own), nothing indexed answers it: the verdict is ``none`` and the answer opens with
  :data:`ABSENT_TEXT` ("No indexed abstract mentions FlashPrune."). A longer question may name it in passing
  ("… with BLEU-style rewards"): it is flagged instead.
- *unmentioned*: the name is indexed somewhere (or absent) but not in the paper the answer quotes. The
  answer is at most ``weak`` and says :data:`UNMENTIONED_TEXT` ("OmniMoE's abstract does not mention
  ImageNet."), still quoting what the abstract does say.

The names are the question's (assistant.question.analysis.question_names: acronyms, CamelCase and
digit-bearing words, a capitalized word hyphenated to one, "Romberg-ZOGE", and a word an indexed title leads
with, "Falcon: …", :func:`title_leads`), less the field's generic ones (``COMMON_NAMES``, :data:`VENUES`,
:data:`GENERIC`) and several-word runs; a hyphenated name loses its lower-case parts ("GRPO-style" → GRPO).
Spelling variants count as the same name: case, hyphens ("Flash-Prune"), a plural ("PINNs"), the stemmer's
other endings; the index's terms are compared the same way (:func:`name_terms`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from assistant.question import COMMON_NAMES, FRAMING_TERMS, names_in
from vectorstore.store import NAME, tokenize

VENUES = frozenset({"NeurIPS", "NIPS", "ICLR", "ICML", "CVPR", "ICCV", "ECCV", "ACL", "EMNLP", "NAACL", "AAAI", "IJCAI",
                    "KDD", "AISTATS", "UAI", "COLT", "TMLR", "JMLR", "SIGIR", "WWW", "arXiv", "OpenReview"})
"""Where a paper appeared, not what it is about: "the ICLR 2021 submission that …" names no method."""
GENERIC = frozenset({"SOTA", "PDE", "PDEs", "ODE", "ODEs", "SDE", "SDEs", "DAG", "DAGs", "LM", "LMs", "MLP", "MLPs",
                     "RNN", "RNNs", "DNN", "DNNs", "L1", "L2", "KL", "NeuroAI", "GNN", "GNNs", "SGD", "MDP", "MDPs",
                     "IID", "i.i.d", "OOD", "SSL", "NN", "NNs", "LLMs", "VAE", "VAEs", "ViT", "ViTs", "PCA", "SVM", "SVMs"})
"""Field words written like names (the question package's COMMON_NAMES adds LLM, MoE, GPU, …): the training
questions over corpus2k ask with them about papers whose abstracts spell them out or leave them implied."""

ABSENT_TEXT = "No indexed abstract mentions {names}."
UNMENTIONED_TEXT = "{label}'s abstract does not mention {names}."


@dataclass(frozen=True)
class NameCheck:
    """The outcome of :func:`check_names` for one question and its top paper.

    ``absent``: the question's names in no indexed title or abstract, in the question's order;
    ``subject_absent``: the first name (what the question is about) is one of them;
    ``unmentioned``: the names the top paper's title and abstract do not hold (absent ones included)."""

    names: tuple[str, ...] = ()
    absent: tuple[str, ...] = ()
    subject_absent: bool = False
    unmentioned: tuple[str, ...] = ()
    refuses: bool = False
    """The subject is absent and the question says little else (at most ``subject_terms`` content terms of
    its own): it is about the missing name, so nothing indexed answers it."""

    @property
    def flags(self) -> bool:
        """A name is absent or not in the top paper: the answer is at most a closest match."""
        return bool(self.absent or self.unmentioned)

    def headline(self) -> str:
        """The answer's first line when the check refuses ("No indexed abstract mentions FlashPrune."), else ""."""
        return ABSENT_TEXT.format(names=joined(self.absent)) if self.refuses else ""

    def note(self, label: str) -> str:
        """What the answer's note says of the names the top paper ``label`` lacks: "OmniMoE's abstract does not
        mention ImageNet." (and, when no indexed abstract does, "… (nor does any other indexed abstract)");
        "" when it holds every name."""
        if not self.unmentioned:
            return ""
        text = UNMENTIONED_TEXT.format(label=label, names=joined(self.unmentioned))
        if set(self.unmentioned) <= set(self.absent):
            text = text[:-1] + " (nor does any other indexed abstract)."
        return text


def joined(names) -> str:
    """"A", "A or B", "A, B or C"."""
    names = list(names)
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]


def checked_names(names, common=COMMON_NAMES | VENUES | GENERIC) -> tuple[str, ...]:
    """The names of a question (``Question.names``) this check reads: whole name-like tokens (:data:`NAME`),
    not several-word runs of capitalised words, not ``common`` ones (default: the question package's
    ``COMMON_NAMES``, :data:`VENUES` and :data:`GENERIC`), each once; a hyphenated name loses its lower-case parts ("GRPO-style" → GRPO)."""
    out: list[str] = []
    for n in names:
        # "GRPO-style", "LLM-as-judge": a name and plain words joined by hyphens names only the name.
        n = "-".join(part for part in n.split("-") if not part.islower())
        if " " in n or n in common or not NAME.fullmatch(n) or len(n) < 2 or n in out:
            continue
        out.append(n)
    return tuple(out)


def _squash(term: str) -> str:
    return term.replace("-", "").replace("_", "")


def name_terms(name: str) -> tuple[str, ...]:
    """The index terms (:func:`vectorstore.store.lexical.tokenize`, hyphens dropped) a name is looked up by:
    "Flash-Prune", "FlashPrune" and "flashprunes" give the same."""
    return tuple(_squash(t) for t in tokenize(name.replace("-", "")) if t)


def indexed(name: str, vocab: frozenset) -> bool:
    """True when every term of ``name`` (:func:`name_terms`) is a term of the index (``vocab``: its terms,
    hyphens dropped, as :func:`vocabulary` gives them); a name with no terms counts as indexed."""
    terms = name_terms(name)
    return all(t in vocab for t in terms)


_VOCABS: dict[int, tuple[object, frozenset]] = {}
_LEADS: dict[int, tuple[object, frozenset]] = {}
_LEAD = re.compile(r"^\s*([A-Z][\w+-]*(?: [A-Z][\w+-]*){0,2})\s*:")


def title_leads(index) -> frozenset[str]:
    """Lower-case names that indexed titles lead with ("falcon" for "Falcon: Fast Spectral Inference on
    Encrypted Data"; one to three capitalized words before a colon), made once per lexical index (an ingest
    makes a new one). A question naming one names that paper (assistant.question.analysis.question_names)."""
    lexical = index.lexical()
    hit = _LEADS.get(id(index))
    if hit is None or hit[0] is not lexical:
        leads = {m.group(1).lower() for t in index.store.titles().values() if (m := _LEAD.match(t))}
        hit = (lexical, frozenset(leads))
        _LEADS.clear()
        _LEADS[id(index)] = hit
    return hit[1]


def vocabulary(lexical) -> frozenset:
    """The terms of a lexical index (vectorstore.store.lexical.LexicalIndex) with hyphens dropped, made once per
    index object (an ingest builds a new one)."""
    key = id(lexical)
    hit = _VOCABS.get(key)
    if hit is None or hit[0] is not lexical:
        hit = (lexical, frozenset(_squash(t) for t in lexical.retriever.vocab_dict if t))
        _VOCABS.clear()  # one index at a time in practice; never keep old vocabularies alive
        _VOCABS[key] = hit
    return hit[1]


def check_names(names: tuple[str, ...], vocab: frozenset, top_text: str | None, own_terms: int = 0,
                subject_terms: int = 11) -> NameCheck:
    """:class:`NameCheck` of ``names`` (:func:`checked_names` of the question) against the index's
    ``vocab`` (:func:`vocabulary`) and the top paper's title and abstract ``top_text`` (None: no paper).
    ``own_terms``: the question's content terms outside its names and framing words; an absent subject
    refuses when they are at most ``subject_terms`` (``calibration.relevance.name_subject_terms``)."""
    if not names:
        return NameCheck()
    absent = tuple(n for n in names if not indexed(n, vocab))
    held = top_text is not None
    unmentioned = tuple(n for n in names if not held or not (names_in([n], top_text) or _spelled_in(n, top_text)))
    subject = bool(absent) and absent[0] == names[0]
    return NameCheck(names=names, absent=absent, subject_absent=subject, unmentioned=unmentioned,
                     refuses=subject and own_terms <= subject_terms)


def _spelled_in(name: str, text: str) -> bool:
    """``name`` in ``text`` with its hyphens optional ("Flash-Prune" ~ "FlashPrune"), any case, maybe plural."""
    core = r"-?".join(re.escape(c) for c in name.replace("-", ""))
    return re.search(rf"(?<![A-Za-z0-9_]){core}(?:s|es)?(?![A-Za-z0-9_])", text, re.I) is not None


def check_question(question, lexical, top_text: str | None, subject_terms: int = 11) -> NameCheck:
    """:func:`check_names` of an analysed question (assistant.question.Question) against a lexical index
    (vectorstore.store.lexical.LexicalIndex) and the top paper's ``top_text``; the question's own terms are its
    content terms outside its names and framing words."""
    own = [t for t in question.terms if t not in question.name_terms and t not in FRAMING_TERMS]
    return check_names(checked_names(question.names), vocabulary(lexical), top_text, len(own), subject_terms)
