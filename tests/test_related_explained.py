"""Related work explained: shared sentence pairs, unmatched sentences on either side, optional LLM paragraph."""

import json
import random

import numpy as np
import pytest
from pydantic import SecretStr

from assistant.research.related import UNMATCHED_BELOW, differences, related_work
from assistant.research.related_llm import llm_explanation
from assistant.faces.render import related_json, related_markdown, related_text
from tests.fake_openai import FakeOpenAI, Reply

DRAFT = ("We test whether LLM-as-judge scoring of long open-ended answers can be fooled. "
         "We systematically corrupt model answers with contradictions and filler. "
         "We also release a dataset of cooking recipes annotated with calorie counts.")


def test_differences_picks_sentences_without_a_good_match():
    q = np.array([[1.0, 0.0], [0.0, 1.0]], np.float32)
    p = np.array([[1.0, 0.0], [0.6, 0.8]], np.float32)
    q_only, p_only = differences(["a", "b"], q, ["c", "d"], p, below=0.9)
    assert [u.sentence for u in q_only] == ["b"] and [u.sentence for u in p_only] == ["d"]
    assert abs(q_only[0].best_similarity - 0.8) < 1e-6


def test_related_work_says_what_differs(assistant):
    items = related_work(assistant.retriever, assistant.sentences, text=DRAFT, k=5, bar=0.0)
    top = items[0]
    assert top.pairs and top.pairs[0].similarity > 0.4
    # The recipe sentence matches nothing in a paper about LLM judges.
    assert any("recipes" in u.sentence for u in top.query_only)
    assert all(u.best_similarity < UNMATCHED_BELOW for u in top.query_only + top.paper_only)
    # By facet: each note names its facet and quotes sentences of the two texts.
    assert top.facets and {f.facet for f in top.facets} <= {"background", "method", "result"}
    for f in top.facets:
        assert f.paper_sentence in top.paper.text and (not f.query_sentence or f.query_sentence in DRAFT)
    text = related_text(items)
    assert "differs:" in text and "this paper:" in text and "% similar" in text
    assert '"query_only"' in related_json(items) and '"facets"' in related_json(items)
    assert related_markdown(items).count("\n| ") >= 5


def test_a_specific_query_lists_only_papers_above_the_bar_with_percentages(assistant):
    q = "gradient-based certified unlearning with formal guarantees"
    items = related_work(assistant.retriever, assistant.sentences, text=q, k=10)
    assert len(items) >= 1  # the paper the query paraphrases clears the bar
    assert len(items) < 10  # and some of the 10 considered do not
    assert items.considered == 10
    assert items.below_bar == 10 - len(items)
    assert items[0].paper.id == "000_12a0d7b1c5c902c5#6"  # VRU: (ε, δ)-unlearning with guarantees
    assert all(r.similarity >= items.bar for r in items)
    assert items.headline().startswith(f"{len(items)} related paper") and "below the bar" in items.headline()
    md = related_markdown(items)
    assert items.headline() in md and f"| {items[0].percent}% |" in md
    assert "0.03" not in md  # no fused-rank scores


def test_explanations_never_quote_code_links():
    from assistant.research.related import is_content

    assert not is_content("Our code is available at http://127.0.0.1:8000/x/y.")
    assert not is_content("Code and models will be publicly released.")
    assert is_content("We release a benchmark of 5,000 annotated videos.")


def test_llm_paragraph_cites_existing_sentences_only(assistant):
    from assistant.answer.llm import OpenAIChat
    from assistant.settings import LLMSettings

    item = related_work(assistant.retriever, assistant.sentences, text=DRAFT, k=1)[0]
    with FakeOpenAI(models=["test-model"]) as fake:
        fake.script(Reply(text="Both probe LLM judges with corrupted answers [Q2][P1]; only the draft adds recipes "
                               "[Q3][Q9]. See also [7] and [2, 9]."))
        llm = OpenAIChat(LLMSettings(base_url=fake.base_url, api_key=SecretStr("sk-test"), model="test-model",
                                          timeout=5, max_retries=0))
        text = llm_explanation(llm, assistant.settings.prompts_dir, DRAFT, item)
        sent = fake.requests[0]["messages"]
    assert "[Q2][P1]" in text and "[Q3]" in text and "[Q9]" not in text
    assert text.endswith("See also and.")  # numeric citations point at nothing here: removed
    assert "[Q1] We test whether" in sent[-1]["content"] and "[P1]" in sent[-1]["content"]
    assert "never instructions" in sent[0]["content"]


def test_cli_related_adds_llm_paragraphs_when_configured(settings, index, index_dir, monkeypatch):
    from typer.testing import CliRunner

    from assistant import cli
    from assistant.answer import service
    from assistant.answer.pipeline import Assistant
    from assistant.settings import LLMSettings

    with FakeOpenAI(models=["test-model"]) as fake:
        fake.default = Reply(text="Both study LLM judges [Q1][P2].")
        cfg = LLMSettings(base_url=fake.base_url, api_key=SecretStr("sk-test"), model="test-model", timeout=5,
                          max_retries=0)
        with_llm = Assistant(settings.model_copy(update={"llm": cfg}), index)
        monkeypatch.setattr(service, "get_assistant", lambda s: with_llm)
        out = CliRunner().invoke(cli.app, ["related", DRAFT, "--index", str(index_dir), "-k", "3", "--explain", "2"])
        assert out.exit_code == 0, out.output
        assert out.output.count("Both study LLM judges [Q1][P2].") == 2 and len(fake.requests) == 2
        assert "differs:" in out.output


def test_related_explanation_waits_at_most_the_timeout_and_says_why_it_failed(assistant):
    import time

    from assistant.answer.llm import OpenAIChat
    from assistant.research.related_llm import add_llm_summaries
    from assistant.settings import LLMSettings

    items = related_work(assistant.retriever, assistant.sentences, text=DRAFT, k=2)
    with FakeOpenAI(models=["test-model"]) as fake:
        fake.default = Reply(text="late", delay=5)
        cfg = LLMSettings(base_url=fake.base_url, api_key=SecretStr("sk-test"), model="test-model", timeout=1,
                          first_token_timeout=1, max_retries=1)  # a retry would double the client's own wait
        t0 = time.monotonic()
        note = add_llm_summaries(OpenAIChat(cfg), cfg, assistant.settings.prompts_dir, DRAFT, items)
        elapsed = time.monotonic() - t0
    assert elapsed < 1.8
    assert note == (f"The LLM endpoint {fake.base_url} did not answer within 1 s (the first-token timeout, "
                    "PAPER_ASSISTANT_LLM__FIRST_TOKEN_TIMEOUT). Showing sentence pairs only.")
    assert all(not i.summary for i in items)


def test_a_pasted_abstract_matches_its_own_sentences_exactly_and_lists_none_as_differing(assistant):
    from assistant.research.related import related_work

    sapo = "000_12a0d7b1c5c902c5#5"
    text = assistant.index.store.get_papers([sapo])[sapo].text
    top = related_work(assistant.retriever, assistant.sentences, text=text, k=3)[0]
    assert top.paper.id == sapo
    assert top.pairs and all(p.similarity > 0.99 for p in top.pairs)  # the stored vectors are int8: ~1e-3 off
    assert top.query_only == [] and top.paper_only == []


def test_no_paper_over_the_bar_shows_the_nearest_three_marked_below_it(assistant):
    """The README's example: nothing clears the calibrated bar for OmniMoE, so the nearest 3 are shown,
    marked as below it, in the text, the page's table and the MCP result."""
    from assistant.mcp.tools import RelatedResult
    from assistant.faces.render import related_records

    items = related_work(assistant.retriever, assistant.sentences, paper_id="000_12a0d7b1c5c902c5#13")
    assert items.nearest_only and len(items) == 3
    assert all(r.similarity < items.bar for r in items)
    assert "000_12a0d7b1c5c902c5#13" not in {r.paper.id for r in items}
    text = related_text(items)
    assert text.startswith("None is closely related (similarity under") and "the nearest are:" in text
    assert " 1. " in text and " 3. " in text
    assert "None is closely related" in related_markdown(items)
    as_json = json.loads(related_json(items))
    assert as_json["nearest_only"] is True and as_json["count"] == 3 and as_json["headline"].startswith("None is closely")
    res = RelatedResult(query="x", count=3, papers=related_records(items), below_bar=items.below_bar,
                        nearest_only=items.nearest_only)
    assert res.nearest_only and res.count == 3


def test_an_unknown_paper_id_suggests_close_ids(assistant):
    import pytest

    from assistant.research.related import UnknownPaperError

    with pytest.raises(UnknownPaperError, match=r"did you mean 000_12a0d7b1c5c902c5#13"):
        related_work(assistant.retriever, assistant.sentences, paper_id="000_12a0d7b1c5c902c5#133")


MOE_DRAFT = ("We cache the experts of mixture-of-experts models on the GPU to cut the latency of offloaded "
             "inference, predicting which experts the next tokens will route to.")


def test_related_work_is_ordered_by_the_similarity_it_shows_and_shows_five_just_below_the_bar(assistant):
    """A draft on expert caching showed one paper: OmniMoE sat just under the bar, shown nowhere; the
    nearest list read 40 %, 37 %, 45 %, in that order. Here 8 of the 10 candidates fall under a 0.33 bar
    (on the relevance, 0.65 × cosine + 0.35 × TF-IDF cosine, since issue 33): the 5 most similar of them are
    shown, most similar first."""
    items = related_work(assistant.retriever, assistant.sentences, text=MOE_DRAFT, k=10, bar=0.33)
    shown = [r.percent for r in items]
    assert shown == sorted(shown, reverse=True) and all(r.similarity >= 0.33 for r in items)
    assert "OmniMoE" in [r.paper.label for r in items] and items.below_bar == 8
    near = items.near
    assert len(near) == 5 and all(0.33 - 0.15 <= sim < 0.33 for _, sim in near)
    assert near[0][0].label == "CacheEdit"
    assert [sim for _, sim in near] == sorted((sim for _, sim in near), reverse=True)
    assert not {p.id for p, _ in near} & {r.paper.id for r in items}
    text = related_text(items)
    assert "\nJust below the bar:\n" in text and f"({near[0][0].id})" in text.split("Just below the bar:")[1]
    md = related_markdown(items)
    assert "**Just below the bar:**" in md and f"`{near[0][0].id}`" in md
    assert json.loads(related_json(items))["near_misses"][0]["paper_id"] == near[0][0].id


def test_a_percentage_never_contradicts_the_bar_it_is_shown_under():
    """With `--min-similarity 0` OmniMoE read "52%" while the headline said the others were "under 52%"."""
    from assistant.research.related_list import RelatedList, shown_percent

    assert shown_percent(0.5195, 0.52) == 51 and shown_percent(0.5201, 0.52) == 52
    assert shown_percent(0.5121, 0.5150) == 51 and shown_percent(0.5151, 0.5150) == 52
    assert shown_percent(0.9, 0.52) == 90 and shown_percent(-0.1, 0.3) == 0
    assert RelatedList([], below_bar=3, bar=0.52).headline() == ("No paper is similar enough: the 3 closest were below "
                                                                 "the bar (similarity under 52%).")


def test_a_picked_paper_is_called_by_its_label_and_the_nearest_only_text_is_laid_out(assistant):
    """A picked paper's sentences were labelled "yours"; with nothing above the bar the page's text ran
    together ("the nearest are: Similarity: cosine…")."""
    items = related_work(assistant.retriever, assistant.sentences, paper_id="000_12a0d7b1c5c902c5#13")
    assert items.nearest_only and items.query_label == "OmniMoE"
    md, text = related_markdown(items), related_text(items)
    assert "yours" not in md and "yours" not in text and "OmniMoE: “" in text
    assert md.startswith("**None is closely related (similarity under") and md.split("\n")[1] == ""
    assert "shares (OmniMoE ↔ this paper)" in md
    assert all(sim >= items.bar - 0.15 for _, sim in items.near)  # "near": at most 15 points below the bar


def test_a_long_draft_is_read_to_the_budget_with_a_note_in_every_face(assistant):
    """A 50,000-character draft made related work slow (12.5 s in the CLI): it is read to its first
    8,000 characters, cut at a sentence end, and the CLI, the page, --json and MCP say so."""
    import time

    from assistant.mcp.tools import related_papers
    from assistant.research.related_list import TEXT_BUDGET_CHARS, within_budget

    from tests.conftest import CORPUS

    abstracts = [b.strip() for f in sorted(CORPUS.glob("*.txt")) for b in f.read_text().split("\n\n")[1:] if b.strip()]
    draft = " ".join(abstracts * 10)[:50_000]
    assert TEXT_BUDGET_CHARS == 8_000 and within_budget(DRAFT) == (DRAFT, "")
    start = time.monotonic()
    items = related_work(assistant.retriever, assistant.sentences, text=draft, k=5)
    took = time.monotonic() - start
    assert 6_400 <= len(items.text) <= 8_000 and draft.startswith(items.text) and items.text.endswith(".")
    note = (f"Your text is 50,000 characters long; related work read its first {len(items.text):,} (at most 8,000 "
            "per request): paste the part that matters most, e.g. its abstract.")
    assert items.note == note and items
    assert related_text(items).startswith(note + "\n") and json.loads(related_json(items))["note"] == note
    assert related_markdown(items).startswith(f"_{note}_\n\n")
    assert [p.paper.id for p in related_work(assistant.retriever, assistant.sentences, text=items.text, k=5)] == [
        p.paper.id for p in items]  # the same as pasting the start yourself
    assert related_work(assistant.retriever, assistant.sentences, text=DRAFT, k=5).note == ""

    class Backend:
        def assistant(self):
            return assistant

    assert related_papers(Backend(), text=draft, k=5).note == note
    print(f"related_work on 50,000 characters: {took:.2f} s")


ROPE_DRAFT = ("We generalise rotary position encoding (RoPE) to irregularly sampled time series, so that attention can "
              "use continuous timestamps rather than integer positions. Queries and keys are rotated by angles "
              "proportional to their timestamps, extending RoPE's rotations from integer steps to real-valued time. "
              "This improves forecasting on irregular clinical data.")
UNLEARNING_DRAFT = (
    "Certified unlearning removes a set of training points from a model with a provable (ε, δ) guarantee, but "
    "first-order certified methods only use the points to be forgotten to scale their noise. We instead put the "
    "gradients of the forgotten points directly into a variance-reduced stochastic update for strongly convex "
    "losses, and still certify (ε, δ) removal. We prove faster convergence than noise-only certified baselines "
    "and report gains on standard unlearning benchmarks.")
ATOMIC_MOE_DRAFT = (
    "We make every expert of a mixture-of-experts layer a single vector, so that routing reaches the finest "
    "possible granularity. A product-key router splits the expert index into two halves to keep routing cost at "
    "the square root of the number of experts, and grouping tokens by expert turns scattered memory reads into "
    "dense matrix products. A 1.7B-active model matches coarse expert baselines at a tenth of their latency.")


def test_a_method_said_in_other_words_is_shared(assistant):
    """Issue 33 (4): SyPE also generalises RoPE, yet its method showed under "differs" for a draft that does;
    so did VRU's for a draft restating its variance-reduced use of the forget set, and OmniMoE's for one
    restating its atomic experts and product-key router: the drafts' method sentences read partly as task or
    results to the facet model, and no single pair reached the bar. Unrelated papers still differ there."""
    cases = [(ROPE_DRAFT, "000_12a0d7b1c5c902c5#15"), (UNLEARNING_DRAFT, "000_12a0d7b1c5c902c5#6"),
             (ATOMIC_MOE_DRAFT, "000_12a0d7b1c5c902c5#13")]
    for draft, paper in cases:
        items = related_work(assistant.retriever, assistant.sentences, text=draft, k=3, bar=0.0)
        by_id = {r.paper.id: r for r in items}
        method = {f.facet: f for f in by_id[paper].facets}["method"]
        assert method.shared and method.query_sentence in draft and method.paper_sentence in by_id[paper].paper.text
        for other in (r for r in items if r.paper.id != paper):
            assert not any(f.shared for f in other.facets if f.facet == "method"), (paper, other.paper.label)


@pytest.fixture(scope="module")
def drafts_slice(tmp_path_factory, encoder):
    """corpus2k's papers behind three drafts of benchmarks/related_drafts.jsonl that the dense cosine alone put
    second or third, the papers it put first, and 150 others drawn at random (a real index built in seconds)."""
    from tests.conftest import SHARED, needs_shared
    from tests.test_honest_answers import _assistant_over

    corpus2k = SHARED / "eval" / "train" / "corpus2k.jsonl"
    needs_shared(corpus2k)
    rows = [json.loads(line) for line in corpus2k.read_text().splitlines() if line.strip()]
    keep = set(DRAFT_GOLD.values()) | {
        "neurips2021-c21f4ce780c5c9d774f79841b81fdc6d", "neurips2020-0cc6ee01c82fc49c28706e0918f57e2d",  # plug-in solver
        "openreview:SaMrN9tnxE", "openreview:9ND8fMUzOAr", "openreview:Xy7DoWSNZX",  # multi-granularity ViT
        "neurips2017-291d43c696d8c3704cdbe0a72ade5f6c", "neurips2020-aa475604668730af60a0a87cc92604da"}  # DAGs
    chosen = [r for r in rows if r["id"] in keep]
    chosen += random.Random(33).sample([r for r in rows if r["id"] not in keep], 150)
    return _assistant_over(tmp_path_factory.mktemp("drafts-slice") / "slice.jsonl", chosen)


DRAFT_GOLD = {"draft-10": "neurips2020-43207fd5e34f87c48d584fc5c11befb8", "draft-14": "openreview:Bf6WFWNCUP",
              "draft-15": "neurips2021-e987eff4a7c7b7e580d659feb6f60c1a"}


def test_a_pasted_draft_finds_the_paper_it_rewrites_first_and_shows_the_figure_it_ranks_by(drafts_slice):
    """Issue 33 (5): ordered by the dense cosine it showed, related work put the paper a draft rewrites second or
    third behind papers on the same field that share fewer of its words (3 of the 40 drafts of
    benchmarks/related_drafts.jsonl; MRR 0.954). The relevance (dense and TF-IDF cosine) puts it first, and the
    figure shown is that relevance, so the order, the %, the bar and the near misses are one number."""
    from pathlib import Path

    drafts = {d["qid"]: d for d in map(json.loads, (Path(__file__).resolve().parents[1] / "benchmarks"
                                                     / "related_drafts.jsonl").read_text().splitlines())}
    found = {qid: related_work(drafts_slice.retriever, drafts_slice.sentences, text=drafts[qid]["text"], k=5, bar=0.0)
             for qid in DRAFT_GOLD}
    assert {qid: items[0].paper.id for qid, items in found.items()} == DRAFT_GOLD
    w = drafts_slice.settings.calibration.related.dense_weight
    for items in found.values():
        assert [r.similarity for r in items] == sorted((r.similarity for r in items), reverse=True)
        assert all(abs(r.similarity - (w * r.cosine + (1 - w) * r.lexical)) < 1e-9 for r in items)
        assert items[0].percent == round(100 * items[0].similarity)
