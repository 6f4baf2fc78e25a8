"""The relevance judge: one verdict from one evidence record (no model, no index)."""

import dataclasses

from assistant.relevance.judge import AbstentionRule, RelevanceEvidence, Verdict

RULE = AbstentionRule()
ND, NS, WS, COVERED = RULE.none_dense, RULE.none_sentence, RULE.weak_sum, RULE.covered
FAR = RelevanceEvidence(dense=0.1, sentence=0.1, bm25=0.0, named_hit=False)
CLOSE = RelevanceEvidence(dense=0.6, sentence=0.6, bm25=3.0, named_hit=False)


def _ev(dense: float, sentence: float, **kw) -> RelevanceEvidence:
    return RelevanceEvidence(dense=dense, sentence=sentence, bm25=1.0, named_hit=False, **kw)


def test_thresholds_give_the_three_verdicts():
    """'nothing found' only when both cosines are below their thresholds (a threshold itself is not below);
    'closest match' when their sum is below weak_sum; the rule names which decided."""
    assert (ND, NS, WS) == (0.39, 0.40, 0.98) and ND + NS < WS  # calibration.abstention, fitted on the training questions
    assert RULE.decide(None) == Verdict.none
    assert RULE.explain(FAR) == (Verdict.none, "none thresholds")
    assert RULE.decide(_ev(ND - 0.001, NS - 0.001)) == Verdict.none
    assert RULE.explain(_ev(ND, NS - 0.001)) == (Verdict.weak, "weak sum")  # one cosine at its threshold: not none
    assert RULE.explain(_ev(ND - 0.001, NS)) == (Verdict.weak, "weak sum")
    assert RULE.explain(_ev(0.05, 0.9)) == (Verdict.weak, "weak sum")  # one far cosine alone refuses nothing
    assert RULE.decide(_ev(0.9, 0.05)) == Verdict.weak
    assert RULE.decide(_ev(WS / 2 - 0.001, WS / 2 - 0.001)) == Verdict.weak
    assert RULE.explain(_ev(WS / 2, WS / 2)) == (Verdict.answered, "above thresholds")
    assert RULE.decide(CLOSE) == Verdict.answered


def test_a_covered_short_question_is_lifted_to_a_closest_match_only():
    assert RULE.explain(dataclasses.replace(FAR, coverage=COVERED)) == (Verdict.weak, "coverage guard")
    assert RULE.decide(dataclasses.replace(FAR, coverage=1.0)) == Verdict.weak  # never to answered
    assert RULE.decide(dataclasses.replace(FAR, coverage=COVERED - 0.01)) == Verdict.none


def test_a_named_hit_answers_unless_a_follow_up_paper_lacks_the_users_words():
    named = dataclasses.replace(FAR, named_hit=True)
    assert RULE.decide(named) == Verdict.answered
    assert RULE.decide(dataclasses.replace(named, own_coverage=0.6)) == Verdict.answered
    assert RULE.decide(dataclasses.replace(named, own_coverage=0.2)) == Verdict.none
    assert not RULE.named(dataclasses.replace(named, own_coverage=0.2))


def test_a_paper_pointed_at_is_never_nothing_found_and_a_bare_reference_answers():
    pointed = dataclasses.replace(FAR, pointed_at=True)
    assert RULE.decide(pointed) == Verdict.weak
    assert RULE.decide(dataclasses.replace(pointed, bare_reference=True)) == Verdict.answered
    assert RULE.decide(dataclasses.replace(CLOSE, pointed_at=True)) == Verdict.answered


def test_a_list_candidate_below_the_bar_is_out_unless_it_holds_the_name():
    below = dataclasses.replace(CLOSE, list_share=0.5, list_bar=0.62)
    assert RULE.decide(below) == Verdict.none
    assert RULE.decide(dataclasses.replace(below, list_share=0.7)) == Verdict.answered
    assert RULE.decide(dataclasses.replace(below, named_hit=True)) == Verdict.answered
    # Above the bar, a paper that is 'nothing found' on its own evidence is still out.
    assert RULE.decide(dataclasses.replace(FAR, list_share=0.9, list_bar=0.62)) == Verdict.none
