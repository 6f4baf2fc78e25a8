"""Text made safe and shown: untrusted text for a terminal and as valid Unicode (``sanitize``), secrets kept off the
screen (``masking``; the configured ones at each error boundary, ``configured``), and math and emphasis in abstracts rendered at the edge (``markup``).

Imports: ``settings`` and :mod:`vectorstore` only."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "markup": ("markup", "plain"),
    "configured": ("add_secret", "configured_secrets", "mask_secrets", "masked_strings", "shown_part"),
    "masking": ("StreamRedactor", "endpoint_reason", "mask_all", "redact", "url_secrets"),
    "sanitize": ("TerminalSafe", "strip_controls", "valid_text", "without_pictographs"),
})
