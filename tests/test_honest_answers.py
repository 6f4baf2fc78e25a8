"""Honest answers (issue #31): the answer says what the papers do not say. Each question quoted in the issue,
through the real answer path (the relevance model, the name check) over real indexes: the bundled 38 papers,
a slice of corpus2k (with ../shared), and a three-paper index the test writes."""

from __future__ import annotations

import json
import random

import pytest

from assistant.types import Verdict
from tests.conftest import SHARED, needs_shared

OMNIMOE = "000_12a0d7b1c5c902c5#13"
ROMBERG = "004_9268713af81d21d3#2"
CORPUS2K = SHARED / "eval" / "train" / "corpus2k.jsonl"


@pytest.mark.parametrize("question", ["What accuracy does FlashPrune reach on ImageNet?", "What is FlashPrune?"])
def test_a_method_no_abstract_mentions_is_refused_however_it_is_asked(assistant, question):
    ans = assistant.ask(question)
    assert ans.verdict == Verdict.none and ans.sources == []
    assert ans.answer.startswith("No indexed abstract mentions FlashPrune")
    assert ans.also_retrieved  # the nearest papers are still shown, as not relevant


def test_a_found_paper_that_never_mentions_the_asked_dataset_is_a_closest_match_that_says_so(assistant):
    ans = assistant.ask("What accuracy does OmniMoE reach on ImageNet?")
    assert ans.verdict == Verdict.weak and ans.sources[0].paper_id == OMNIMOE
    assert "OmniMoE's abstract does not mention ImageNet" in ans.note
    assert "50.9" in ans.sources[0].sentence  # what the abstract does say is still quoted


def test_a_question_naming_its_paper_cites_it_first_and_is_not_refused(assistant):
    ans = assistant.ask("Which language model was used for the black-box prompt tuning experiment of Romberg-ZOGE?")
    assert ans.sources and ans.sources[0].paper_id == ROMBERG and ans.verdict != Verdict.none


def test_a_list_on_an_absent_topic_lists_nothing_and_a_list_shows_each_papers_own_probability(assistant):
    from assistant.research.lists import list_papers

    absent = list_papers(assistant, "Which papers study jailbreak attacks on large language models?")
    assert absent.count == 0 and absent.note.startswith("No indexed paper is about “study jailbreak attacks")
    ans = assistant.ask("Which papers study jailbreak attacks on large language models?")
    assert ans.verdict == Verdict.none and ans.answer.startswith("No indexed paper is about")
    present = list_papers(assistant, "Which papers study personality in large language models?")
    assert present.count == 2
    assert [p.score for p in present.papers] == [pytest.approx(p.relevance.probability) for p in present.papers]
    assert present.papers[0].score < 1.0  # a probability, not the best paper's share of itself


@pytest.mark.xfail(strict=True, reason="known gap (issue #31): the relevance model scores this paraphrase of GBP "
                   "below its 'nothing found' cutoff and the embeddings agree; docs/limitations.md")
def test_the_bell_curve_shortcut_question_is_answered_from_gbp(assistant):
    ans = assistant.ask("When does the bell-curve shortcut in message passing on loopy graphs actually hold?")
    assert ans.verdict != Verdict.none


def test_the_name_check_can_be_switched_off(settings, index):
    from assistant.answer.pipeline import Assistant

    cal = settings.calibration
    off = Assistant(settings.model_copy(update={"calibration": cal.model_copy(update={
        "relevance": cal.relevance.model_copy(update={"name_check": False})})}), index)
    assert not off.ask("What is FlashPrune?").answer.startswith("No indexed abstract mentions")


def _assistant_over(path, rows: list[dict]):
    """An Assistant over a real index of ``rows`` (written to ``path`` as JSONL, ingested beside it)."""
    from assistant.answer.pipeline import Assistant
    from assistant.answer.service import get_index
    from assistant.settings import load_settings
    from vectorstore.ingest import ingest

    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    settings = load_settings(index=path.parent / "index", corpus=[path])
    idx = get_index(settings, create=True)
    ingest([path], idx)
    return Assistant(settings, idx)


@pytest.fixture(scope="module")
def zorblax(tmp_path_factory, encoder):
    """Two papers proposing Zorblax and one on Zorblax++, beside a paper on something else."""
    root = tmp_path_factory.mktemp("zorblax")
    rows = [
        {"id": "z1", "title": "Zorblax: sparse attention for long documents",
         "abstract": "We propose Zorblax, a sparse attention scheme for long documents. Zorblax keeps a few global "
                     "tokens and attends locally elsewhere, cutting memory use by half."},
        {"id": "z2", "title": "Scaling Zorblax to speech",
         "abstract": "We propose Zorblax for speech: the sparse attention pattern of Zorblax transfers to audio frames "
                     "and matches dense attention on two speech benchmarks."},
        {"id": "z3", "title": "Zorblax++: learned sparsity patterns",
         "abstract": "Zorblax++ learns which tokens attend to which, improving on hand-set sparse attention patterns "
                     "on long-document summarization."},
        {"id": "o1", "title": "Protein folding with diffusion",
         "abstract": "We train a diffusion model over protein backbones and report structure accuracy on CASP14."},
    ]
    return _assistant_over(root / "zorblax.jsonl", rows)


def test_a_whole_name_beats_a_longer_name_that_contains_it(zorblax):
    ans = zorblax.ask("What is Zorblax?")
    assert ans.sources[0].paper_id in {"z1", "z2"} and ans.verdict == Verdict.answered
    assert zorblax.ask("What is Zorblax++?").sources[0].paper_id == "z3"


@pytest.fixture(scope="module")
def corpus2k_slice(tmp_path_factory, encoder):
    """corpus2k's papers that the issue's corpus2k questions are about or near (titles and abstracts holding
    Falcon, Ouroboros, experts, jailbreak, attack, sign, video), with 120 others drawn at random: a real index of a few
    hundred papers, built in seconds."""
    needs_shared(CORPUS2K)
    rows = [json.loads(line) for line in CORPUS2K.read_text().splitlines() if line.strip()]
    words = ("falcon", "ouroboros", "experts", "jailbreak", "adversarial attack", "sign language", "video")
    near = [r for r in rows if any(w in (r["title"] + " " + r["abstract"]).lower() for w in words)]
    rest = [r for r in rows if r not in near]
    chosen = near + random.Random(31).sample(rest, 120)
    root = tmp_path_factory.mktemp("corpus2k-slice")
    return _assistant_over(root / "slice.jsonl", chosen)


def test_corpus2k_an_invented_method_is_refused_not_answered_from_a_mixture_of_experts_paper(corpus2k_slice):
    ans = corpus2k_slice.ask("How does QuasarNet route tokens between experts?")
    assert ans.verdict == Verdict.none and ans.answer.startswith("No indexed abstract mentions QuasarNet.")


@pytest.mark.parametrize("name", ["Falcon", "Ouroboros"])
def test_corpus2k_a_name_that_leads_a_title_finds_that_paper(corpus2k_slice, name):
    ans = corpus2k_slice.ask(f"What is {name}?")
    assert ans.verdict == Verdict.answered and ans.sources[0].title.startswith(f"{name}:")


@pytest.mark.parametrize("question", ["Which papers study jailbreak attacks on large language models?",
                                      "Which papers do sign language recognition from video?"])
def test_corpus2k_a_list_on_an_absent_topic_lists_nothing(corpus2k_slice, question):
    from assistant.research.lists import list_papers

    res = list_papers(corpus2k_slice, question)
    assert res.count == 0 and res.near_misses and all(p.score < 0.05 for p in res.near_misses)
