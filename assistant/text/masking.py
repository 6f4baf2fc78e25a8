"""Secrets kept off the screen: the API key, and any password or query value of the base URL, masked
in every text that reaches a user (an endpoint's URL in a message, an LLM's answer), also when it is
echoed reversed, spaced out or with separators, with each character doubled, hex-, base32-, base64- or
base85-encoded (also reversed, base64 twice, or the UTF-16 bytes in hex), escaped (``\\x73``, ``\\u0073``,
``%73``, ``&#115;``), as a list of numbers, upper-cased, in fullwidth (or other compatibility) characters
or Cyrillic and Greek lookalikes, cut by a character, or only half of it. The views that undo the
disguises are :mod:`assistant.text.echoes`; what is still not caught is named in docs/security.md.

An endpoint's own error text is never shown at all: :func:`endpoint_reason` gives a reason of ours for
assistant.answer.llm.explain_llm_error. The LLM's answer can repeat whatever the endpoint put into its context.
"""

from __future__ import annotations

import base64
import functools
import re

from assistant.settings import LLMSettings
from assistant.text.echoes import (PARTIAL, View, decoded_view, dedupe, deduped, encoded_middles, nfkc_view,
                                   squeezed, squeezed_forms)

# A word for the piece rule (:func:`_mask_spans`): the rest of a word around a piece of a secret goes
# with it, so an altered echo ("key=sk-…" cut or changed by a character) leaves nothing of the key.
_WORD = re.compile(r"[^\s'\"`<>(),;]+")
_LAST_SEPARATOR = re.compile(r".*[\s'\"`<>(),;]", re.S)  # greedy: ends after the text's last separator
_MIN_PIECE = 12  # characters: the shortest piece of a secret masked alone; shorter ones are ordinary words


def _piece_length(secret: str) -> int | None:
    """The shortest piece of ``secret`` masked on its own, in characters: half of it rounded down, at
    least ``_MIN_PIECE`` and at most ``_MAX_PIECE``. None when the secret is shorter than ``_MIN_PIECE`` (only its
    whole forms count)."""
    # Rounded down: a character left out, changed or added anywhere leaves a run of at least half of
    # an odd-length key too (25 characters, the 13th left out: 12 and 12).
    return min(max(_MIN_PIECE, len(secret) // 2), _MAX_PIECE) if len(secret) >= _MIN_PIECE else None


_MAX_PIECE = 20
"""Characters: the longest piece a long key needs before it is masked. A 164-character key cut to its first 38 by
an error message (or pydantic's 25 + 25 around "...") showed those, under half the key (an eleventh hostile round);
20 characters of a key are no word."""


@functools.lru_cache(maxsize=16)
def _secret_patterns(secret: str) -> tuple[tuple[re.Pattern, ...], re.Pattern | None]:
    """``(forms, pieces)`` for ``secret``, to match in a view's text (:func:`_views`).

    ``forms`` find it as an endpoint may echo it whole: as is (any case), reversed, spaced out (one to
    three non-alphanumeric characters between its characters, either direction), hex-encoded,
    base32-encoded (any case) and base64-encoded (standard or URL-safe); encoded alone or inside a
    longer encoded text, so at any byte offset, its stable middle (:func:`_encoded_middles`).
    ``pieces`` (None for a secret under ``_MIN_PIECE`` characters) finds any run of
    :func:`_piece_length` of its characters, either direction, any case: about 50 alternatives of a
    dozen or more characters (about 300 for a 160-character key), so a scan stays linear in the text."""
    forms = [re.compile(re.escape(secret), re.I)]
    if len(secret) < 8:
        return tuple(forms), None
    for s in (secret, secret[::-1]):
        forms.append(re.compile(r"[^A-Za-z0-9]{0,3}".join(map(re.escape, s)), re.I))
    raw = secret.encode()
    forms.append(re.compile(re.escape(raw.hex()), re.I))
    # base32 has one case of letters: a lower-cased echo is the same text
    forms += [re.compile(re.escape(m), re.I) for m in encoded_middles(raw, base64.b32encode, 5, 5)]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms += [re.compile(re.escape(m)) for m in encoded_middles(raw, encode, 6, 3)]
    w = _piece_length(secret)
    if not w:
        return tuple(forms), None
    runs = {s[i : i + w] for s in (secret, secret[::-1]) for i in range(len(s) - w + 1)}
    return tuple(forms), re.compile("|".join(map(re.escape, sorted(runs))), re.I)


@functools.lru_cache(maxsize=16)
def _disguises(secret: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(squeezed forms, the same deduped)`` of ``secret`` (:func:`assistant.text.echoes.squeezed_forms`)."""
    forms = squeezed_forms(secret)
    return tuple(forms), tuple(sorted({d for d in map(dedupe, forms) if len(d) >= 8}, key=lambda f: (-len(f), f)))


_GRAM = 6  # characters


@functools.lru_cache(maxsize=32)
def _grams(forms: tuple[str, ...]) -> frozenset[str]:
    """Every run of :data:`_GRAM` characters in what :func:`_squeezed_hits` looks for in ``forms``: a level
    holding none of them holds no form, and is not searched form by form."""
    return frozenset(f[i : i + _GRAM] for f in forms for i in range(_SHOWN, len(f) - _GRAM + 1))


def _views(text: str) -> tuple[View, View]:
    """The NFKC view of ``text`` and its decoded view (:mod:`assistant.text.echoes`)."""
    return nfkc_view(text), decoded_view(text)


def _mask_spans(text: str, secrets: list[str], views: tuple[View, View] | None = None) -> list[tuple[int, int]]:
    """The ``(start, end)`` character ranges of ``text`` to mask, sorted and disjoint: in the NFKC and the
    decoded view (:func:`_views`), every form of a secret (:func:`_secret_patterns`) and every piece of one
    with the rest of its word, up to the secret's length either side (what is left of a key altered by a
    character or two; bounded, so a stream need hold back only that much, :class:`StreamRedactor`); in the
    same views squeezed, and squeezed and deduped, every disguised form (:func:`_disguises`). Cost: linear
    in ``len(text)``. ``views``: :func:`_views` of ``text``, when already made."""
    found = []
    for view in views or _views(text):
        found += [view.span(s, e) for s, e in _view_spans(view.text, secrets) if e > s]
        flat = squeezed(view)
        for level, pick in ((flat, 0), (deduped(flat), 1)):
            grams = {level.text[i : i + _GRAM] for i in range(len(level.text) - _GRAM + 1)}
            for secret in secrets:
                forms = _disguises(secret)[pick]
                if not grams.isdisjoint(_grams(forms)):
                    for form in forms:
                        found += _squeezed_hits(level, form)
    spans: list[tuple[int, int]] = []
    for s, e in sorted(found):
        if spans and s < spans[-1][1]:  # only overlaps: a stream releases what touches a mask as it ends
            spans[-1] = (spans[-1][0], max(e, spans[-1][1]))
        else:
            spans.append((s, e))
    return spans


_SHOWN = 2
"""Characters: the first of a disguised form (squeezed) that are shown, in a stream and in a whole text
alike: a stream holds back what may be part of one only from 3 letters or digits on (or the last word of a
sentence would wait on every chance match in a base85 text), so the rest of the form is what is masked."""


def _squeezed_hits(level: View, form: str) -> list[tuple[int, int]]:
    """The original's ranges of ``form`` (a disguised form) in ``level`` (a squeezed view), less its first
    :data:`_SHOWN` characters."""
    rest, out = form[_SHOWN:], []
    at = level.text.find(rest)
    while at >= 0:
        out.append(level.tight_span(at, at + len(rest)))
        at = level.text.find(rest, at + 1)
    return out


def _view_spans(norm: str, secrets: list[str]) -> list[tuple[int, int]]:
    """The ranges of ``norm`` (a view's text) holding a form of a secret or a piece of one with its word."""
    found = []
    for secret in secrets:
        forms, pieces = _secret_patterns(secret)
        for pattern in forms:
            found += [m.span() for m in pattern.finditer(norm)]
        if pieces is None:
            continue
        n = len(secret)
        for word in _WORD.finditer(norm):
            pos = word.start()
            while hit := pieces.search(norm, pos, word.end()):
                found.append((max(word.start(), hit.start() - n), min(word.end(), hit.end() + n)))
                pos = hit.end()
    return found


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with each of the sorted, disjoint ``spans`` replaced by ``***``."""
    out, at = [], 0
    for s, e in spans:
        out += [text[at:s], "***"]
        at = e
    return "".join(out) + text[at:]


def _secrets(cfg: LLMSettings) -> list[str]:
    """The API key and any password or query value of the base URL."""
    secrets = [cfg.api_key.get_secret_value()] if cfg.api_key else []
    return [s for s in dict.fromkeys(secrets + url_secrets(cfg.base_url)) if len(s) >= 4]


def url_secrets(url: str | None) -> list[str]:
    """The password and the query values (``?api_key=…``) of ``url``, each as written and percent-decoded: a
    password written ``p%40ss`` is sent, and echoed, as ``p@ss`` (a tenth hostile round saw the decoded one
    unmasked). [] for no URL or one that does not parse."""
    from urllib.parse import unquote, unquote_plus, urlsplit

    if not isinstance(url, str) or not url:
        return []
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    found = [password, unquote(password)] if password else []
    for pair in parts.query.split("&"):
        value = pair.partition("=")[2]
        found += [value, unquote_plus(value), unquote(value)]
    return [s for s in dict.fromkeys(found) if len(s) >= 4]


def redact(text: str, cfg: LLMSettings) -> str:
    """``text`` with the API key, and any password or query value in the base URL, replaced by ``***``,
    also reversed, spaced out, encoded, in compatibility characters or in part (:func:`_mask_spans`):
    an LLM's answer may repeat what the endpoint put in its context, and URLs are shown in messages."""
    return mask_all(text, _secrets(cfg))


def mask_all(text: str, secrets: list[str]) -> str:
    """``text`` with each of ``secrets`` masked as :func:`redact` masks the key (every form, in part too)."""
    return _masked(text, _mask_spans(text, secrets)) if secrets else text


class StreamRedactor:
    """:func:`redact` over a stream of text pieces: :meth:`feed` returns what is safe to show, holding
    back, unmasked, the tail in which a secret (in one of its forms) may still start or a masked range
    still grow, until later pieces tell; :meth:`flush` returns the rest, masked. The pieces returned,
    joined, are ``redact`` of the whole text: nothing shown is ever taken back. What is held is the open
    last word (its last twice the key's length at most) or the text from where a form may start (a
    spaced-out key is the longest, about four times the key): usually a word, so the stream stays live.
    Without a secret, pieces pass as they come."""

    def __init__(self, cfg: LLMSettings):
        self.secrets = _secrets(cfg)
        plain = {f for s in self.secrets for f in _squeezed_forms(s)}
        disguised = {f for s in self.secrets for f in _disguises(s)[0]}
        self.forms = "\0".join(sorted(plain))  # one text each: a tail is part of a form when it is in it
        self.disguised = "\0".join(sorted(disguised))
        self.deduped = "\0".join(sorted({d for s in self.secrets for d in _disguises(s)[1]}))
        self.span = max(map(len, plain | disguised), default=0)  # letters and digits in the longest form
        self.reach = 2 * max((len(s) for s in self.secrets if _piece_length(s)), default=0)
        self.held = ""  # received, not yet shown: raw text, masked only once it is released

    def feed(self, piece: str) -> str:
        if not self.secrets:
            return piece
        text = self.held + piece
        views = _views(text)
        spans = _mask_spans(text, self.secrets, views)
        cut = self._held_from(text, views)
        for s, e in reversed(spans):  # a masked range is shown whole or not at all
            if s < cut < e:
                cut = s
        self.held = text[cut:]
        return _masked(text[:cut], [(s, e) for s, e in spans if e <= cut])

    def flush(self) -> str:
        text, self.held = self.held, ""
        return _masked(text, _mask_spans(text, self.secrets)) if text else ""

    def _held_from(self, text: str, views: tuple[View, View]) -> int:
        """Where the part of ``text`` that may still become (part of) a masked range starts
        (``len(text)``: none), the earliest of, in each view (:func:`_views`): the last ``reach``
        characters of its last word while that word is open (a piece of a secret glued to it masks that
        much of it); and the earliest of the last letters and digits that, read together (squeezed, or
        squeezed and deduped), are part of a form of a secret (what precedes them back to the letter or
        digit before is held too; for a disguised form, 3 or more: :data:`_SHOWN`). And an escape, entity or number list that may not be complete yet
        (:data:`assistant.text.echoes.PARTIAL`)."""
        cut = len(text)
        for view in views:
            if self.reach:
                last = _LAST_SEPARATOR.match(view.text)
                cut = min(cut, view.at(max(last.end() if last else 0, len(view.text) - self.reach)))
            flat = squeezed(view)
            cut = min(cut, self._tail(flat, self.forms), self._tail(flat, self.disguised, _SHOWN + 1),
                      self._tail(deduped(flat), self.deduped, _SHOWN + 1))
        partial = PARTIAL.search(text)
        return min(cut, partial.start()) if partial else cut

    def _tail(self, level: View, forms: str, least: int = 1) -> int:
        """Where the earliest of ``level``'s last characters (``least`` or more) that are together part of
        one of ``forms`` starts, back to the end of the character before them (the original's length: none)."""
        for j in range(max(0, len(level.text) - self.span), len(level.text) - least + 1):
            if level.text[j:] in forms:
                return level.ends[j - 1] if j else 0
        return level.size


def _squeezed_forms(secret: str) -> list[str]:
    """The texts :func:`_secret_patterns` finds, as lower-case letters and digits only (a piece is part
    of the first two)."""

    def squeeze(t: str) -> str:
        return "".join(c for c in t.lower() if c.isascii() and c.isalnum())

    raw = secret.encode()
    forms = [secret, secret[::-1], raw.hex(), *encoded_middles(raw, base64.b32encode, 5, 5)]
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        forms += encoded_middles(raw, encode, 6, 3)
    return [squeeze(f) for f in forms if squeeze(f)]


def _server_text(exc: BaseException) -> str:
    """The server's own error message, else the exception's: read to choose a reason of our own
    (:func:`endpoint_reason`), never shown, since it may echo the key in any form."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    return str(inner["message"]) if isinstance(inner, dict) and inner.get("message") else str(exc)


_STATUS_REASONS = {
    403: "the API key may not use this model or endpoint",
    405: "check the base URL (it should end in /v1)",
    408: "the server timed out the request",
    413: "the request is too large for the server",
    415: "the server does not take JSON requests here: check the base URL",
    422: "the server could not process the request: check the model name (OPENAI_MODEL)",
}


def endpoint_reason(exc: BaseException, status: int, cfg: LLMSettings) -> str:
    """Our own one-line reason for an endpoint's HTTP ``status`` (a 400's chosen by what the server's
    message is about), shown instead of the server's words."""
    if status != 400:
        return _STATUS_REASONS.get(status, "the server's log says why")
    said = _server_text(exc).lower()
    if re.search(r"context|too long|maximum.{0,40}tokens|token limit|too many tokens", said):
        return (f"the prompt is longer than the model accepts (lower PAPER_ASSISTANT_LLM__CONTEXT_WINDOW, now "
                f"{cfg.context_window})")
    if "stream_options" in said:
        return "the server does not accept the request's stream options"
    if "model" in said:
        return "check the model name (OPENAI_MODEL)"
    return "the server's log says why"
