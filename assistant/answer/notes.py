"""What an answer says about its own grounding, decided after the judge: the verdict the name check allows
(assistant.relevance.names) and the notes that say why an answer is hedged or empty. Plain functions over a
:class:`Prepared`; every face shows the same words."""

from __future__ import annotations

from assistant.answer.prepared import Prepared
from assistant.question import FOREIGN_NOTE
from assistant.relevance import NameCheck
from assistant.retrieval import Filters, filtered_note
from assistant.types import Verdict

NAMED_NOT_GIVEN = "The question names {label}, but its abstract does not appear to give this."  # found, no answer
NO_PAPER_ABOUT = "No indexed paper is about “{topic}”."  # a list question whose best paper the judge rejects
NO_SUCH_VARIANT = "No indexed paper names {name}; the closest is {label}."  # "ZebraNet Pro" asked, ZebraNet found


def grounded_verdict(verdict: Verdict, names: NameCheck, is_list: bool) -> Verdict:
    """The judge's ``verdict`` as the question's names allow it: ``none`` when the question is about a name no
    indexed abstract holds ("What accuracy does FlashPrune reach?"), at most ``weak`` when a name is absent
    or not in the top paper ("… OmniMoE … on ImageNet?": OmniMoE's abstract never says ImageNet). A list
    question keeps its verdict: its papers are judged one by one."""
    if names.refuses:
        return Verdict.none
    if names.flags and not is_list and verdict == Verdict.answered:
        return Verdict.weak
    return verdict


def annotate(prep: Prepared, names: NameCheck, variant: str, named_top: bool, foreign: bool,
             filters: Filters | None) -> None:
    """Set ``prep``'s headline and notes: the absent name or absent topic first, then at most one of the
    missing variant ("ZebraNet Pro"), the names the top paper lacks, or a named paper that does not give the
    detail (``named_top``); a question that does not read as English (``foreign``, any verdict); the active
    filters of a refusal."""
    a, papers, verdict = prep.analysis, prep.papers, prep.verdict
    is_list = a is not None and a.is_list
    label = (papers[0].paper.label or papers[0].paper.display()) if papers else ""
    about = NO_PAPER_ABOUT.replace("No indexed", "No other indexed") if prep.excluded else NO_PAPER_ABOUT
    prep.headline = names.headline() or (about.format(topic=a.topic) if is_list and verdict == Verdict.none and papers else "")
    if variant:
        prep.add_note(NO_SUCH_VARIANT.format(name=variant, label=label))
    elif names.flags and not names.refuses and not is_list and papers:
        prep.add_note(names.note(label))
    elif named_top and verdict != Verdict.answered and not is_list:
        # "What image resolution does CacheEdit evaluate at?": the paper is found, the detail is not in it.
        prep.add_note(NAMED_NOT_GIVEN.format(label=label))
    if foreign:
        prep.add_note(FOREIGN_NOTE)
    if verdict == Verdict.none and filters is not None and filters.active():
        # The paper that answers may be one the filters leave out: say so, or "nothing found" misleads.
        prep.add_note(filtered_note(filters))
