"""Secrets kept off the screen: the API key, and any password or query value of the base URL, masked
in every text that reaches a user (an endpoint's URL in a message, an LLM's answer), also when it is
echoed reversed, spaced out, hex- or base64-encoded, upper-cased or cut by a character.

An endpoint's own error text is never shown at all: :func:`endpoint_reason` gives a reason of ours for
assistant.llm.explain_llm_error. The LLM's answer can repeat whatever the endpoint put into its context.
"""

from __future__ import annotations

import base64
import re

from assistant.settings import LLMSettings


def _secret_patterns(secret: str) -> list[re.Pattern]:
    """Patterns for ``secret`` and its simple transforms as an endpoint may echo them: as is (any case),
    reversed, spaced out (one to three non-alphanumeric characters between its characters, either
    direction), hex-encoded, and base64-encoded (standard or URL-safe; alone or inside a longer
    encoded text, so at any of the three byte alignments, its stable middle)."""
    out = [re.compile(re.escape(secret), re.I)]
    if len(secret) < 8:
        return out
    for s in (secret, secret[::-1]):
        out.append(re.compile(r"[^A-Za-z0-9]{0,3}".join(map(re.escape, s)), re.I))
    out.append(re.compile(re.escape(secret.encode().hex()), re.I))
    raw = secret.encode()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        for pad in range(3):
            enc = encode(b"\0" * pad + raw).decode()
            first = -(-8 * pad // 6)  # the first character holding no bit of the padding
            last = (8 * (pad + len(raw))) // 6  # characters before it hold no bit of what follows
            out.append(re.compile(re.escape(enc[first:last])))
    return out


def _secrets(cfg: LLMSettings) -> list[str]:
    """The API key and any password or query value of the base URL."""
    from urllib.parse import parse_qsl, urlsplit

    secrets = [cfg.api_key.get_secret_value()] if cfg.api_key else []
    if cfg.base_url:
        try:
            parts = urlsplit(cfg.base_url)
            secrets.append(parts.password or "")
            secrets += [v for _, v in parse_qsl(parts.query)]  # "?api_key=…": a key in the URL's query
        except ValueError:
            pass
    return [s for s in secrets if len(s) >= 4]


def redact(text: str, cfg: LLMSettings) -> str:
    """``text`` with the API key, and any password or query value in the base URL, replaced by ``***``,
    also reversed, spaced out, hex- or base64-encoded (:func:`_secret_patterns`): an LLM's answer may
    repeat what the endpoint put in its context, and URLs are shown in messages."""
    for secret in _secrets(cfg):
        for pattern in _secret_patterns(secret):
            text = pattern.sub("***", text)
        if len(secret) >= 12:
            # Echoed altered (upper-cased, cut by a character, wrapped in other text): mask any word that
            # shares a run of about two thirds of the key with it.
            w = max(8, len(secret) * 2 // 3)
            pieces = {secret.lower()[i : i + w] for i in range(len(secret) - w + 1)}
            text = re.sub(r"[^\s'\"`<>(),;]+", lambda m, pieces=pieces: "***" if any(
                x in m.group().lower() for x in pieces) else m.group(), text)
    return text


class StreamRedactor:
    """:func:`redact` over a stream of text pieces: :meth:`feed` returns what is safe to show, holding
    back the tail that could be the start (or a part) of a secret in one of its forms until the next
    piece tells; :meth:`flush` returns the rest. Without a secret, pieces pass as they come."""

    def __init__(self, cfg: LLMSettings):
        self.cfg = cfg
        self.forms = sorted({f for s in _secrets(cfg) for f in _squeezed_forms(s)}, key=len)
        self.span = max(map(len, self.forms), default=0)
        self.held = ""

    def feed(self, piece: str) -> str:
        if not self.forms:
            return piece
        text = redact(self.held + piece, self.cfg)
        cut = self._held_from(text)
        self.held = text[cut:]
        return text[:cut]

    def flush(self) -> str:
        text, self.held = redact(self.held, self.cfg) if self.held else "", ""
        return text

    def _held_from(self, text: str) -> int:
        """Where the part of ``text`` that may still turn into a secret starts (``len(text)``: none):
        the earliest of its last letters and digits that, read together, are part of a form of it,
        moved back to the start of their word (:func:`redact` masks whole words)."""
        at = [i for i, c in enumerate(text) if c.isascii() and c.isalnum()][-self.span:]
        squeezed = "".join(text[i] for i in at).lower()
        for j in range(len(squeezed)):
            if any(squeezed[j:] in f for f in self.forms):
                start = at[j]
                while start > 0 and not text[start - 1].isspace():
                    start -= 1
                return start
        return len(text)


def _squeezed_forms(secret: str) -> list[str]:
    """The forms :func:`_secret_patterns` finds, as lower-case letters and digits only."""

    def squeeze(t: str) -> str:
        return "".join(c for c in t.lower() if c.isascii() and c.isalnum())

    raw = secret.encode()
    forms = [secret, secret[::-1], raw.hex()] + [encode(b"\0" * pad + raw).decode()
                                                  for encode in (base64.b64encode, base64.urlsafe_b64encode)
                                                  for pad in range(3)]
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
