"""Untrusted text made safe: for a terminal (:func:`strip_controls`) and as valid Unicode (:func:`valid_text`).

Abstracts, titles, questions and LLM replies are untrusted. Printed raw, an escape sequence in one
of them is executed by the terminal: OSC 52 (``ESC ] 52 ; c ; <base64> BEL``) writes the clipboard,
OSC 8 hides a link behind text, CSI sequences move the cursor and repaint lines, ``\\r`` overwrites
what was printed. click strips only CSI colour codes, and only when output is not a terminal.
The CLI writes through :class:`TerminalSafe` (see ``assistant.cli.main``).
"""

from __future__ import annotations

import re
import unicodedata

# ECMA-48: 7-bit (ESC x) and 8-bit (C1) forms. String sequences (OSC, DCS, SOS, PM, APC) end at BEL or
# ST; one cut short ends at the line's end, so it cannot swallow the rest of the output.
_CONTROL = re.compile(
    r"(?:\x1b\]|\x9d)[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # OSC … BEL/ST
    r"|(?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?"  # DCS, SOS, PM, APC … ST
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]"  # CSI (cursor, colours, erase, …)
    r"|\x1b[ -/]*[0-~]"  # other escape sequences: ESC c (reset), ESC ( 0 (charset), ESC 7 …
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"  # any other C0/C1 control, a lone ESC included; \t and \n stay
    r"|[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]"  # bidi embeddings, overrides, isolates and marks: they reorder a line
)


_SURROGATE = re.compile(r"[\ud800-\udfff]")


def valid_text(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD, as a UTF-8 decoder with ``errors="replace"``
    would have. Python decodes command-line bytes that are not UTF-8 (a Latin-1 "café") to lone
    surrogates, and JSON may carry one (``"\\udcff"``); tokenizers and JSON encoders refuse them."""
    return _SURROGATE.sub("\ufffd", text)


# Emoji parts that are not themselves symbols: joiner, variation selectors, keycap, skin tones, tags.
_EMOJI_PARTS = re.compile("[\u200d\ufe0e\ufe0f\u20e3\U0001f3fb-\U0001f3ff\U000e0020-\U000e007f]")


def without_pictographs(text: str) -> str:
    """``text`` without emoji and other pictographic symbols (Unicode category So, with the parts that
    join or modify them). MiniLM's WordPiece vocabulary has no token for most of them: each becomes
    [UNK], which pulls a question's embedding away from its topic ("🤖 which paper makes MoE faster"
    scored 0.32 against the OmniMoE sentence that scores 0.42 without the emoji, below the
    abstention thresholds). No question of the dev or training sets holds one."""
    text = _EMOJI_PARTS.sub("", text)
    return "".join(c for c in text if unicodedata.category(c) != "So")


def strip_controls(text: str) -> str:
    """``text`` without control sequences or control characters (tabs and newlines kept)."""
    return _CONTROL.sub("", text)


class TerminalSafe:
    """A text stream that writes ``strip_controls(text)`` to ``stream`` (then ``mask`` of it, when given); everything
    else is the stream's.

    It has no ``buffer``, so writers that look for one (click does, for bytes) cannot go around it.
    """

    def __init__(self, stream, mask=None):
        self.unsafe = stream
        """The wrapped stream, for output the program makes itself (the progress bar's cursor codes)."""
        self.mask = mask
        """A function applied to each piece written after the controls are stripped, or None: stderr's masks the
        configured secrets (:func:`assistant.text.configured.mask_secrets`), each piece whole (a line, as click
        and logging write one)."""

    def write(self, text: str) -> int:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", "replace")
        safe = strip_controls(valid_text(text))
        self.unsafe.write(self.mask(safe) if self.mask else safe)
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str):
        if name == "buffer":
            raise AttributeError(name)
        return getattr(self.unsafe, name)
