"""Calibrating the relevance cross-encoder (:mod:`assistant.relevance.calibration` holds the numbers): the rows
it is calibrated on, over every index it must hold on, and the calibration file it writes.

A row is one calibration question's retrieved papers with their cross-encoder logits, pair features and gold
labels (:func:`candidate_logits`); :func:`calibration_rows` asks every question over the corpus' index, over
simulated 40-paper indexes, and each with its gold papers hidden, so the cutoffs hold at every index size.
:func:`train_relevance` is the whole ``train --relevance``: pairs, fine-tune and export
(:mod:`assistant.learning.crossencoder_fit`), then this calibration; :func:`recalibrate_relevance` the last step alone.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from assistant.learning.crossencoder_fit import FitSettings, build_pairs, export_int8, fine_tune, passages_for
from assistant.relevance import calibrate, list_cutoff, write_calibration


def candidate_logits(assistant, encoder, questions: list[dict], rerank: int) -> list[dict]:
    """For each question: the retriever's top ``rerank`` paper ids, their cross-encoder logits and
    gold labels (``{"qid", "kind", "answerable", "ids", "logits", "labels"}``), through the answer
    path's own question analysis (a list question is scored against its topic)."""
    out = []
    for q in questions:
        prep = assistant.prepare(q["question"], k=rerank)
        ids = [p.id for p in prep.papers]
        query = relevance_query(prep)
        texts = passages_for(assistant, [(query, pid) for pid in ids])
        gold = set(q.get("gold") or [])
        out.append({"qid": q.get("qid", ""), "kind": q.get("kind", ""), "answerable": bool(gold),
                    # an absent-topic list: a list question about no paper (not a near miss naming one)
                    "list": bool(prep.analysis is not None and prep.analysis.is_list and not q.get("near")),
                    "source": q.get("source", ""), "ids": ids,
                    "logits": encoder.logits(query, texts).tolist() if texts else [],
                    **pair_features(prep, ids), "labels": [int(pid in gold) for pid in ids]})
    return out


def calibration_rows(assistant, encoder, questions: list[dict], cfg: FitSettings, log=print) -> list[dict]:
    """:func:`candidate_logits` rows of ``questions`` over every index a calibration must hold on, each row
    tagged ``variant``: ``whole`` (the corpus' index), ``whole, gold hidden`` (each answerable question with
    its gold papers taken out of the index, so labelled unanswerable: a near miss as the index sees it), and
    for each size N of ``cfg.small_indexes`` ``small-N`` and ``small-N, gold hidden`` (indexes of N papers:
    a group of questions' gold and near papers filled with random others, BM25 rebuilt over them;
    assistant.learning.trainset.simulated_indexes). Every row keeps its question's ``qid``, so folds keep a
    question's variants together."""
    from assistant.answer import Assistant
    from assistant.learning.trainset import SubsetIndex, lexical_chunks, neutral_models, simulated_indexes

    index = assistant.index
    all_ids = sorted(set(index.lexical().paper_ids))

    def over(sub) -> Assistant:
        return Assistant(assistant.settings, sub, models=neutral_models())

    def tagged(rows, variant):
        for r in rows:
            r["variant"] = variant
        return rows

    def hidden(q):
        return dict(q, gold=[], kind="none")

    t = time.time()
    out = tagged(candidate_logits(assistant, encoder, questions, cfg.rerank), "whole")
    answerable = [q for q in questions if q.get("gold")]
    for q in answerable:
        sub = SubsetIndex(index, set(all_ids) - set(q["gold"]))
        out += tagged(candidate_logits(over(sub), encoder, [hidden(q)], cfg.rerank), "whole, gold hidden")
    log(f"calibration rows over the whole index: {len(out)} in {time.time() - t:.0f} s")
    chunks = lexical_chunks(index.store) if cfg.small_indexes else []
    for size in cfg.small_indexes:
        for allowed, members in simulated_indexes(questions, all_ids, size, cfg.small_group, cfg.seed):
            qs = [questions[i] for i in members]
            out += tagged(candidate_logits(over(SubsetIndex(index, allowed, chunks)), encoder, qs, cfg.rerank), f"small-{size}")
            for q in qs:
                if q.get("gold"):
                    sub = SubsetIndex(index, allowed - set(q["gold"]), chunks)
                    out += tagged(candidate_logits(over(sub), encoder, [hidden(q)], cfg.rerank), f"small-{size}, gold hidden")
        log(f"calibration rows with small-{size} indexes: {len(out)} in {time.time() - t:.0f} s")
    return out


def pair_features(prep, ids: list[str]) -> dict:
    """The calibration's pair features besides the logit (assistant.relevance.calibration.STACK_FEATURES)
    for papers ``ids`` of a prepared question, as the answer path measures them."""
    rel = prep.relevance
    return {"dense": [round(float(rel[i].dense), 4) for i in ids],
            "sentence": [round(float(rel[i].sentence), 4) for i in ids],
            "named": [int(rel[i].named_hit) for i in ids]}


def relevance_query(prep) -> str:
    """What the cross-encoder reads for a prepared question (:func:`assistant.relevance.crossencoder.relevance_query`)."""
    from assistant.relevance import relevance_query as query_of

    return query_of(prep.analysis) if prep.analysis is not None else prep.query


def list_rows(assistant, encoder, cfg: FitSettings) -> list[dict]:
    """Held-out list questions for the list cutoff: the corpus' frequent title phrases *after* the ones
    topic pairs train on (:func:`assistant.learning.crossencoder_pairs.frequent_phrases`), asked "Which papers
    study …?" through the answer path (its 20-paper pool). A pooled paper is on the topic (1) when its
    title holds the phrase, off it (0) when neither title nor abstract does; the rest are left out."""
    from assistant.learning.crossencoder_pairs import frequent_phrases

    ids = sorted(set(assistant.index.lexical().paper_ids))
    papers = assistant.index.store.get_papers(ids)
    trained = set(frequent_phrases(papers, 40))  # the topic pairs' phrases (assistant.learning.crossencoder_pairs.topic_pairs)
    phrases = [p for p in frequent_phrases(papers, 10 * cfg.list_topics, min_papers=4) if p not in trained][:cfg.list_topics]
    out = []
    for phrase in phrases:
        prep = assistant.prepare(f"Which papers study {phrase}?")
        keep = [(p.id, int(phrase in p.paper.title.lower())) for p in prep.papers
                if phrase in p.paper.title.lower() or phrase not in (p.paper.title + " " + p.paper.text).lower()]
        if not keep:
            continue
        texts = passages_for(assistant, [(relevance_query(prep), pid) for pid, _ in keep])
        out.append({"qid": phrase, "ids": [pid for pid, _ in keep], "labels": [y for _, y in keep],
                    "logits": encoder.logits(relevance_query(prep), texts).tolist(),
                    **pair_features(prep, [pid for pid, _ in keep])})
    return out


def train_relevance(settings, corpus: list, written: list, held_out: list, others: Path | None = None,
                    out_folder: Path | None = None, cfg: FitSettings | None = None, log=print) -> dict:
    """Build pairs, fine-tune, export int8 ONNX and calibrate (module docstring); writes
    ``relevance-v2.onnx`` and ``relevance-v2.json`` to ``out_folder`` (default: the package's models/).
    ``written`` / ``held_out``: question files (``{qid, kind, question, gold, …}`` a line) to train on / to calibrate on.
    Returns the calibration file's content."""
    from assistant.relevance import model_files
    from assistant.learning.evalsets import load_question_files, open_corpus_index
    from assistant.answer import Assistant
    from assistant.learning.trainset import neutral_models

    cfg = cfg or FitSettings()
    t0 = time.time()
    settings, idx = open_corpus_index(settings, corpus)
    assistant = Assistant(settings, idx, models=neutral_models())
    wq, hq = load_question_files(written), load_question_files(held_out)
    pairs = build_pairs(assistant, wq, hq, others, cfg, log)
    texts = passages_for(assistant, [(p.query, p.paper_id) for p in pairs])
    model = fine_tune([p.query for p in pairs], texts, [p.label for p in pairs], [p.weight for p in pairs], cfg, log)
    onnx_path, _ = model_files(folder=out_folder)
    export_int8(model, onnx_path)
    log(f"exported {onnx_path} ({onnx_path.stat().st_size / 1e6:.1f} MB)")
    from collections import Counter

    meta = {"trained_on": {"pairs": len(pairs), "by_kind": dict(sorted(Counter(p.kind for p in pairs).items())),
                           "questions": [Path(w).name for w in written], "corpus": [Path(c).name for c in corpus]},
            "seed": cfg.seed, "fine_tune_minutes": round((time.time() - t0) / 60, 1)}
    return calibrate_relevance(assistant, hq, [Path(h).name for h in held_out], out_folder, cfg, meta, log)


def recalibrate_relevance(settings, corpus: list, held_out: list, out_folder: Path | None = None,
                          cfg: FitSettings | None = None, log=print) -> dict:
    """Calibrate the relevance model already in ``out_folder`` (default: the package's models/) on ``held_out``
    question files without fine-tuning it again (minutes, not the fine-tune's 45): what its calibration file
    says of its training is kept. Raises CrossEncoderError when the folder holds no model."""
    from assistant.answer import Assistant
    from assistant.learning.evalsets import load_question_files, open_corpus_index
    from assistant.learning.trainset import neutral_models
    from assistant.relevance import CrossEncoderError, model_files

    cfg = cfg or FitSettings()
    onnx_path, cal_path = model_files(folder=out_folder)
    if not onnx_path.is_file():
        raise CrossEncoderError(f"no relevance model at {onnx_path}: run `paper-assistant train --relevance` first")
    try:
        old = json.loads(cal_path.read_text())
    except (OSError, ValueError):
        old = {}
    meta = {k: old[k] for k in ("trained_on", "seed", "fine_tune_minutes") if k in old}
    settings, idx = open_corpus_index(settings, corpus)
    assistant = Assistant(settings, idx, models=neutral_models())
    questions = load_question_files(held_out)
    return calibrate_relevance(assistant, questions, [Path(h).name for h in held_out], out_folder, cfg, meta, log)


def calibrate_relevance(assistant, questions: list[dict], names: list[str], out_folder: Path | None,
                        cfg: FitSettings, meta: dict, log=print) -> dict:
    """Calibrate the exported model in ``out_folder`` on ``questions`` (held out from its training) and
    write its calibration file; returns the file's content."""
    from assistant.relevance import CrossEncoder, model_files

    onnx_path, cal_path = model_files(folder=out_folder)
    encoder = CrossEncoder(onnx_path, cfg.max_length)
    rows = calibration_rows(assistant, encoder, questions, cfg, log)
    stack, cut, cv = calibrate(rows, cfg)
    lrows = list_rows(assistant, encoder, cfg)
    listed, list_cv = list_cutoff(lrows, stack, cfg)
    cut["listed"] = round(max(listed, cut["weak"]), 6)
    meta = {**meta, "calibrated_on": names, "cv": {k: round(v, 4) if isinstance(v, float) else v for k, v in cv.items()},
            "list_cv": {k: round(v, 4) for k, v in list_cv.items()}}
    write_calibration(cal_path, stack, cut, meta)
    log(f"calibration {stack['coef']} cutoffs {cut}; 5-fold CV {meta['cv']}")
    return json.loads(cal_path.read_text()) | {"rows": rows, "list_rows": lrows}
