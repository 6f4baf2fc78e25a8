"""Fitting the relevance cross-encoder (:mod:`assistant.relevance.crossencoder`): fine-tune, export, calibrate.

``paper-assistant train --relevance`` runs :func:`train_relevance`:

1. pairs (:mod:`assistant.learning.crossencoder_pairs`) over the training corpus' index: titles with hard
   negatives, the written questions (``data/train/written.jsonl``), synthetic, detail, contribution,
   topic and absent-topic pairs. The calibration questions (``eval/train/train.jsonl``) are *not*
   trained on: they are the cross-encoder's held-out set;
2. fine-tuning (transformers + torch, CPU, seeded): the packaged all-MiniLM-L6-v2 with a one-logit
   head (``BertForSequenceClassification``, ``num_labels=1``), weighted binary cross-entropy, AdamW,
   linear warm-up and decay, one pass; word embeddings frozen (the vocabulary's vectors are what the
   bi-encoder learned; 12M fewer parameters to update);
3. export to ONNX and int8 dynamic quantization (MatMul and Gather weights) with onnxruntime;
4. calibration (:mod:`assistant.relevance.calibration`): Platt scaling of the int8 model's logits on the
   calibration questions' retrieved papers (label: the paper is a gold paper of the question); the verdict
   cutoffs on the best paper's probability (at most ``refuse_rate`` of the answerable calibration questions
   below ``weak``, at most ``flag_rate`` below ``answered``), cross-validated in 5 folds; the list cutoff,
   the best F1 on held-out title-phrase lists (:func:`list_rows`).

Training needs torch and transformers; answering needs neither.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass, field
from pathlib import Path


from assistant.relevance import MAX_LENGTH, cut_question, passage, token_counts


@dataclass(frozen=True)
class FitSettings:
    """The knobs of fine-tuning (not of answering)."""

    seed: int = 0
    epochs: int = 2
    batch: int = 16
    lr: float = 5e-5
    head_lr: float = 1e-3
    warmup: float = 0.1
    max_length: int = MAX_LENGTH
    threads: int = 2
    device: str = "auto"
    """"auto": a CUDA GPU when torch sees one, else the CPU; "cpu": the CPU always."""
    title_limit: int | None = 800
    """Titled papers used as ``title`` queries (None: every one not held out)."""
    title_negatives: int = 2
    written_repeat: int = 2
    """Passes over the hand-written pairs (the strongest labels) per epoch."""
    rerank: int = 10
    """Retrieved papers per calibration question whose logits calibrate the model (the answer path's N)."""
    refuse_rate: float = 0.02
    """Share of answerable calibration questions the ``none`` cutoff may refuse (``flag_rate``: the ``weak`` one)."""
    flag_rate: float = 0.12
    veto_rate: float = 0.01
    absent_list_rate: float = 0.9
    """Share of the unanswerable list questions ("Which papers …?" on an absent topic) whose best paper is below ``topic``."""
    """Share of answerable calibration questions whose top paper's bi-encoder evidence is below the ``veto`` cutoff
    (below ``weak`` and the veto: nothing found; below ``weak`` only: closest match)."""
    folds: int = 5
    small_indexes: tuple[int, ...] = (40,)
    """Sizes of the simulated small indexes the calibration also holds on (:func:`calibration_rows`); the bundled index holds 38 papers."""
    small_group: int = 16
    """Questions asked over each simulated small index."""
    list_topics: int = 40
    """Held-out title phrases whose lists set the list cutoff (:func:`list_rows`)."""
    kinds: tuple = field(default=("title", "described", "written", "synthetic", "detail", "contribution", "topic",
                                  "absent"))
    described_limit: int = 1600
    """Papers described without their name (``described`` pairs)."""


def passages_for(assistant, queries_and_ids: list[tuple[str, str]]) -> list[str]:
    """The cross-encoder passage (:func:`assistant.relevance.crossencoder.passage`) of each (query, paper id)."""
    store, enc = assistant.index.store, assistant.index.encoder
    papers = store.get_papers(sorted({pid for _, pid in queries_and_ids}))
    cache = assistant.sentences.get(list(papers.values()))
    qs = sorted({q for q, _ in queries_and_ids})
    qvecs = dict(zip(qs, enc.encode(qs))) if qs else {}
    qtok = dict(zip(qs, token_counts(qs)))
    out = []
    for q, pid in queries_and_ids:
        sents, vecs = cache[pid]
        out.append(passage(qvecs[q], [s.text for s in sents], vecs, papers[pid].text, qtok[q]))
    return out


def build_pairs(assistant, written: list[dict], held_out: list[dict], others: Path | None,
                cfg: FitSettings, log=print):
    """All training pairs (:mod:`assistant.learning.crossencoder_pairs`), the held-out questions' papers excluded
    from the title pairs. Returns ``list[Pair]``."""
    import assistant.learning.crossencoder_pairs as cp
    from assistant.learning.synthetic import synthetic_questions

    ids = sorted(set(assistant.index.lexical().paper_ids))
    papers = assistant.index.store.get_papers(ids)
    exclude = {g for q in held_out for g in (q.get("gold") or []) + (q.get("near") or [])}
    pairs = []
    t = time.time()
    if "title" in cfg.kinds:
        pairs += cp.title_pairs(assistant, papers, exclude, cfg.title_negatives, cfg.seed, cfg.title_limit)
    if "described" in cfg.kinds:
        pairs += cp.described_pairs(assistant, papers, exclude, cfg.described_limit, cfg.title_negatives, cfg.seed)
    if "written" in cfg.kinds:
        pairs += cp.question_pairs(assistant, written, "written") * cfg.written_repeat
    if "synthetic" in cfg.kinds:
        made = synthetic_questions([p for pid, p in papers.items() if pid not in exclude], held_out + written)
        pairs += cp.question_pairs(assistant, made, "synthetic", negatives=2)
    if "detail" in cfg.kinds:
        pairs += cp.detail_pairs({k: v for k, v in papers.items() if k not in exclude})
    if "contribution" in cfg.kinds:
        pairs += cp.contribution_pairs(papers)
    if "topic" in cfg.kinds:
        pairs += cp.topic_pairs(assistant, papers)
    if "absent" in cfg.kinds:
        pairs += cp.absent_pairs(assistant, papers, others)
    from collections import Counter

    log(f"pairs: {len(pairs)} in {time.time() - t:.0f} s; by kind "
        + ", ".join(f"{k} {n}" for k, n in sorted(Counter(p.kind for p in pairs).items()))
        + f"; positives {sum(p.label for p in pairs)}")
    return pairs


def base_model_dir() -> str:
    from vectorstore.encoding import PACKAGED_MODEL, resolve_model_path

    return resolve_model_path(PACKAGED_MODEL)


class _Scorer:
    """Built lazily (torch is imported only for training): the BERT and a linear head on its [CLS] state.
    A head on the mean-pooled state instead (the bi-encoder's own pooling), one pass with inverse-cloze
    pairs added and fewer titles, gave a logit the stacked calibration all but ignored (weight 0.04 vs
    0.86; CV 45 % of unanswerable refused at 3.0 %, against 52 %), so [CLS] stays."""

    @staticmethod
    def build(path: str):
        import torch
        from transformers import AutoModel

        class Scorer(torch.nn.Module):
            """``logit = w · h[CLS] + b`` over the last hidden state (no pooler: the packaged bi-encoder never
            trained one, and with it the head learned nothing in 500 steps; the head on [CLS] at a higher
            learning rate reached a held-out pair AUC of 0.82 in 150)."""

            def __init__(self):
                super().__init__()
                self.bert = AutoModel.from_pretrained(path)
                self.head = torch.nn.Linear(self.bert.config.hidden_size, 1)

            def forward(self, input_ids, attention_mask, token_type_ids):
                h = self.bert(input_ids=input_ids, attention_mask=attention_mask,
                              token_type_ids=token_type_ids).last_hidden_state
                return self.head(h[:, 0]).reshape(-1)

        return Scorer()


def fine_tune(queries: list[str], passages: list[str], labels: list[int], weights: list[float],
              cfg: FitSettings, log=print):
    """The fine-tuned scorer (a ``torch.nn.Module``: ``(input_ids, attention_mask, token_type_ids)`` →
    logits of shape ``(batch,)``), returned on the CPU. Trains on a CUDA GPU when torch sees one (``cfg.device``
    "auto"; "cpu" forces the CPU): the same recipe, so the same model within the eval's tolerance, not bit for
    bit. On the CPU deterministic for a given ``cfg.seed`` and thread count."""
    import torch
    from transformers import AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    torch.manual_seed(cfg.seed)
    torch.set_num_threads(cfg.threads)
    path = base_model_dir()
    tok = AutoTokenizer.from_pretrained(path)
    device = "cuda" if cfg.device == "auto" and torch.cuda.is_available() else "cpu"
    model = _Scorer.build(path).to(device)
    model.bert.embeddings.word_embeddings.weight.requires_grad_(False)
    body = [p for p in model.bert.parameters() if p.requires_grad]
    opt = torch.optim.AdamW([{"params": body, "lr": cfg.lr}, {"params": model.head.parameters(), "lr": cfg.head_lr}],
                            weight_decay=0.01)
    n = len(queries)
    steps = cfg.epochs * math.ceil(n / cfg.batch)
    warm = max(1, int(cfg.warmup * steps))
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min((s + 1) / warm, max(0.0, (steps - s) / max(1, steps - warm))))
    loss_fn = torch.nn.BCEWithLogitsLoss(reduction="none")
    rng = random.Random(cfg.seed)
    qs = [cut_question(q) for q in queries]
    model.train()
    step, t0, seen, run_loss = 0, time.time(), 0, 0.0
    for _ in range(cfg.epochs):
        order = list(range(n))
        rng.shuffle(order)
        for s in range(0, n, cfg.batch):
            idx = order[s:s + cfg.batch]
            enc = tok([qs[i] for i in idx], [passages[i] for i in idx], truncation="only_second",
                      max_length=cfg.max_length, padding=True, return_tensors="pt")
            enc = {k: v.to(device) for k, v in enc.items()}
            logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
            y = torch.tensor([float(labels[i]) for i in idx], device=device)
            w = torch.tensor([float(weights[i]) for i in idx], device=device)
            loss = (loss_fn(logits, y) * w).sum() / w.sum()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            step += 1
            seen += len(idx)
            run_loss = 0.98 * run_loss + 0.02 * loss.item() if step > 1 else loss.item()
            if step % 25 == 0 or step == steps:
                rate = seen / (time.time() - t0)
                log(f"step {step}/{steps}  loss {run_loss:.3f}  {rate:.1f} pairs/s  "
                    f"eta {(steps - step) * cfg.batch / rate / 60:.0f} min")
    model.eval()
    log(f"fine-tuned on {device}")
    return model.to("cpu")


def export_int8(model, out: Path) -> Path:
    """``model`` as int8 ONNX at ``out`` (inputs ``input_ids``, ``attention_mask``, ``token_type_ids``,
    dynamic batch and length; output ``logits`` of shape ``(batch,)``)."""
    import logging
    import warnings

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from onnxruntime.quantization.shape_inference import quant_pre_process

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    raw, pre = out.with_suffix(".raw.onnx"), out.with_suffix(".pre.onnx")
    ids = torch.tensor([[101, 2054, 102, 2023, 2003, 102], [101, 2054, 2003, 102, 2023, 102]])
    sample = (ids, torch.ones_like(ids), torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 0, 0, 1, 1]]))
    names = ["input_ids", "attention_mask", "token_type_ids"]
    logging.getLogger("root").setLevel(logging.ERROR)
    model = model.float().eval()
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(model, sample, str(raw), input_names=names, output_names=["logits"],
                          opset_version=17, dynamo=False,
                          dynamic_axes={**{n: {0: "batch", 1: "seq"} for n in names}, "logits": {0: "batch"}})
    quant_pre_process(str(raw), str(pre), skip_symbolic_shape=True)
    quantize_dynamic(str(pre), str(out), weight_type=QuantType.QInt8, per_channel=True,
                     op_types_to_quantize=["MatMul", "Gather"])
    for f in (raw, pre, Path(str(raw) + ".data")):
        f.unlink(missing_ok=True)
    return out
