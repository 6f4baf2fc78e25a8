"""The ``onnx`` and ``onnx-int8`` encoder backends: the model's local ONNX export
(:mod:`vectorstore.encoding.onnx_export`) run with onnxruntime, its tokenizer read with ``tokenizers`` alone.
Mean-pooling models only (:func:`check_mean_pooling`); onnxruntime is imported on first use."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np

from vectorstore.encoding.onnx_export import export_onnx
from vectorstore.encoding.contract import EmbeddingModelError, pool_spans


class OnnxBackend:
    """The ONNX half of :class:`vectorstore.encoding.encoder.Encoder` (a mixin): :meth:`_init_onnx` sets
    ``tokenizer``, ``dim``, ``max_seq_length`` and the onnxruntime session; :meth:`_onnx_encode` reads them."""

    def _init_onnx(self, name: str, path: str, quantized: bool, cache) -> None:
        folder = Path(path)
        if not (folder / "config.json").is_file():
            raise EmbeddingModelError(f"the ONNX backends need a local model folder; {name!r} is not one")
        check_mean_pooling(folder, name)
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


def check_mean_pooling(folder: Path, name: str) -> None:
    """Raises EmbeddingModelError when the model in ``folder`` pools otherwise than by the mean of its
    tokens (the pooling the ONNX backends compute themselves); a folder without a pooling config passes."""
    pooling = folder / "1_Pooling" / "config.json"
    if pooling.is_file():
        conf = json.loads(pooling.read_text())
        if not conf.get("pooling_mode_mean_tokens") or any(
                conf.get(k) for k in ("pooling_mode_cls_token", "pooling_mode_max_tokens",
                                      "pooling_mode_mean_sqrt_len_tokens")):
            raise EmbeddingModelError(f"the ONNX backends support mean-pooling models only; {name!r} pools otherwise")
