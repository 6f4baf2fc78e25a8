"""The offline sentence encoder: the contract every backend meets and where the packaged model's files are
(``contract``), the encoder loaded once per process (``encoder``), its backends (``onnx_backend``,
``torch_backend``) and the local ONNX export the ONNX backends run (``onnx_export``).

Imports: nothing of the package."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "encoder": ("Encoder", "get_encoder", "resolve_backend"),
    "contract": ("EmbeddingModelError", "PACKAGED_MODEL", "resolve_model_path"),
})
