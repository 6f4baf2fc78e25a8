"""The chat-model contract the answer path depends on (:class:`ChatModel`), its OpenAI-compatible
implementation (langchain-openai), a deadline on every call, and one-line explanations of endpoint
failures.

Every detail of the OpenAI protocol lives here: ``finish_reason`` (a stream without one, or with
``"length"``, is a cut answer), token ``usage`` (asked for with ``stream_options``, and asked again
without it, once, when a server rejects the option), the client's timeout and retries. Tests use an
in-process fake of the contract (tests/fake_chat.py) and a real HTTP fake of the wire
(tests/fake_openai.py).

Works with OpenAI, Ollama, vLLM and the llama.cpp server: anything that serves
``/v1/chat/completions``. Failures never reach the user as tracebacks; :func:`explain_llm_error`
turns each into one line and the caller falls back to the extractive answer.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, TypeVar

from langchain_core.messages import BaseMessage
from langchain_core.output_parsers import StrOutputParser

from langchain_openai import ChatOpenAI

from assistant.settings import LLMSettings

T = TypeVar("T")


class LLMDeadlineError(TimeoutError):
    """Nothing arrived from the endpoint within the configured timeout (seconds in ``.timeout``)."""

    def __init__(self, timeout: float):
        super().__init__(f"no reply within {timeout:g} s")
        self.timeout = timeout


class LLMStreamIncomplete(RuntimeError):
    """The answer stream ended without the protocol's end mark: ``finish_reason`` is None (the server
    stopped sending) or ``"length"`` (the reply budget, ``max_tokens``, ran out)."""

    def __init__(self, finish_reason: str | None):
        super().__init__(f"stream ended with finish_reason={finish_reason!r}")
        self.finish_reason = finish_reason


class ChatModel(Protocol):
    """What the answer path needs from a chat model (the simonw/llm pattern: one small contract)."""

    def complete(self, messages: list[BaseMessage]) -> str:
        """The whole reply to ``messages``. Raises the endpoint's error, or LLMDeadlineError."""

    def stream(self, messages: list[BaseMessage], usage: dict | None = None) -> Iterator[str]:
        """Text pieces of the reply as they arrive. Fills ``usage`` (``input_tokens``, ``output_tokens``,
        ``total_tokens``) when the endpoint reports it. Raises LLMStreamIncomplete when the reply is cut,
        LLMDeadlineError when a wait exceeds the timeout, or the endpoint's error."""


class OpenAIChat:
    """:class:`ChatModel` over any OpenAI-compatible ``/v1/chat/completions`` (ChatOpenAI), each wait
    bounded by ``cfg.timeout``."""

    def __init__(self, cfg: LLMSettings):
        self.cfg = cfg
        self.client = make_chat_model(cfg)
        self._stream_usage = True

    def complete(self, messages: list[BaseMessage]) -> str:
        chain = self.client | StrOutputParser()
        return "".join(iter_with_deadline(lambda: [chain.invoke(messages)], self.cfg.timeout))

    def stream(self, messages: list[BaseMessage], usage: dict | None = None) -> Iterator[str]:
        """See :meth:`ChatModel.stream`. A server that rejects ``stream_options`` (asked for to get
        usage) is asked again without it, once, and never again by this object."""
        for attempt in range(2):
            sent = False
            finish = None
            try:
                for chunk in iter_with_deadline(lambda: self.client.stream(messages), self.cfg.timeout):
                    if chunk.usage_metadata and usage is not None:
                        usage.update({k: int(chunk.usage_metadata[k])
                                      for k in ("input_tokens", "output_tokens", "total_tokens")})
                    finish = chunk.response_metadata.get("finish_reason") or finish
                    text = chunk.text
                    if text:
                        sent = True
                        yield text
                # Every compatible server ends a finished answer with a finish_reason ("stop"); a
                # stream that just stops, or stops at the token budget, is a cut answer.
                if sent and finish in (None, "length"):
                    raise LLMStreamIncomplete(finish)
                return
            except Exception as exc:
                if attempt == 0 and not sent and self._stream_usage and rejects_stream_options(exc):
                    self._stream_usage = False
                    self.client = make_chat_model(self.cfg, stream_usage=False)
                    continue
                raise


def make_chat_model(cfg: LLMSettings, stream_usage: bool = True) -> ChatOpenAI:
    """A ChatOpenAI client for ``cfg``. Raises ValueError when no model is configured.

    Timeout and retries are always set: the openai defaults (600 s, 2 retries) would leave a user
    waiting ten minutes on a dead endpoint. A server other than OpenAI's also gets the reply budget
    as ``max_tokens`` beside ``max_completion_tokens``. ``stream_usage`` asks for token usage in streams
    (``stream_options``); some servers reject that option, and the caller then retries without it.
    """
    if not cfg.model:
        raise ValueError("no LLM model configured (set OPENAI_MODEL or --model)")
    return ChatOpenAI(
        model=cfg.model,
        base_url=cfg.base_url,
        # Local servers (Ollama, llama.cpp) ignore the key but the client insists on one.
        api_key=cfg.api_key.get_secret_value() if cfg.api_key else "not-needed",
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        timeout=cfg.timeout,
        max_retries=cfg.max_retries,
        stream_usage=stream_usage,
        # langchain-openai sends the budget as max_completion_tokens, which some local servers
        # (llama-cpp-python, older Ollama) ignore; they read the older max_tokens, so send both there.
        extra_body={"max_tokens": cfg.max_tokens} if cfg.base_url and "api.openai.com" not in cfg.base_url else None,
    )


def iter_with_deadline(make_iter: Callable[[], Iterable[T]], timeout: float) -> Iterator[T]:
    """Yield the items of ``make_iter()`` but never wait more than ``timeout`` seconds for one.

    The client's own timeout applies per HTTP attempt, so retries (and a server that trickles a
    stream) could add up past it; this puts one bound on every wait the user sees: the first item
    (connection, retries, first token) and each item after it. The blocking iteration runs in a
    daemon thread; on expiry it is abandoned (it ends with the client's own timeout).
    Raises LLMDeadlineError on expiry, or whatever the iteration raised.
    """
    items: queue.Queue = queue.Queue()
    stop = threading.Event()

    def run() -> None:
        try:
            for item in make_iter():
                items.put(("item", item))
                if stop.is_set():
                    return
            items.put(("end", None))
        except BaseException as exc:  # handed to the consumer, raised there
            items.put(("error", exc))

    threading.Thread(target=run, name="llm-call", daemon=True).start()
    try:
        while True:
            try:
                kind, value = items.get(timeout=timeout)
            except queue.Empty:
                raise LLMDeadlineError(timeout) from None
            if kind == "end":
                return
            if kind == "error":
                raise value
            yield value
    finally:
        stop.set()


def rejects_stream_options(exc: BaseException) -> bool:
    """True for a 400 that names ``stream_options`` (Azure and some local servers send it)."""
    import openai

    return isinstance(exc, openai.BadRequestError) and "stream_options" in f"{exc} {getattr(exc, 'param', '')}"


def _server_message_raw(exc: BaseException) -> str:
    """The server's own error message (first line, ending in a full stop), else the exception's."""
    body = getattr(exc, "body", None)
    inner = body.get("error", body) if isinstance(body, dict) else None
    text = str(inner["message"]) if isinstance(inner, dict) and inner.get("message") else str(exc)
    text = (text.strip().splitlines() or [""])[0]
    return text if text.endswith((".", "!", "?")) else text + "."


def redact(text: str, cfg: LLMSettings) -> str:
    """``text`` with the API key, and any password in the base URL, replaced by ``***``: servers and
    proxies sometimes echo the key they were sent in their error messages."""
    from urllib.parse import urlsplit

    secrets = [cfg.api_key.get_secret_value()] if cfg.api_key else []
    if cfg.base_url:
        try:
            secrets.append(urlsplit(cfg.base_url).password or "")
        except ValueError:
            pass
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def explain_llm_error(exc: BaseException, cfg: LLMSettings, mid_answer: bool = False) -> str:
    """One sentence saying what went wrong with the endpoint (never the key).

    ``mid_answer``: part of the answer had already streamed, so a dropped connection or a stall is
    a cut, not a refusal to connect.
    """
    import openai

    where = redact(cfg.base_url or "the OpenAI API", cfg)

    def _server_message(e: BaseException) -> str:  # the server's words, without the key it may echo
        return redact(_server_message_raw(e), cfg)

    if isinstance(exc, LLMStreamIncomplete):
        if exc.finish_reason == "length":
            return (f"The LLM's answer reached the reply budget of {cfg.max_tokens} tokens and was cut "
                    f"(raise PAPER_ASSISTANT_LLM__MAX_TOKENS).")
        return f"The LLM endpoint {where} ended the stream before the answer was finished (no finish reason)."
    if isinstance(exc, openai.AuthenticationError):
        return f"The LLM endpoint {where} rejected the API key (401): check OPENAI_API_KEY."
    if isinstance(exc, openai.NotFoundError):
        return f"The LLM endpoint {where} does not know model {cfg.model!r} (404): check OPENAI_MODEL."
    if isinstance(exc, openai.RateLimitError):
        return f"The LLM endpoint {where} is rate-limiting requests (429): try again shortly."
    if isinstance(exc, (openai.APITimeoutError, LLMDeadlineError)):
        if mid_answer:
            return f"The LLM endpoint {where} stopped sending mid-answer (nothing for {cfg.timeout:g} s)."
        return f"The LLM endpoint {where} did not answer within {cfg.timeout:g} s."
    if isinstance(exc, openai.APIConnectionError):
        if mid_answer:
            return f"The LLM endpoint {where} closed the connection mid-answer."
        return f"Cannot connect to the LLM endpoint {where}: is the server running?"
    if isinstance(exc, openai.BadRequestError):
        return f"The LLM endpoint {where} rejected the request (400): {_server_message(exc)}"
    if isinstance(exc, openai.InternalServerError):
        return f"The LLM endpoint {where} failed with a server error ({getattr(exc, 'status_code', 500)})."
    if isinstance(exc, openai.APIStatusError):
        return f"The LLM endpoint {where} answered with HTTP {exc.status_code}: {_server_message(exc)}"
    # Anything else came from reading the reply (a malformed stream, a server that ignores "stream").
    return f"The LLM endpoint {where} sent a reply this client could not read ({type(exc).__name__}: {_server_message(exc)})"
