"""The OpenAI-compatible chat model (langchain-openai) and one-line explanations of its failures."""

from __future__ import annotations

from langchain_openai import ChatOpenAI

from assistant.settings import LLMSettings


def make_chat_model(cfg: LLMSettings) -> ChatOpenAI:
    """A ChatOpenAI client for ``cfg`` (works with OpenAI, Ollama, vLLM, llama.cpp server).

    Timeout and retries are always set: the openai defaults (600 s, 2 retries) would leave a user
    waiting ten minutes on a dead endpoint. Raises ValueError when no model is configured.
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
    )


def explain_llm_error(exc: BaseException, cfg: LLMSettings) -> str:
    """One line saying what went wrong with the endpoint, without secrets."""
    import openai

    where = cfg.base_url or "the OpenAI API"
    if isinstance(exc, openai.AuthenticationError):
        return f"The LLM endpoint {where} rejected the API key (401): check OPENAI_API_KEY."
    if isinstance(exc, openai.NotFoundError):
        return f"The LLM endpoint {where} does not know model {cfg.model!r} (404): check OPENAI_MODEL."
    if isinstance(exc, openai.RateLimitError):
        return f"The LLM endpoint {where} is rate-limiting requests (429): try again shortly."
    if isinstance(exc, openai.APITimeoutError):
        return f"The LLM endpoint {where} did not answer within {cfg.timeout:g} s."
    if isinstance(exc, openai.APIConnectionError):
        return f"Cannot connect to the LLM endpoint {where}: is the server running?"
    if isinstance(exc, openai.BadRequestError):
        return f"The LLM endpoint {where} rejected the request (400): {getattr(exc, 'message', exc)}"
    if isinstance(exc, openai.InternalServerError):
        return f"The LLM endpoint {where} failed with a server error ({getattr(exc, 'status_code', 500)})."
    if isinstance(exc, openai.APIStatusError):
        return f"The LLM endpoint {where} answered with HTTP {exc.status_code}."
    return f"The LLM call failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
