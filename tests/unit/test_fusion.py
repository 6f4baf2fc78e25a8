"""Fusion and filters (moved from tests/test_retrieval.py: they need no model or index)."""

from assistant.retrieval.hybrid import coverage_fusion, names_first, reciprocal_rank_fusion


def test_rrf_orders_by_summed_reciprocal_ranks():
    ids, scores = reciprocal_rank_fusion([["a", "b", "c"], ["c", "a"]], k=60)
    assert ids == ["a", "c", "b"]
    assert abs(scores[0] - (1 / 61 + 1 / 62)) < 1e-12


def test_coverage_fusion_reorders_only_by_a_real_coverage_gap():
    ids, scores = coverage_fusion(["a", "b", "c"], [1 / 61, 1 / 62, 1 / 63], [0.2, 0.9, 0.2], 0.005)
    assert ids == ["b", "a", "c"] and abs(scores[0] - (1 / 62 + 0.0045)) < 1e-9
    ids, _ = coverage_fusion(["a", "b"], [1 / 61, 1 / 62], [0.5, 0.55], 0.005)  # 0.05 apart: worth < 1 rank
    assert ids == ["a", "b"]
    assert coverage_fusion(["a", "b"], [1 / 61, 1 / 62], [0.0, 1.0], 0.0)[0] == ["a", "b"]


def test_names_first_moves_papers_holding_a_named_thing_ahead_in_order():
    ids, scores = names_first(["a", "b", "c", "d"], [4.0, 3.0, 2.0, 1.0],
                              ["no name", "uses U2A", "plain", "CABS and U2A"], ["CABS", "U2A"])
    assert ids == ["b", "d", "a", "c"] and scores == [3.0, 1.0, 4.0, 2.0]
    assert names_first(["a", "b"], [2.0, 1.0], ["x", "U2A"], []) == (["a", "b"], [2.0, 1.0])
    assert names_first(["a", "b"], [2.0, 1.0], ["x", "U2Ab"], ["U2A"])[0] == ["a", "b"]  # whole tokens only


def test_filter_values_resolve_to_the_index_spelling_or_fail_listing_them():
    import pytest

    from assistant.retrieval.hybrid import FilterError, Filters, resolve_filters

    have = {"venue": {"ICML", "NeurIPS"}, "year": {2026}, "source": {"000_a.txt", "b.jsonl"}}
    got = resolve_filters(Filters(venue="icml", year=2026, source="000_a"), have.__getitem__)
    assert (got.venue, got.year, got.source) == ("ICML", 2026, "000_a.txt")
    with pytest.raises(FilterError, match=r"no indexed paper has year 1999; the index has: 2026"):
        resolve_filters(Filters(year=1999), have.__getitem__)
    with pytest.raises(FilterError, match=r"venue 'iclr'; the index has: ICML, NeurIPS"):
        resolve_filters(Filters(venue="iclr"), have.__getitem__)


def test_venue_spellings_all_match_and_an_ambiguous_stem_is_an_error():
    import pytest

    from assistant.retrieval.hybrid import FilterError, Filters, resolve_filters
    from vectorstore.papers import Paper

    have = {"venue": {"NeurIPS", "neurips", "ICLR"}, "source": {"x.txt", "x.jsonl", "y.txt"}}
    got = resolve_filters(Filters(venue="NEURIPS"), have.__getitem__)
    assert got.venue == ["NeurIPS", "neurips"] and got.where() == {"venue": {"$in": ["NeurIPS", "neurips"]}}
    assert got.admits(Paper(id="a", text="t", venue="neurips")) and not got.admits(Paper(id="b", text="t", venue="ICLR"))
    with pytest.raises(FilterError, match=r"source 'x' is ambiguous: x.jsonl, x.txt"):
        resolve_filters(Filters(source="x"), have.__getitem__)
    assert resolve_filters(Filters(source="y"), have.__getitem__).source == "y.txt"


def test_a_paper_naming_the_name_alone_beats_one_naming_it_inside_a_longer_name():
    """ "What is SyPE?" was answered from a SyPE-Lite paper when both were indexed."""
    from assistant.question.answer_types import names_in
    from assistant.retrieval.hybrid import names_first

    texts = ["We introduce SyPE-Lite, a lighter variant.", "Unrelated graph paper.",
             "We propose Symplectic Positional Embeddings (SyPE)."]
    ids, scores = names_first(["lite", "graph", "sype"], [0.3, 0.2, 0.1], texts, ["SyPE"])
    assert ids == ["sype", "lite", "graph"] and scores == [0.1, 0.3, 0.2]
    assert names_first(["lite", "sype"], [0.3, 0.1], texts[::2], ["SyPE-Lite"])[0] == ["lite", "sype"]
    assert names_in(["SyPE"], "SyPE-Lite") and not names_in(["SyPE"], "SyPE-Lite", alone=True)
    assert not names_in(["Lite"], "SyPE-Lite", alone=True) and names_in(["SyPE"], "(SyPE).", alone=True)


def test_a_paper_holding_the_whole_several_word_name_beats_one_holding_its_first_word():
    """ "What is FlashMoE Lite?" was answered from the FlashMoE paper when both were indexed: only
    FlashMoE was taken for a name, and both papers hold it on its own."""
    from assistant.question.analysis import analyze, whole_names

    q = analyze("What is FlashMoE Lite?")
    assert q.names == ("FlashMoE",) and q.whole_names == ("FlashMoE Lite",)
    assert whole_names("Compare FlashMoE and SyPE") == [] and analyze("Is MoE Lite fast?").whole_names == ()
    texts = ["We propose FlashMoE, a fast mixture-of-experts kernel.",
             "We propose FlashMoE Lite, a smaller variant of FlashMoE for edge devices.",
             "Unrelated graph paper."]
    ids, _ = names_first(["full", "lite", "graph"], [0.3, 0.2, 0.1], texts, list(q.names), list(q.whole_names))
    assert ids == ["lite", "full", "graph"]
    hyphen = ["We propose FlashMoE, a kernel.", "FlashMoE-Lite trims it."]
    assert names_first(["full", "lite"], [0.3, 0.2], hyphen, ["FlashMoE"], ["FlashMoE Lite"])[0] == ["lite", "full"]
    # the asked name alone still goes first when the question names only FlashMoE
    q = analyze("What is FlashMoE?")
    assert q.whole_names == () and names_first(["full", "lite"], [0.3, 0.2], texts[:2], list(q.names))[0] == ["full", "lite"]
    # a longer name ("FlashMoE Lite Plus") is not the asked one
    assert names_first(["plus", "lite"], [0.3, 0.2], ["FlashMoE Lite-Plus is new.", "FlashMoE Lite is new."],
                       ["FlashMoE"], ["FlashMoE Lite"])[0] == ["lite", "plus"]
    # "What is FlashMoE?": both hold FlashMoE on its own; the paper labelled FlashMoE, not FlashMoE Lite
    ids = ["lite", "full"]
    assert names_first(ids, [0.3, 0.2], texts[1::-1], ["FlashMoE"], [], ["FlashMoE Lite", "FlashMoE"])[0] == ["full", "lite"]
    assert names_first(ids, [0.3, 0.2], texts[1::-1], ["FlashMoE"], ["FlashMoE Lite"],
                       ["FlashMoE Lite", "FlashMoE"])[0] == ["lite", "full"]
