"""The reply budget on the wire: how much of an endpoint's reply is read, in characters and in bytes.

The budget in characters (:func:`reply_limit`) counts the text of parsed pieces, so it never sees bytes
that never become a piece: a stream line that never ends (the SSE reader holds it whole, waiting for its
newline) or a non-streamed reply that never ends (read whole before it is parsed). Both grew memory without
limit. So the HTTP client under the chat model (:func:`budget_client`) also counts each response body as it
arrives and stops past :func:`reply_byte_limit` with :class:`WireOverBudget`, before any parser holds it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from assistant.settings import LLMSettings

if TYPE_CHECKING:  # imported when a chat model is made: an answer without an LLM needs no HTTP client
    import httpx2

# A streamed piece's envelope (id, model, created, choice, finish_reason, usage) is about 200-400 bytes of
# JSON around its text; 2 KiB each leaves room for verbose servers and still bounds a reply to a few MiB.
ENVELOPE_BYTES = 2048
# A character of text is at most 6 bytes on the wire (a \uXXXX escape; 4 as raw UTF-8).
BYTES_PER_CHAR = 6


class LLMStreamIncomplete(RuntimeError):
    """The answer stream ended without the protocol's end mark: ``finish_reason`` is None (the server
    stopped sending) or ``"length"`` (the reply budget, ``max_tokens``, ran out)."""

    def __init__(self, finish_reason: str | None):
        super().__init__(f"stream ended with finish_reason={finish_reason!r}")
        self.finish_reason = finish_reason


class LLMReplyOverBudget(LLMStreamIncomplete):
    """The reply ran past what ``max_tokens`` allows (an endpoint that ignores it): more than ``limit``
    characters (:func:`reply_limit`), or more pieces than a reply of ``max_tokens`` tokens comes in."""

    unit = "characters"

    def __init__(self, limit: int):
        super().__init__("length")
        self.limit = limit


class WireOverBudget(LLMReplyOverBudget):
    """A reply body ran past :func:`reply_byte_limit` (``.limit``, in bytes) before it could be parsed."""

    unit = "bytes"


class CompressedReply(RuntimeError):
    """The endpoint compressed its reply (``.encoding``: its Content-Encoding) though the client asks for none:
    a 2 kB body of two gzip layers expanded to 1 GiB in one decoding step (a hostile round, #35), before any
    byte budget could count it, so compressed replies are refused unread."""

    def __init__(self, encoding: str):
        super().__init__(f"compressed reply ({encoding})")
        self.encoding = encoding


def reply_limit(cfg: LLMSettings) -> int:
    """The most characters of a reply read: ``max_tokens`` × ``reply_chars_per_token`` (8: twice English's
    4 characters a token). Past it the client stops reading; a 50 MB reply kept an answer busy 300 s."""
    return int(cfg.max_tokens * cfg.reply_chars_per_token)


def reply_byte_limit(cfg: LLMSettings) -> int:
    """The most bytes of one HTTP reply body read: the text budget (:func:`reply_limit` characters, 6 bytes
    each at most) plus an envelope of ``ENVELOPE_BYTES`` for each of the ``2 × max_tokens + 16`` pieces the
    stream reader accepts. 512 tokens: about 2.1 MiB."""
    return BYTES_PER_CHAR * reply_limit(cfg) + ENVELOPE_BYTES * (2 * cfg.max_tokens + 16)


def budget_client(cfg: LLMSettings) -> httpx2.Client:
    """The openai client's default HTTP client (redirects, connection limits, proxies from the environment),
    asking for uncompressed replies (``Accept-Encoding: identity``) and reading each response body through a
    counter that raises :class:`WireOverBudget` past :func:`reply_byte_limit`; a compressed reply raises
    :class:`CompressedReply` before its body is read. A response hook, not a transport, so that a proxy from
    the environment (which the client mounts as its own transport) is counted too: the hook runs after the
    headers and before the body is read, streamed or not."""
    # The openai client (3.x) is built on httpx2, the successor of httpx; its types are the ones it checks.
    import httpx2
    import openai

    limit = reply_byte_limit(cfg)

    class CountedBody(httpx2.SyncByteStream):
        def __init__(self, inner: httpx2.SyncByteStream):
            self._inner, self._read = inner, 0

        def __iter__(self) -> Iterator[bytes]:
            for piece in self._inner:
                self._read += len(piece)
                if self._read > limit:
                    raise WireOverBudget(limit)
                yield piece

        def close(self) -> None:
            self._inner.close()

    def count(response: httpx2.Response) -> None:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            response.close()
            raise CompressedReply(encoding[:40])
        response.stream = CountedBody(response.stream)

    return openai.DefaultHttpxClient(event_hooks={"response": [count]}, headers={"Accept-Encoding": "identity"})


def sent_key(cfg: LLMSettings) -> str:
    """The API key the client sends: ``cfg``'s without surrounding whitespace, or a stand-in (local servers such
    as Ollama and llama.cpp ignore the key, but the openai client insists on one). Raises ValueError for a key
    with a control character inside (a header cannot carry it)."""
    if not cfg.api_key:
        return "not-needed"
    key = cfg.api_key.get_secret_value().strip()  # a trailing newline from a key file is no part of the key
    if not key or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        # An HTTP header cannot carry it: the client failed as "cannot connect … is the server running?" (a
        # third hostile round). Raised before any request; the key itself is not shown.
        raise ValueError("OPENAI_API_KEY holds a line break or other control character inside it: set it to "
                         "the key alone, on one line")
    return key


def endpoint_client(cfg: LLMSettings, timeout: float):
    """A plain ``openai.OpenAI`` client for ``cfg``'s endpoint (the model list, the system-role probe) over
    :func:`budget_client`: every call of it is read within the byte budget too (an endless model list grew
    ``doctor`` to 22 GB). No retries; ``timeout`` in seconds per HTTP read."""
    import openai

    return openai.OpenAI(base_url=cfg.base_url, api_key=sent_key(cfg), timeout=timeout, max_retries=0,
                         http_client=budget_client(cfg))


def over_budget(exc: BaseException) -> LLMReplyOverBudget | CompressedReply | None:
    """The wire's error behind ``exc`` (over the budget, or compressed): itself, or the cause of the
    APIConnectionError the openai client wraps it in when it was raised while a non-streamed reply was read.
    None for any other error."""
    for err in (exc, exc.__cause__, exc.__context__):
        if isinstance(err, (LLMReplyOverBudget, CompressedReply)):
            return err
    return None
