"""Text made safe and shown: untrusted text for a terminal and as valid Unicode (``sanitize``), secrets kept off the
screen (``masking``), and math and emphasis in abstracts rendered at the edge (``markup``).

Imports: ``settings`` and :mod:`vectorstore` only."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "markup": ("markup", "plain"),
    "masking": ("StreamRedactor", "endpoint_reason", "redact"),
    "sanitize": ("TerminalSafe", "strip_controls", "valid_text", "without_pictographs"),
})
