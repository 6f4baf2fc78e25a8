"""The reply budget on the wire: how much of an endpoint's reply is read, in characters and in bytes.

The budget in characters (:func:`reply_limit`) counts the text of parsed pieces, so it never sees bytes
that never become a piece: a stream line that never ends (the SSE reader holds it whole, waiting for its
newline) or a non-streamed reply that never ends (read whole before it is parsed). Both grew memory without
limit. So the HTTP client under the chat model (:func:`budget_client`) also counts each response body as it
arrives and stops past :func:`reply_byte_limit` with :class:`WireOverBudget`, before any parser holds it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, TypeVar

from assistant.settings import LLMSettings

if TYPE_CHECKING:  # imported when a chat model is made: an answer without an LLM needs no HTTP client
    import httpx2

T = TypeVar("T")

# A streamed piece's envelope (id, model, created, choice, finish_reason, usage) is about 200-400 bytes of
# JSON around its text; 2 KiB each leaves room for verbose servers and still bounds a reply to a few MiB.
ENVELOPE_BYTES = 2048
# A character of text is at most 6 bytes on the wire (a \uXXXX escape; 4 as raw UTF-8).
BYTES_PER_CHAR = 6


class LLMStreamIncomplete(RuntimeError):
    """The answer stream ended without the protocol's end mark: ``finish_reason`` is None (the server
    stopped sending), ``"length"`` (the reply budget, ``max_tokens``, ran out) or ``"content_filter"`` (the
    endpoint's filter cut it)."""

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
    """A reply body ran past :func:`reply_byte_limit` (``.limit``, in bytes) before it could be parsed; ``.status``:
    the response's HTTP status (an error's endless body is no answer run long: a hostile round named it one)."""

    unit = "bytes"

    def __init__(self, limit: int, status: int = 200):
        super().__init__(limit)
        self.status = status


class ReplyAbandoned(RuntimeError):
    """The reply was still being read when its waiter had left (its deadline ran out): read on, a reply trickled
    a byte a second kept its connection and thread to the byte budget, about 24 days (a fifth hostile round)."""


_call = threading.local()
"""``left``: the Event that :func:`iter_with_deadline` sets once its waiter has left, seen by the thread reading."""


class RedirectedAway(RuntimeError):
    """The endpoint redirected a request to another origin (``.origin``: ``scheme://host:port``), which is not
    followed: the question and its abstracts were POSTed again to wherever a 307 pointed (a fourth hostile
    round), and doctor reported that server's model list as the endpoint's."""

    def __init__(self, origin: str):
        super().__init__(f"redirected to {origin}")
        self.origin = origin


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
    """The openai client's default HTTP client (redirects within the endpoint's origin only, else
    :class:`RedirectedAway`; connection limits, proxies from the environment),
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
        def __init__(self, inner: httpx2.SyncByteStream, status: int):
            # The waiter of the call reading this body (iter_with_deadline): once it has left (a deadline ran
            # out), the read stops at the next piece and the connection is dropped, not kept to the budget.
            self._inner, self._read, self._left, self._status = inner, 0, getattr(_call, "left", None), status

        def __iter__(self) -> Iterator[bytes]:
            for piece in self._inner:
                self._read += len(piece)
                if self._read > limit:
                    raise WireOverBudget(limit, self._status)
                if self._left is not None and self._left.is_set():
                    raise ReplyAbandoned()
                yield piece

        def close(self) -> None:
            self._inner.close()

    def count(response: httpx2.Response) -> None:
        encoding = response.headers.get("content-encoding", "").strip().lower()
        if encoding not in ("", "identity"):
            response.close()
            raise CompressedReply(encoding[:40])
        response.stream = CountedBody(response.stream, response.status_code)

    def origin(url: httpx2.URL) -> str:  # an IPv6 host in brackets, so the note names a URL that parses (round nine)
        host = f"[{url.host}]" if ":" in url.host else url.host
        return f"{url.scheme}://{host}:{url.port or (443 if url.scheme == 'https' else 80)}"

    home = origin(httpx2.URL(cfg.base_url or "https://api.openai.com/v1"))

    def same_origin(request: httpx2.Request) -> None:  # every request sent, redirects included
        if origin(request.url) != home:
            raise RedirectedAway(origin(request.url))

    return openai.DefaultHttpxClient(event_hooks={"request": [same_origin], "response": [count]},
                                     headers={"Accept-Encoding": "identity"})


def sent_key(cfg: LLMSettings) -> str:
    """The API key the client sends: ``cfg``'s without surrounding whitespace, or a stand-in (local servers such
    as Ollama and llama.cpp ignore the key, but the openai client insists on one). Raises ValueError for a key
    with a control or non-ASCII character inside (a header cannot carry it)."""
    if not cfg.api_key:
        return "not-needed"
    key = cfg.api_key.get_secret_value().strip()  # a trailing newline from a key file is no part of the key
    if not key or not key.isascii() or any(ord(c) < 0x20 or ord(c) == 0x7F for c in key):
        # An HTTP header cannot carry it: the client failed as "cannot connect … is the server running?" (a
        # third hostile round). Raised before any request; the key itself is not shown.
        import os

        # Named as it was set: PAPER_ASSISTANT_LLM__API_KEY wins over OPENAI_API_KEY (a hostile round saw the wrong one).
        name = "PAPER_ASSISTANT_LLM__API_KEY" if os.environ.get("PAPER_ASSISTANT_LLM__API_KEY") else "OPENAI_API_KEY"
        raise ValueError(f"the API key ({name}, or the llm.api_key setting) holds a line break, another control "
                         "character or a non-ASCII one: set it to the key alone, on one line")
    return key


def endpoint_client(cfg: LLMSettings, timeout: float):
    """A plain ``openai.OpenAI`` client for ``cfg``'s endpoint (the model list, the system-role probe) over
    :func:`budget_client`: every call of it is read within the byte budget too (an endless model list grew
    ``doctor`` to 22 GB). No retries; ``timeout`` in seconds per HTTP read."""
    import openai

    return openai.OpenAI(base_url=cfg.base_url, api_key=sent_key(cfg), timeout=timeout, max_retries=0,
                         http_client=budget_client(cfg))


def over_budget(exc: BaseException) -> LLMReplyOverBudget | CompressedReply | RedirectedAway | None:
    """The wire's error behind ``exc`` (over the budget, compressed, or redirected away): itself, or the cause of the
    APIConnectionError the openai client wraps it in when it was raised while a non-streamed reply was read.
    None for any other error."""
    for err in (exc, exc.__cause__, exc.__context__):
        if isinstance(err, (LLMReplyOverBudget, CompressedReply, RedirectedAway)):
            return err
    return None


class LLMDeadlineError(TimeoutError):
    """Nothing arrived from the endpoint within a timeout (seconds in ``.timeout``): ``first`` is True
    for the wait for the reply's first piece (``first_token_timeout``), False for a wait between two
    pieces of a streamed reply (``timeout``)."""

    def __init__(self, timeout: float, first: bool = True):
        super().__init__(f"no {'reply' if first else 'next piece of the reply'} within {timeout:g} s")
        self.timeout = timeout
        self.first = first


def iter_with_deadline(make_iter: Callable[[], Iterable[T]], timeout: float,
                       first_timeout: float | None = None, starts: Callable[[T], bool] | None = None) -> Iterator[T]:
    """Yield the items of ``make_iter()``, waiting at most ``first_timeout`` seconds (default
    ``timeout``) for the first and ``timeout`` seconds for each one after it. With ``starts``, the
    first wait lasts until an item for which ``starts(item)`` is true (a stream's first text, not the
    empty role chunk some servers send before reading the prompt); it is one deadline, not per item.

    The client's own timeout applies per HTTP attempt, so retries (and a server that trickles a
    stream) could add up past it; this puts one bound on every wait the user sees: the first item
    (connection, retries, prompt processing, first token) and each item after it. They differ
    because a local CPU server reads a long prompt for 10-30 s before its first token, then streams
    one every few hundredths of a second. The blocking iteration runs in a daemon thread; on expiry
    it is abandoned (it ends with the client's own timeout).
    Raises LLMDeadlineError (``.first`` says which wait) on expiry, or whatever the iteration raised.
    """
    items: queue.Queue = queue.Queue(maxsize=64)  # bounded: a fast endpoint waits for a slow reader
    stop = threading.Event()

    def put(entry) -> bool:  # False once the consumer has left
        while not stop.is_set():
            try:
                items.put(entry, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def run() -> None:
        source = None
        _call.left = stop  # the bodies this thread reads stop once the waiter has left (budget_client)
        try:
            source = iter(make_iter())
            for item in source:
                if not put(("item", item)):
                    return
            put(("end", None))
        except BaseException as exc:  # handed to the consumer, raised there
            put(("error", exc))
        finally:
            close = getattr(source, "close", None)  # a stream: its HTTP response, so the server stops sending
            if close is not None:
                try:
                    close()
                except Exception:  # noqa: BLE001 - the reply was left; nothing waits for this
                    pass

    threading.Thread(target=run, name="llm-call", daemon=True).start()
    first = True
    first_deadline = time.monotonic() + (first_timeout if first_timeout is not None else timeout)
    try:
        while True:
            wait = max(0.0, first_deadline - time.monotonic()) if first else timeout
            try:
                kind, value = items.get(timeout=wait)
            except queue.Empty:
                raise LLMDeadlineError(first_timeout if first and first_timeout is not None else timeout,
                                       first) from None
            if kind == "item" and (starts is None or starts(value)):
                first = False
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()


def call_within(seconds: float, call: Callable[[], T]) -> T:
    """``call()``'s result, waited for at most ``seconds`` in all (:func:`iter_with_deadline`): a non-streamed
    reply or a model list trickled a byte at a time kept every per-read timeout, and the wait was bounded only by
    the byte budget (a fourth hostile round: past 100 s with a 10 s timeout). Raises LLMDeadlineError on expiry
    (the call is abandoned in its daemon thread), or what ``call`` raised."""
    for result in iter_with_deadline(lambda: [call()], seconds):
        return result
    raise AssertionError("unreachable: the one-item iteration ended without its item")
