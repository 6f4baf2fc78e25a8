"""The local ONNX export of a sentence-transformers model folder (:func:`export_onnx`): fp32, and
its dynamic int8 quantization, cached on disk and shared by every checkout.

Exports are cached under ``~/.cache/paper-assistant/onnx/`` (:func:`default_onnx_cache`, or ``cache``), keyed
by the weights file's content and the onnxruntime version; the first export takes about 10 s and needs
torch and transformers (imported then, never at start-up)."""

from __future__ import annotations

import hashlib
import json
from functools import lru_cache
from pathlib import Path

from vectorstore.encoding.contract import EmbeddingModelError


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
