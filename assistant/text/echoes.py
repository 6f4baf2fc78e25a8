"""Views of a text in which a secret echoed in disguise reads as itself, each character mapped back to the
characters of the text it came from, and the disguised forms of a secret to look for in them
(:mod:`assistant.text.masking` masks what matches, in the text as sent).

The views, each a fixed rule (no guessing, no model):

- :func:`nfkc_view`: the text NFKC-normalized a character at a time ('ｓｋ－１' -> 'sk-1').
- :func:`decoded_view`: that, with escapes decoded (``\\x73``, ``\\u0073``, ``\\u{73}``, ``\\U00000073``,
  ``%73``, octal ``\\163``), HTML entities (``&#115;``, ``&#x73;``, ``&amp;``) and lists of two or more numbers
  (``[115, 107, 45]``, ``0x73, 0x6b``: each number one character), then accents dropped (NFKD without
  combining marks) and Cyrillic and Greek letters that look like Latin ones read as those (:data:`CONFUSABLES`).
- :func:`squeezed`: a view's ASCII letters and digits only, lower-cased: separators, spaces, colons and
  punctuation dropped ("73:6b:2d", "7 3 6 b").
- :func:`deduped`: a squeezed view with each run of one character kept once ("sskk--" -> "sk").

:func:`squeezed_forms` are what a squeezed view is searched for: the secret as is, hex (of its UTF-8 or
UTF-16 bytes; of its UTF-8 bytes reversed), its bytes in binary (8 digits each), base32, base64 (standard or URL-safe; of the secret, of it reversed, and base64 of its
base64), base85 and Ascii85, each also reversed; an encoded form inside a longer encoded text is found by
its stable middle (:func:`encoded_middles`).
"""

from __future__ import annotations

import base64
import html
import re
import unicodedata
from dataclasses import dataclass

_LOOKALIKES = {
    "a": "аАαΑ", "b": "вВβΒ", "c": "сС", "d": "ԁ", "e": "еЕёЁεΕ", "h": "нНһηΗ", "i": "іІїιΙӏ", "j": "јЈ",
    "k": "кКκΚ", "m": "мМμΜ", "n": "νΝ", "o": "оОοΟ", "p": "рРρΡ", "q": "ԛ", "s": "ѕЅ", "t": "тТτΤ",
    "u": "υ", "w": "ԝ", "x": "хХχΧ", "y": "уУүҮΥ", "z": "ζΖ",
}
CONFUSABLES = {ord(c): latin for latin, cs in _LOOKALIKES.items() for c in cs}
"""Cyrillic and Greek letters drawn like a Latin letter (either case) → that letter, lower-case. Digits have
no entry: a letter drawn like a digit (Cyrillic 'О' for '0', 'З' for '3') is not read as one."""

_ITEM = r"(?:0[xX][0-9A-Fa-f]{1,6}|\d{1,7})"
_NUMBERS = re.compile(rf"(?<![\w.]){_ITEM}(?:\s*[,;]\s*{_ITEM})+(?![\w.])")
_ESCAPE = re.compile(r"\\x([0-9A-Fa-f]{2})|\\u\{([0-9A-Fa-f]{1,6})\}|\\u([0-9A-Fa-f]{4})|\\U([0-9A-Fa-f]{8})"
                     r"|%([0-9A-Fa-f]{2})|&#[xX]([0-9A-Fa-f]{1,6});?|&#(\d{1,7});?|(&[A-Za-z][A-Za-z0-9]{1,31};)"
                     r"|\\([0-3][0-7]{2})"  # an octal escape of a byte (C, printf): three digits, as echoed
                     r"|\\([ntr])")  # a line break or tab as a file name is shown: it split a key in two (a 10th round)
PARTIAL = re.compile(rf"(?:\\[xuU]?\{{?[0-9A-Fa-f]{{0,7}}|&#?[xX]?[0-9A-Za-z]{{0,7}}|%[0-9A-Fa-f]?|(?<![\w.])"
                     rf"[\[({{]?\s*(?:{_ITEM}\s*[,;]\s*)*(?:{_ITEM}|0[xX]?)?)$")
"""The end of a text that may be the start of an escape, an entity or a number list (``\\x7``, ``&#11``,
``[115, 10``, with its bracket): a stream holds it back until it is complete."""


@dataclass(frozen=True)
class View:
    """``text`` derived from an original text: its character ``i`` came from ``original[starts[i]:ends[i]]``."""

    text: str
    starts: list[int]
    ends: list[int]
    size: int  # the original's length
    tight: tuple[list[int], list[int]] | None = None
    """For a view of runs (:func:`deduped`): where each run's last stretch of touching characters starts, and where
    its first such stretch ends, in the original. A run joined across other characters ("3" in "abc123: 38") is
    one character of a form only up to that gap (:meth:`tight_span`)."""

    def span(self, s: int, e: int) -> tuple[int, int]:
        """The original's range for ``text[s:e]`` (``e > s``)."""
        return self.starts[s], self.ends[e - 1]

    def tight_span(self, s: int, e: int) -> tuple[int, int]:
        """:meth:`span`, but a run at either end only as far as it is unbroken from the form's side: the mask of a
        key ending in "3" took ": 3" of "key: 38" with it (a tenth hostile round)."""
        if self.tight is None:
            return self.span(s, e)
        return self.tight[0][s], self.tight[1][e - 1]

    def at(self, i: int) -> int:
        """Where ``text[i:]`` starts in the original (its length for ``i == len(text)``)."""
        return self.starts[i] if i < len(self.text) else self.size


def _char_map(view: View, fn) -> View:
    """``view`` with each character ``c`` replaced by ``fn(c)`` (a string, maybe empty), from where ``c`` came."""
    text, starts, ends = [], [], []
    for c, s, e in zip(view.text, view.starts, view.ends):
        out = fn(c)
        text.append(out)
        starts += [s] * len(out)
        ends += [e] * len(out)
    return View("".join(text), starts, ends, view.size)


def nfkc_view(text: str) -> View:
    """``text`` NFKC-normalized a character at a time."""
    view = View(text, list(range(len(text))), list(range(1, len(text) + 1)), len(text))
    return view if text.isascii() else _char_map(view, lambda c: unicodedata.normalize("NFKC", c) if ord(c) > 127 else c)


def _decode_escape(m: re.Match) -> str | None:
    if m.group(10):
        return {"n": "\n", "t": "\t", "r": "\r"}[m.group(10)]
    if m.group(9):
        return chr(int(m.group(9), 8))
    if m.group(8):
        named = html.unescape(m.group(8))
        return named if named != m.group(8) else None
    code = next(g for g in m.groups()[:7] if g is not None)
    value = int(code, 10 if m.group(7) else 16)
    return chr(value) if value <= 0x10FFFF and not 0xD800 <= value <= 0xDFFF else None


def _decoded(view: View) -> View:
    """``view`` with escapes, entities and number lists decoded (see the module docstring)."""
    text, starts, ends, at = [], [], [], 0
    found = [(m.start(), m.end(), [(_decode_escape(m), m.start(), m.end())]) for m in _ESCAPE.finditer(view.text)]
    for m in _NUMBERS.finditer(view.text):
        items = [(int(i.group(), 0) if i.group()[:2].lower() == "0x" else int(i.group()), m.start() + i.start(),
                  m.start() + i.end()) for i in re.finditer(_ITEM, m.group())]
        if all(v <= 0x10FFFF and not 0xD800 <= v <= 0xDFFF for v, _, _ in items):
            found.append((m.start(), m.end(), [(chr(v), s, e) for v, s, e in items]))
    for s, e, pieces in sorted(found):
        if s < at or any(p is None for p, _, _ in pieces):
            continue  # inside one decoded already, or no character
        text.append(view.text[at:s])
        starts += view.starts[at:s]
        ends += view.ends[at:s]
        for piece, ps, pe in pieces:
            text.append(piece)
            starts += [view.starts[ps]] * len(piece)
            ends += [view.ends[pe - 1]] * len(piece)
        at = e
    text.append(view.text[at:])
    return View("".join(text), starts + view.starts[at:], ends + view.ends[at:], view.size)


def _plain(c: str) -> str:
    if c.isascii():
        return c
    c = CONFUSABLES.get(ord(c), c)
    return "".join(d for d in unicodedata.normalize("NFKD", c) if not unicodedata.combining(d))


def decoded_view(text: str) -> View:
    """:func:`nfkc_view` with escapes, entities and number lists decoded, accents dropped and Cyrillic and
    Greek lookalikes read as Latin letters."""
    return _char_map(_decoded(nfkc_view(text)), _plain)


def squeezed(view: View) -> View:
    """The ASCII letters and digits of ``view``, lower-cased."""
    return _char_map(view, lambda c: c.lower() if c.isascii() and c.isalnum() else "")


def deduped(view: View) -> View:
    """``view`` with each run of one character as one (spanning the whole run)."""
    text, starts, ends, last_start, first_end = [], [], [], [], []
    for c, s, e in zip(view.text, view.starts, view.ends):
        if text and text[-1] == c:
            if s > ends[-1]:  # a gap in the original: the run's last stretch starts here
                last_start[-1] = s
            elif first_end[-1] == ends[-1]:  # still touching its first stretch
                first_end[-1] = e
            ends[-1] = e
        else:
            text.append(c)
            starts.append(s)
            ends.append(e)
            last_start.append(s)
            first_end.append(e)
    return View("".join(text), starts, ends, view.size, (last_start, first_end))


def squeeze(text: str) -> str:
    """``text``'s ASCII letters and digits, lower-cased (what :func:`squeezed` keeps)."""
    return "".join(c for c in text.lower() if c.isascii() and c.isalnum())


def dedupe(text: str) -> str:
    """``text`` with each run of one character as one."""
    return "".join(c for i, c in enumerate(text) if not i or text[i - 1] != c)


def encoded_middles(raw: bytes, encode, bits: int, block: int) -> list[str]:
    """The characters of ``encode(raw)`` (``bits`` bits a character, input read ``block`` bytes at a time)
    that depend on ``raw`` alone, at each of the ``block`` byte offsets ``raw`` can have inside a longer
    encoded text: what an encoded echo of it always contains."""
    out = []
    for pad in range(block):
        enc = encode(b"\0" * pad + raw).decode()
        first = -(-8 * pad // bits)  # the first character holding no bit of the padding
        last = (8 * (pad + len(raw))) // bits  # characters before it hold no bit of what follows
        out.append(enc[first:last])
    return [m for m in out if m]


def _base85_middles(raw: bytes, encode) -> list[str]:
    """As :func:`encoded_middles` for a base85 ``encode`` (4 bytes → 5 characters, read as one number):
    the groups of characters of the blocks that hold ``raw``'s bytes only."""
    out = []
    for pad in range(4):
        enc = encode(b"\1" * pad + raw).decode()  # not zeros: Ascii85 writes a block of four as "z"
        first, last = -(-pad // 4), (pad + len(raw)) // 4
        out.append(enc[5 * first : 5 * last])
    return [m for m in out if m]


MIN_FORM = 8
"""Characters: a squeezed form shorter than this is not looked for (it could be an ordinary word)."""


def squeezed_forms(secret: str) -> list[str]:
    """The disguised forms of ``secret`` as :func:`squeeze` leaves them (see the module docstring), each at
    least :data:`MIN_FORM` characters, longest first; none for a secret under ``MIN_FORM`` characters."""
    if len(secret) < MIN_FORM:
        return []
    raw = secret.encode()
    forms = [secret, raw.hex(), raw[::-1].hex(), secret.encode("utf-16-be").hex(), secret.encode("utf-16-le").hex(),
             "".join(f"{b:08b}" for b in raw),
             *encoded_middles(raw, base64.b32encode, 5, 5), *_base85_middles(raw, base64.b85encode),
             *_base85_middles(raw, base64.a85encode)]
    for source in (raw, raw[::-1]):
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms += encoded_middles(source, encode, 6, 3)
    for inner in encoded_middles(raw, base64.b64encode, 6, 3):  # base64 of its base64
        forms += encoded_middles(inner.encode(), base64.b64encode, 6, 3)
    squeezed_ = {squeeze(f) for f in forms}
    return sorted({f for s in squeezed_ for f in (s, s[::-1]) if len(f) >= MIN_FORM}, key=lambda f: (-len(f), f))
