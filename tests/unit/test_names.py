"""The name check (assistant.relevance.names): which names of a question are checked, how spelling variants
count, and what the check says. Pure: a vocabulary and texts, no model, no index."""

from assistant.question import analyze
from assistant.relevance.names import check_names, checked_names, indexed, joined, name_terms
from vectorstore.store import tokenize


def _vocab(*texts: str) -> frozenset:
    return frozenset(t.replace("-", "").replace("_", "") for text in texts for t in tokenize(text))


OMNIMOE = "OmniMoE pushes granularity to the extreme with vector-level experts; 50.9% zero-shot accuracy on seven benchmarks."
OTHER = "We evaluate a pruned ResNet-50 on CIFAR-10 and report Flash-Attention kernels."
VOCAB = _vocab(OMNIMOE, OTHER)


def test_generic_venue_and_hyphen_suffixed_names_are_not_checked():
    assert checked_names(("LLM-driven", "GRPO-style", "NeurIPS", "ICLR", "SOTA", "LMs", "World Shaper", "FlashPrune")) == (
        "GRPO", "FlashPrune")  # LLM is a field word, World Shaper several words, GRPO-style names GRPO
    assert checked_names(("ImageNet", "ImageNet")) == ("ImageNet",)


def test_spelling_variants_count_as_the_same_name():
    assert name_terms("Flash-Prune") == name_terms("FlashPrune") == name_terms("flashprune")
    assert indexed("FlashAttention", VOCAB) and indexed("OMNIMOE", VOCAB) and indexed("ResNet-50", VOCAB)
    assert not indexed("FlashPrune", VOCAB) and not indexed("ImageNet", VOCAB)


def test_an_absent_subject_refuses_a_short_question_and_flags_a_long_one():
    q = analyze("What accuracy does FlashPrune reach on ImageNet?")
    c = check_names(checked_names(q.names), VOCAB, OMNIMOE, own_terms=2)
    assert c.refuses and c.absent == ("FlashPrune", "ImageNet")
    assert c.headline() == "No indexed abstract mentions FlashPrune or ImageNet."
    at_limit = check_names(("BLEU",), VOCAB, OMNIMOE, own_terms=11, subject_terms=11)  # "at most 11": refused
    assert at_limit.subject_absent and at_limit.refuses
    long = check_names(("BLEU",), VOCAB, OMNIMOE, own_terms=12, subject_terms=11)
    assert long.subject_absent and not long.refuses and long.flags and long.headline() == ""
    assert long.note("OmniMoE") == "OmniMoE's abstract does not mention BLEU (nor does any other indexed abstract)."


def test_a_name_the_top_paper_lacks_flags_and_says_so():
    c = check_names(("OmniMoE", "CIFAR-10"), VOCAB, OMNIMOE, own_terms=3)
    assert not c.refuses and c.flags and c.absent == () and c.unmentioned == ("CIFAR-10",)
    assert c.note("OmniMoE") == "OmniMoE's abstract does not mention CIFAR-10."
    held = check_names(("OmniMoE",), VOCAB, OMNIMOE, own_terms=3)
    assert not held.flags and held.note("OmniMoE") == "" and held.headline() == ""
    assert check_names((), VOCAB, OMNIMOE) == check_names((), VOCAB, None)


def test_joined_lists_names_as_prose():
    assert [joined(["A"]), joined(["A", "B"]), joined(["A", "B", "C"])] == ["A", "A or B", "A, B or C"]


def test_a_title_lead_name_and_a_hyphenated_name_are_names():
    assert analyze("What is Falcon?", title_names=frozenset({"falcon"})).names == ("Falcon",)
    assert analyze("What is Falcon?").names == ()  # a capitalized word alone is no name
    assert analyze("Which model did Romberg-ZOGE use?").names == ("Romberg-ZOGE",)
    assert analyze("Does it work on X-ray images?").names == ()
