"""The chat-model contract the answer path depends on (:class:`ChatModel`), its OpenAI-compatible
implementation (langchain-openai), a deadline on every call, and one-line explanations of endpoint
failures.

Every detail of the OpenAI protocol lives here: ``finish_reason`` (a stream without one, or with
``"length"``, is a cut answer), token ``usage`` (asked for with ``stream_options``, and asked again
without it, once, when a server rejects the option), the client's timeout and retries, and the reply
budget: reading stops past ``max_tokens`` × ``reply_chars_per_token`` characters (:func:`reply_limit`),
whatever the endpoint sends. The system-role probe is :mod:`assistant.answer.system_role`. Tests use an
in-process fake of the contract (tests/fake_chat.py) and a real HTTP fake of the wire
(tests/fake_openai.py).

Works with OpenAI, Ollama, vLLM and the llama.cpp server: anything that serves
``/v1/chat/completions``. Failures never reach the user as tracebacks; :func:`explain_llm_error`
turns each into one line and the caller falls back to the extractive answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import TYPE_CHECKING, Protocol

from assistant.answer.system_role import fold_system, fold_system_messages
from assistant.answer.wire import (CompressedReply, LLMDeadlineError, LLMReplyOverBudget, LLMStreamIncomplete,
                                   RedirectedAway, budget_client, iter_with_deadline, over_budget, reply_limit, sent_key)
from assistant.settings import LLMSettings
from assistant.text import StreamRedactor, endpoint_reason, redact

if TYPE_CHECKING:  # imported when a chat model is made: langchain-openai and openai take about 1 s to import,
    # LangChain's messages and parsers 0.2-0.6 s, and an answer without an LLM needs none of them
    from langchain_core.messages import BaseMessage
    from langchain_openai import ChatOpenAI


class ChatModel(Protocol):
    """What the answer path needs from a chat model (the simonw/llm pattern: one small contract)."""

    def complete(self, messages: list[BaseMessage]) -> str:
        """The whole reply to ``messages``. Raises the endpoint's error, or LLMDeadlineError."""

    def stream(self, messages: list[BaseMessage], usage: dict | None = None) -> Iterator[str]:
        """Text pieces of the reply as they arrive. Fills ``usage`` (``input_tokens``, ``output_tokens``,
        ``total_tokens``) when the endpoint reports it. Raises LLMStreamIncomplete when the reply is cut,
        LLMDeadlineError when a wait exceeds the timeout, or the endpoint's error."""


class OpenAIChat:
    """:class:`ChatModel` over any OpenAI-compatible ``/v1/chat/completions`` (ChatOpenAI): the wait
    for a reply's first text is bounded by ``cfg.first_token_timeout``, each wait after it by
    ``cfg.timeout``. System messages are folded into the first user message when the endpoint's chat
    template drops them (:func:`fold_system`)."""

    def __init__(self, cfg: LLMSettings):
        self.cfg = cfg
        self.client = make_chat_model(cfg)
        self._stream_usage = True

    def _messages(self, messages: list[BaseMessage]) -> list[BaseMessage]:
        return fold_system_messages(messages) if fold_system(self.cfg) else messages

    def complete(self, messages: list[BaseMessage]) -> str:
        """Not streamed: the first-token wait covers the whole (short) reply. The key is masked in it
        (:func:`redact`). Raises LLMReplyOverBudget for a reply over :func:`reply_limit`."""
        from langchain_core.output_parsers import StrOutputParser

        chain = self.client | StrOutputParser()
        messages = self._messages(messages)
        try:
            text = "".join(iter_with_deadline(lambda: [chain.invoke(messages)], self.cfg.timeout,
                                              self.cfg.first_token_timeout))
        except Exception as exc:
            cut = over_budget(exc)  # the openai client wraps it in an APIConnectionError
            if cut is None:
                raise
            raise cut from None
        if len(text) > reply_limit(self.cfg):
            raise LLMReplyOverBudget(reply_limit(self.cfg))
        return redact(text, self.cfg)

    def stream(self, messages: list[BaseMessage], usage: dict | None = None) -> Iterator[str]:
        """See :meth:`ChatModel.stream`. A server that rejects ``stream_options`` (asked for to get
        usage) is asked again without it, once, and never again by this object. The key is masked in
        the text (:class:`StreamRedactor`: text that may be the start of it is held back a little). Reading
        stops at :func:`reply_limit` characters, or at twice ``max_tokens`` pieces (a piece holds a token or
        more; a few carry none), with LLMReplyOverBudget: time and memory are bounded by the budget."""
        messages = self._messages(messages)
        limit, most = reply_limit(self.cfg), 2 * self.cfg.max_tokens + 16
        for attempt in range(2):
            sent = False
            finish = None
            masked = StreamRedactor(self.cfg)
            read = pieces = 0
            try:
                for chunk in iter_with_deadline(lambda: self.client.stream(messages), self.cfg.timeout,
                                                self.cfg.first_token_timeout, starts=lambda c: bool(c.text)):
                    if chunk.usage_metadata and usage is not None:
                        usage.update({k: int(chunk.usage_metadata[k])
                                      for k in ("input_tokens", "output_tokens", "total_tokens")})
                    finish = chunk.response_metadata.get("finish_reason") or finish
                    text, read, pieces = chunk.text[: max(0, limit - read)], read + len(chunk.text), pieces + 1
                    if text:
                        sent = True
                        text = masked.feed(text)
                        if text:
                            yield text
                    if read > limit or pieces > most:
                        sent = sent or read > 0
                        raise LLMReplyOverBudget(limit)
                rest = masked.flush()
                if rest:
                    yield rest
                # Every compatible server ends a finished answer with a finish_reason ("stop"); a
                # stream that just stops, or stops at the token budget, is a cut answer.
                if sent and finish in (None, "length", "content_filter"):  # a filter's cut is a cut too (round nine)
                    raise LLMStreamIncomplete(finish)
                return
            except Exception as exc:
                rest = masked.flush()  # the text held back is part of what was received
                if rest:
                    yield rest
                if attempt == 0 and not sent and self._stream_usage and rejects_stream_options(exc):
                    self._stream_usage = False
                    self.client = make_chat_model(self.cfg, stream_usage=False)
                    continue
                raise


def make_chat_model(cfg: LLMSettings, stream_usage: bool = True) -> ChatOpenAI:
    """A ChatOpenAI client for ``cfg``. Raises ValueError when no model is configured.

    Timeout and retries are always set: the openai defaults (600 s, 2 retries) would leave a user
    waiting ten minutes on a dead endpoint. The client's own timeout (per HTTP read) is the longer of
    the two timeouts, so it never fires before the first-token deadline (:func:`iter_with_deadline`
    enforces both). A server other than OpenAI's also gets the reply budget
    as ``max_tokens`` beside ``max_completion_tokens``. ``stream_usage`` asks for token usage in streams
    (``stream_options``); some servers reject that option, and the caller then retries without it.
    """
    if not cfg.model:
        raise ValueError("no LLM model configured (set OPENAI_MODEL or --model)")
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=cfg.model,
        base_url=cfg.base_url,
        api_key=sent_key(cfg),
        temperature=cfg.temperature,
        max_tokens=cfg.max_tokens,
        timeout=max(cfg.timeout, cfg.first_token_timeout),
        max_retries=cfg.max_retries,
        stream_usage=stream_usage,
        http_client=budget_client(cfg),  # every reply body read through a byte budget (a line that never ends)
        # langchain-openai sends the budget as max_completion_tokens, which some local servers
        # (llama-cpp-python, older Ollama) ignore; they read the older max_tokens, so send both there.
        extra_body={"max_tokens": cfg.max_tokens} if cfg.base_url and "api.openai.com" not in cfg.base_url else None,
    )




def rejects_stream_options(exc: BaseException) -> bool:
    """True for a 400 that names ``stream_options`` (Azure and some local servers send it)."""
    import openai

    return isinstance(exc, openai.BadRequestError) and "stream_options" in f"{exc} {getattr(exc, 'param', '')}"


def explain_llm_error(exc: BaseException, cfg: LLMSettings, mid_answer: bool = False) -> str:
    """One sentence saying what went wrong with the endpoint (never the key).

    ``mid_answer``: part of the answer had already streamed, so a dropped connection or a stall is
    a cut, not a refusal to connect.
    """
    import openai

    # The endpoint's own error text is never shown: it may echo the key reversed, encoded or spaced out
    # beyond any masking. Only its HTTP status and a reason of ours.
    where = redact(cfg.base_url or "the OpenAI API", cfg)

    exc = over_budget(exc) or exc  # raised while a non-streamed reply was read, it comes wrapped
    if isinstance(exc, CompressedReply):
        return (f"The LLM endpoint {where} sent a compressed reply (Content-Encoding: {exc.encoding}) though none "
                "was asked for; this client reads plain replies only, so it was not read.")
    if isinstance(exc, RedirectedAway):
        return (f"The LLM endpoint {where} redirected the request to another address "
                f"({redact(exc.origin, cfg)}); it was not followed, and nothing was sent there: if that is the "
                "server meant, set OPENAI_BASE_URL to it.")
    if isinstance(exc, LLMReplyOverBudget) and getattr(exc, "status", 200) >= 400:
        return (f"The LLM endpoint {where} answered HTTP {exc.status} with an error body over {exc.limit:,} bytes "
                "(read no further); its log may say why.")
    if isinstance(exc, LLMReplyOverBudget):
        return (f"The LLM's answer ran past the reply budget of {cfg.max_tokens} tokens and was cut at "
                f"{exc.limit:,} {exc.unit} (the endpoint {where} does not stop at max_tokens).")
    if isinstance(exc, LLMStreamIncomplete):
        if exc.finish_reason == "length":
            return (f"The LLM's answer reached the reply budget of {cfg.max_tokens} tokens and was cut "
                    f"(raise PAPER_ASSISTANT_LLM__MAX_TOKENS).")
        if exc.finish_reason == "content_filter":
            return f"The LLM endpoint {where} cut the answer short with its content filter (finish reason content_filter)."
        return f"The LLM endpoint {where} ended the stream before the answer was finished (no finish reason)."
    if isinstance(exc, openai.AuthenticationError):
        return f"The LLM endpoint {where} rejected the API key (401): check OPENAI_API_KEY."
    if isinstance(exc, openai.NotFoundError):
        return f"The LLM endpoint {where} does not know model {cfg.model!r} (404): check OPENAI_MODEL."
    if isinstance(exc, openai.RateLimitError):
        return f"The LLM endpoint {where} is rate-limiting requests (429): try again shortly."
    if isinstance(exc, (openai.APITimeoutError, LLMDeadlineError)):
        # Which wait ran out, and the setting that sets it: a slow local server needs the first one raised.
        first = exc.first if isinstance(exc, LLMDeadlineError) else not mid_answer
        if not first:
            return (f"The LLM endpoint {where} stopped sending mid-answer: nothing for {cfg.timeout:g} s "
                    f"between two pieces (the timeout, PAPER_ASSISTANT_LLM__TIMEOUT).")
        waited = exc.timeout if isinstance(exc, LLMDeadlineError) else cfg.first_token_timeout
        return (f"The LLM endpoint {where} did not answer within {waited:g} s (the first-token timeout, "
                f"PAPER_ASSISTANT_LLM__FIRST_TOKEN_TIMEOUT).")
    if isinstance(exc, openai.APIConnectionError):
        if mid_answer:
            return f"The LLM endpoint {where} closed the connection mid-answer."
        err = exc  # httpx's own error, under the openai (and langchain-openai) wrappers
        while err is not None and not type(err).__module__.startswith("httpx"):
            err = err.__cause__ or err.__context__
        cause = type(err).__name__ if err is not None else ""
        if cause == "TooManyRedirects":
            return f"The LLM endpoint {where} redirected the request in a loop (too many redirects)."
        if cause.endswith("ProtocolError") and not re.search(r"disconnect|closed", str(err), re.I):
            # the server runs and answered: oversized headers, a broken chunk line
            return f"The LLM endpoint {where} sent a reply this client could not read ({cause})."
        return f"Cannot connect to the LLM endpoint {where}: is the server running?"
    if isinstance(exc, openai.BadRequestError):
        return f"The LLM endpoint {where} rejected the request (400): {endpoint_reason(exc, 400, cfg)}."
    if isinstance(exc, openai.InternalServerError):
        return f"The LLM endpoint {where} failed with a server error ({getattr(exc, 'status_code', 500)})."
    if isinstance(exc, openai.APIStatusError):
        reason = endpoint_reason(exc, exc.status_code, cfg)
        return f"The LLM endpoint {where} answered with HTTP {exc.status_code}: {reason}."
    if isinstance(exc, UnicodeError) and "idna" in str(exc).lower():  # raised before anything was sent (round 11)
        return (f"The LLM endpoint's host name in {where} is no valid host name (each part between dots must be 1 to "
                "63 characters): check OPENAI_BASE_URL.")
    # Anything else came from reading the reply (a malformed stream, a server that ignores "stream").
    return f"The LLM endpoint {where} sent a reply this client could not read ({type(exc).__name__})."
