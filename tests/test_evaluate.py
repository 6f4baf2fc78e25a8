"""`paper-assistant eval` on dev.jsonl over the bundled 38-paper index: regression gates on dev.jsonl.

The figures on dev must not regress; they are no quality claim. No number of the answer path is fitted on
dev.jsonl (the thresholds are fitted on the training questions over eval/train/corpus2k.jsonl), and the
quality figures of README.md and docs/quality.md are cross-validated on those training questions."""

import math

import pytest

from assistant.evaluation.csfcube import ndcg_graded
from assistant.evaluation.harness import abstention_report, format_report, run_eval
from assistant.learning.evalsets import load_questions
from assistant.relevance.judge import Verdict
from tests.conftest import DEV, needs_shared


@pytest.fixture(scope="module")
def report(settings, index):
    needs_shared(DEV)
    return run_eval(settings, DEV)


def test_hybrid_ranking_regression_gate_on_dev(report):
    hybrid = report.ranking["hybrid"]
    assert hybrid["overall"]["MRR"] >= 0.97
    assert hybrid["overall"]["R@5"] >= 0.97
    for kind in ("lookup", "concept", "acronym"):
        assert hybrid[kind]["MRR"] >= 0.95, kind
    # hybrid is at least as good as either ranker alone overall
    assert hybrid["overall"]["MRR"] >= max(report.ranking["bm25"]["overall"]["MRR"], report.ranking["dense"]["overall"]["MRR"])


def test_abstention_on_dev_regression_gate(report):
    """Regression gate on dev.jsonl, not a quality claim (the rules' thresholds were once set on dev; they are
    fitted on the training questions now, and the claims in docs/quality.md are cross-validated on those).
    Measured with the default (the relevance model, names checked; 2026-12-05): 2/58 answerable refused, 24/58
    refused or flagged, 5/10 'none' refused and 9/10 at least flagged."""
    a = report.abstention
    assert a.none_questions == 10 and a.answerable_questions == 58
    assert a.answerable_abstained <= 2 / 58 + 1e-9
    assert a.answerable_flagged <= 0.45
    assert a.none_abstained >= 0.4 and a.none_flagged >= 0.9
    assert len(a.tradeoff) == 7 and a.tradeoff[0]["answerable_abstained"] == 0.0


def test_evidence_accuracy_regression_gate_on_dev(report):
    assert report.evidence_n == 17
    # The learned evidence ranker (fitted on eval/train, never on dev): 13/17 measured (the hand rules it
    # replaced, set on these very questions, quoted 14); one borderline flip is tolerated, since int8
    # kernels differ slightly by CPU.
    assert report.evidence_accuracy >= 12 / 17 - 1e-9


def test_the_learned_ranker_and_judge_regression_gate_on_dev(settings, index):
    """Regression gate on dev.jsonl. The learned judge (fitted on eval/train, never on dev), measured with
    judge-v2 (refitted with 614 written questions, 2026-12-04): 11/17 gold sentences, 13/58 answerable refused, 25/58 flagged, 7/10
    and 9/10 'none' refused and flagged (before the refit: 15/58, 21/58, 7/10, 8/10).
    It refuses more than v1 (3/58) on dev's paraphrased questions over 38 papers, though it does
    better in cross-validation over the training corpus: not the default (docs/limitations.md)."""
    needs_shared(DEV)
    learned = settings.model_copy(update={"calibration": settings.calibration.model_copy(update={
        "abstention": settings.calibration.abstention.model_copy(update={"learned": "v2"}),
        "relevance": settings.calibration.relevance.model_copy(update={"model": ""})})})
    rep = run_eval(learned, DEV)
    a = rep.abstention
    assert rep.evidence_accuracy >= 10 / 17 - 1e-9
    assert a.answerable_abstained <= 17 / 58 + 1e-9 and a.answerable_flagged <= 0.45
    assert a.none_abstained >= 0.6 and a.none_flagged >= 0.7
    assert "relevance judge: " in format_report(rep)


def test_report_text_has_all_modes_and_the_list_regression_gate_on_dev(report):
    text = format_report(report)
    for mode in ("bm25", "dense", "hybrid", "reranked"):
        assert f"{mode:<9}overall" in text
    assert "wrongly abstained" in text and "evidence accuracy" in text
    # The list figures of dev's 10 'multi' questions, and its 5 list questions about an absent topic.
    # Regression gate (measured 2026-12-05 with the list bar fitted on the training corpus: P 0.97, R 0.67; every
    # absent-topic list empty. The bar once set on these questions gave P 0.91, R 0.87).
    assert report.lists["n"] == 10 and report.lists["precision"] >= 0.95 and report.lists["recall"] >= 0.65
    assert report.lists["absent"] == 5 == report.lists["absent_empty"] and "about an absent topic" in text
    assert "unanswerable answered with no hedge: 10.0% of 10" in text and "absent-topic lists with zero papers: 5 of 5" in text
    # The relevance model reorders the hybrid top 10 (0.974 vs 0.978 on dev's 38 papers).
    assert report.ranking["reranked"]["overall"]["MRR"] == pytest.approx(report.ranking["hybrid"]["overall"]["MRR"], abs=0.01)


def test_abstention_shares_and_tradeoff_logic():
    answerable = [(Verdict.answered, 0.9), (Verdict.answered, 0.8), (Verdict.weak, 0.4), (Verdict.none, 0.1)]
    nones = [(Verdict.none, 0.05), (Verdict.weak, 0.3), (Verdict.answered, 0.95)]
    rep = abstention_report(answerable, nones)
    assert rep.none_abstained == 1 / 3 and rep.none_flagged == 2 / 3
    assert rep.answerable_abstained == 0.25 and rep.answerable_flagged == 0.5
    # Refusing none of the answerable questions refuses only what scores below the lowest of them.
    first = rep.tradeoff[0]
    assert first["answerable_abstained"] == 0.0 and first["none_abstained"] == 1 / 3
    assert [t["answerable_abstained"] for t in rep.tradeoff] == sorted(t["answerable_abstained"] for t in rep.tradeoff)


def test_graded_ndcg_and_question_loader(tmp_path):
    assert ndcg_graded(["a", "b"], {"a": 3, "b": 1}) == pytest.approx(1.0)
    assert ndcg_graded(["b", "a"], {"a": 3, "b": 1}) < 1.0
    f = tmp_path / "q.jsonl"
    f.write_text('{"question": "x", "gold": []}\nnot json\n')
    with pytest.raises(ValueError, match=":2: invalid JSON"):
        load_questions(f)
    needs_shared(DEV)
    assert len(load_questions(DEV)) == 68


FILLER = ["Protein folding. We predict protein structures with diffusion models.",
          "Traffic forecasting. Graph networks predict road congestion from sensors.",
          "Speech recognition. A transducer transcribes noisy call-centre audio.",
          "Image segmentation. A U-Net labels every pixel of satellite images.",
          "Reinforcement learning. Agents learn to play Atari games from pixels.",
          "Weather prediction. A transformer forecasts precipitation a week ahead.",
          "Drug discovery. Molecules are generated to bind a target protein.",
          "Robot grasping. A policy grasps unseen household objects.",
          "Recommender systems. Matrix factorization ranks movies for users.",
          "Fraud detection. Transactions are scored by gradient boosted trees.",
          "Object detection. Anchor-free detectors find pedestrians in video.",
          "Machine translation. A multilingual model translates low-resource languages.",
          "Climate modelling. Neural operators emulate ocean circulation.",
          "Medical imaging. A classifier grades diabetic retinopathy in photographs.",
          "Federated learning. Clients train a shared model without sharing data.",
          "Adversarial robustness. Certified defences bound the effect of pixel noise.",
          "Time series. Anomalies are detected in server metrics.",
          "Music generation. A diffusion model composes piano pieces.",
          "Graph matching. Assignments between two graphs are found by relaxation.",
          "Quantum chemistry. Neural networks predict molecular energies.",
          "Autonomous driving. Lidar point clouds are segmented in real time.",
          "Question answering. A reader extracts answer spans from Wikipedia."]


def test_csfcube_mode_on_a_tiny_pool(tmp_path, encoder):
    """A pool of 25 (more than the 20 scored): the two morphology papers first, the graded one (3) before the
    other (2), the query paper itself left out: NDCG@20 and R@20 are exactly 1."""
    import json

    from assistant.evaluation.csfcube import format_csfcube, run_csfcube

    docs = {"c:1": "Morphology learning. We induce word morphology from a lexicon without morphemes.",
            "c:3": "Word formation. A learner of morphological relations between words.",
            "c:q": "Whole word morphology. We learn morphology without morphemes."}
    docs |= {f"f:{i}": text for i, text in enumerate(FILLER)}
    (tmp_path / "corpus.jsonl").write_text("\n".join(json.dumps({"id": k, "title": "", "abstract": v}) for k, v in docs.items()))
    pool = [f"f:{i}" for i in range(len(FILLER))] + ["c:3", "c:q", "c:1"]  # the gold last in the given order
    q = {"qid": "q", "query": docs["c:q"], "facet": "method", "facet_text": "We learn morphology without morphemes.",
         "query_paper_id": "c:q", "gold_ids": ["c:1", "c:3"], "candidate_ids": pool,
         "graded_relevance": {"c:1": 3, "c:3": 2, "c:q": 3} | {f"f:{i}": 0 for i in range(len(FILLER))}}
    (tmp_path / "queries.jsonl").write_text(json.dumps(q))
    res = run_csfcube(encoder, tmp_path)
    assert res["queries"] == 1 and len(pool) - 1 > 20
    assert res["R@20"] == 1.0 and res["NDCG@20"] == pytest.approx(1.0)
    assert res["per_facet"] == {"method": {"n": 1, "NDCG@20": pytest.approx(1.0), "R@20": 1.0}}
    assert format_csfcube(res).splitlines()[:2] == [
        "CSFCube (1 queries, candidate re-ranking): NDCG@20 1.000  R@20 1.000",
        "  method      n=1   NDCG@20 1.000  R@20 1.000"]
    # Issue 33 (5): related work's own order (its relevance) is scored too, beside the cosine and RRF orders.
    for kind in ("abstract", "short"):
        assert set(res["related"][kind]) == {"relevance", "cosine", "rrf"}
        assert res["related"][kind]["relevance"]["MRR"] == 1.0
    assert res["related"]["abstract"]["relevance"]["NDCG@20"] == pytest.approx(1.0)
    assert "relevance (what related work orders by)" in format_csfcube(res)
    swapped = q | {"graded_relevance": q["graded_relevance"] | {"c:1": 2, "c:3": 3}}  # the weaker match graded higher
    (tmp_path / "queries.jsonl").write_text(json.dumps(swapped))
    ndcg = run_csfcube(encoder, tmp_path)["NDCG@20"]
    assert ndcg == pytest.approx((2 + 3 / math.log2(3)) / (3 + 2 / math.log2(3)))


def test_a_question_file_without_questions_is_an_error(tmp_path):
    import pytest

    from assistant.learning.evalsets import load_questions

    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n  \n", encoding="utf-8")
    with pytest.raises(ValueError, match="no questions in the file"):
        load_questions(empty)


def test_a_question_file_with_a_bom_and_unknown_gold_ids_is_read_with_a_warning(settings, index, tmp_path):
    import json

    qs = tmp_path / "q.jsonl"
    qs.write_bytes(b"\xef\xbb\xbf" + json.dumps({"qid": "a", "kind": "acronym", "question": "What is SyPE?",
                                                    "gold": ["000_12a0d7b1c5c902c5#15", "other#3"]}).encode() + b"\n")
    rep = run_eval(settings, qs)
    assert rep.missing_gold == ["other#3"]
    assert "warning: 1 gold paper ids are not in this index (e.g. other#3)" in format_report(rep)
    assert rep.ranking["hybrid"]["acronym"]["R@1"] == 0.5  # one of its two gold papers is first


def test_an_eval_corpus_that_gives_no_paper_is_one_line(tmp_path, capsys):
    """Fifth hostile round (#35): `eval --corpus empty.jsonl` (or a FIFO, a 200 MiB file, invalid UTF-8) ended with
    "unexpected AttributeError: 'BM25' object has no attribute 'vocab_dict'", the reason never said."""
    from assistant.learning import open_corpus_index
    from assistant.settings import load_settings

    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "latin1.jsonl").write_bytes(b'{"id": "p1", "abstract": "caf\xe9"}\n')
    settings = load_settings(index=tmp_path / "idx")
    with pytest.raises(ValueError, match=r"^the --corpus files gave no paper to evaluate over \(no file gave a paper\)$"):
        open_corpus_index(settings, [tmp_path / "empty.jsonl"])
    with pytest.raises(ValueError, match=r"gave no paper to evaluate over \(.*latin1\.jsonl: invalid UTF-8 at byte"):
        open_corpus_index(settings, [tmp_path / "latin1.jsonl"])
    # Each failed run left an empty eval-index-… folder beside the index (a hostile round): none is left now.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["empty.jsonl", "latin1.jsonl"]
    import os

    (tmp_path / "folder").mkdir()  # a FIFO inside a --corpus folder is named, as ingest names it (a hostile round)
    (tmp_path / "folder" / "good.jsonl").write_text('{"id": "p1", "abstract": "We propose GoodNet for graphs."}\n')
    os.mkfifo(tmp_path / "folder" / "pipe.jsonl")
    open_corpus_index(settings, [tmp_path / "folder"])
    said = capsys.readouterr().err
    assert said.startswith(f"skipped: {tmp_path / 'folder' / 'pipe.jsonl'}: not a regular file (a FIFO, socket or "
                           "device)") and said.count("\n") == 1, said
    (tmp_path / "loop").symlink_to(tmp_path / "loop")  # resolve() raised "unexpected RuntimeError" (a 13th round)
    with pytest.raises(ValueError, match=r"gave no paper to evaluate over \(.*loop"):
        open_corpus_index(settings, [tmp_path / "loop"])
    capsys.readouterr()
    os.mkfifo(tmp_path / "fifo.jsonl")  # skipped by ingest, and eval said nothing (a hostile round)
    with pytest.raises(ValueError, match=r"^--distractors .*fifo\.jsonl: no such paper file \(it must be a plain file"):
        open_corpus_index(settings, [tmp_path / "empty.jsonl"], distractors=tmp_path / "fifo.jsonl")


def test_more_folds_than_questions_is_one_line_before_any_fit(tmp_path):
    """A thirteenth hostile round: `eval --cv 99999` on 2 questions fitted fold after fold, saying nothing."""
    from assistant.evaluation.harness import run_eval
    from assistant.settings import load_settings

    q = tmp_path / "two.jsonl"
    q.write_text('{"question": "What is SyPE?", "gold": []}\n{"question": "What is KITE?", "gold": []}\n')
    with pytest.raises(ValueError, match=r"^--cv 99999: more folds than questions \(2\); give at most 2$"):
        run_eval(load_settings(index=tmp_path / "idx"), q, cv=99999)
    assert not (tmp_path / "idx").exists()
