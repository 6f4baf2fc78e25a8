"""`paper-assistant doctor`: checks of the index and the LLM endpoint, each a (passed, message) line."""

from __future__ import annotations

from collections.abc import Iterator

from assistant.settings import Settings


def run_doctor(settings: Settings) -> Iterator[tuple[bool, str]]:
    """Yield ``(ok, one-line message)`` for the index, then (if configured) the LLM endpoint."""
    from assistant.service import get_index

    try:
        idx = get_index(settings)
        papers, chunks = idx.store.counts()
        where = f"{settings.store.host}:{settings.store.port}" if settings.store.host else str(settings.index)
        yield papers > 0, f"index at {where}: {papers} papers in {chunks} chunks (embedding model {idx.encoder.name})"
    except Exception as exc:
        yield False, f"index: {exc}"
    cfg = settings.llm
    if not cfg.configured:
        yield True, "LLM: none configured; answers are extractive (set OPENAI_BASE_URL/OPENAI_API_KEY and OPENAI_MODEL to use one)"
        return
    import openai

    from assistant.llm import explain_llm_error, make_chat_model

    client = openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key.get_secret_value() if cfg.api_key else "not-needed",
                           timeout=cfg.timeout, max_retries=0)
    try:
        names = [m.id for m in client.models.list()]
        listed = cfg.model in names
        yield listed or not names, (f"LLM endpoint {cfg.base_url or 'OpenAI'}: {len(names)} models listed"
                                    + ("" if listed else f"; {cfg.model!r} is not among them"))
    except Exception as exc:
        yield False, explain_llm_error(exc, cfg)
        return
    try:
        reply = make_chat_model(cfg.model_copy(update={"max_tokens": 8, "max_retries": 0})).invoke("Say OK.")
        yield True, f"LLM model {cfg.model!r} answered: {str(reply.content)[:40]!r}"
    except Exception as exc:
        yield False, explain_llm_error(exc, cfg)
