"""The ``torch`` encoder backend: sentence-transformers on PyTorch, the reference the ONNX backends
are measured against. sentence_transformers, transformers and torch are imported on first use."""

from __future__ import annotations

import numpy as np

from vectorstore.encoding.contract import EmbeddingModelError, pool_spans


class TorchBackend:
    """The torch half of :class:`vectorstore.encoding.encoder.Encoder` (a mixin): :meth:`_init_torch` sets ``model``,
    ``tokenizer``, ``dim`` and ``max_seq_length``; :meth:`_torch_encode_spans` reads them."""

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
