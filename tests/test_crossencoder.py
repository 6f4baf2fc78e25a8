"""The relevance cross-encoder: the committed int8 ONNX model, its passages, the opt-in judge on the
bundled index, and a tiny fine-tune → export → load round trip (real torch, real onnxruntime)."""

from __future__ import annotations

import numpy as np
import pytest

from assistant.crossencoder import MAX_LENGTH, load_relevance, passage, token_counts
from assistant.types import Verdict

OMNIMOE = "000_12a0d7b1c5c902c5#13"


@pytest.fixture(scope="module")
def model():
    return load_relevance("v1")


@pytest.fixture(scope="module")
def ce_assistant(settings, index):
    from assistant.pipeline import Assistant

    cal = settings.calibration.model_copy(update={"relevance": settings.calibration.relevance.model_copy(update={"model": "v1"})})
    return Assistant(settings.model_copy(update={"calibration": cal}), index)


def test_the_committed_model_reads_a_question_against_an_abstract(model, papers):
    by_id = {p.id: p for p in papers}
    others = [p.text for p in papers if p.id != OMNIMOE][:5]
    probs = model.probabilities("What is OmniMoE and how fast is it?", [by_id[OMNIMOE].text, *others])
    assert probs.shape == (6,) and np.all((probs >= 0) & (probs <= 1))
    assert probs[0] == probs.max() and probs[0] > 0.5 > float(np.median(probs[1:]))
    assert set(model.cutoffs) == {"answered", "weak", "listed"} and model.meta["calibrated_on"] == ["train.jsonl"]


def test_a_long_abstract_keeps_the_sentences_closest_to_the_question_in_their_order(encoder):
    sents = [f"Sentence {i} is about topic number {i} and says quite a lot of words about it, at length." for i in range(30)]
    vecs = encoder.encode(sents)
    qvec = vecs[17]
    text = " ".join(sents)
    assert sum(token_counts(sents)) > MAX_LENGTH  # too long to read whole
    kept = passage(qvec, sents, vecs, text, question_tokens=10)
    assert "Sentence 17 " in kept and kept != text
    order = [int(s.split()[1]) for s in kept.split("Sentence ")[1:] for s in ["Sentence " + s]]
    assert order == sorted(order)  # in the abstract's order
    assert sum(token_counts([kept])) <= MAX_LENGTH - 10 - 3 + 2
    assert passage(qvec, sents[:2], vecs[:2], " ".join(sents[:2]), 10) == " ".join(sents[:2])  # short: whole


def test_the_opt_in_judge_refuses_a_topic_no_paper_covers_and_answers_a_named_one(ce_assistant):
    assert ce_assistant.ask("anything on sign language translation from video?").verdict == Verdict.none
    ans = ce_assistant.ask("What is OmniMoE?")
    assert ans.verdict == Verdict.answered and ans.sources[0].paper_id == OMNIMOE


def test_a_list_is_every_paper_over_the_absolute_cutoff_whatever_the_wording(ce_assistant):
    from assistant.listing import list_papers

    a = list_papers(ce_assistant, "Which papers study reinforcement learning?")
    b = list_papers(ce_assistant, "reinforcement learning")
    cut = ce_assistant.judge.listed
    assert all(p.score >= cut for p in a.papers) and all(p.score < cut for p in a.near_misses)
    # A paper both wordings retrieve is listed by both or by neither: its probability is its own.
    listed = lambda r: {p.id: True for p in r.papers} | {p.id: False for p in r.near_misses}  # noqa: E731
    la, lb = listed(a), listed(b)
    both = set(la) & set(lb)
    assert both and all(la[pid] == lb[pid] for pid in both)
    assert set(la) & {p.id for p in a.papers} & {p.id for p in b.papers}


def test_a_tiny_fine_tune_exports_to_onnx_and_learns_its_slice(tmp_path, papers):
    """Seconds, not minutes: 32 pairs of the bundled corpus at 96 word pieces (own label → 1,
    another paper's → 0). The exported int8 model must separate the pairs it was fitted on."""
    from assistant.crossencoder import CrossEncoder
    from assistant.crossencoder_fit import FitSettings, export_int8, fine_tune

    ps = papers[:16]
    firsts = [p.label or p.text[:40] for p in ps]
    queries = firsts + firsts
    passages = [p.text for p in ps] + [ps[(i + 5) % 16].text for i in range(16)]
    labels = [1] * 16 + [0] * 16
    cfg = FitSettings(epochs=6, batch=16, max_length=96, lr=1e-4, head_lr=3e-3)
    model = fine_tune(queries, passages, labels, [1.0] * 32, cfg, log=lambda _m: None)
    path = export_int8(model, tmp_path / "tiny.onnx")
    logits = CrossEncoder(path, max_length=96).logits(firsts[0], [passages[0], passages[16]])
    assert logits.shape == (2,) and logits[0] > logits[1]
    assert path.stat().st_size < 30e6
