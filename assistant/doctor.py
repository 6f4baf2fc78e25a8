"""`paper-assistant doctor`: checks of the index and the LLM endpoint, each a (passed, message) line.

The endpoint checks are the two things an answer needs: the server lists the configured model
(``GET /models``) and streams one tiny completion with it, non-empty and ending with a finish reason. Every request uses the configured
timeout and no retries, so a dead endpoint is reported in at most two timeouts.
"""

from __future__ import annotations

from collections.abc import Iterator

from assistant.settings import LLMSettings, Settings


def run_doctor(settings: Settings) -> Iterator[tuple[bool, str]]:
    """Yield ``(ok, one-line message)`` for the index, then (if configured) the LLM endpoint."""
    yield _check_index(settings)
    cfg = settings.llm
    if not cfg.configured:
        yield True, ("LLM: none configured; answers are extractive (set OPENAI_BASE_URL or OPENAI_API_KEY, "
                     "and OPENAI_MODEL, to use one)")
        return
    yield from _check_llm(cfg)


def _check_index(settings: Settings) -> tuple[bool, str]:
    from assistant.service import get_index

    try:
        idx = get_index(settings)
        papers, chunks = idx.store.counts()
    except Exception as exc:
        return False, f"index: {exc}"
    where = f"{settings.store.host}:{settings.store.port}" if settings.store.host else str(settings.index)
    return papers > 0, f"index at {where}: {papers} papers in {chunks} chunks (embedding model {idx.encoder.model_name}, backend {idx.encoder.backend})"


def _check_llm(cfg: LLMSettings) -> Iterator[tuple[bool, str]]:
    """The model list, then one tiny completion; stops after a failure that the second would repeat."""
    import openai

    from assistant.llm import explain_llm_error, iter_with_deadline, make_chat_model

    where = cfg.base_url or "the OpenAI API"
    client = openai.OpenAI(base_url=cfg.base_url, api_key=cfg.api_key.get_secret_value() if cfg.api_key else "not-needed",
                           timeout=cfg.timeout, max_retries=0)
    try:
        names = [m.id for m in client.models.list()]
    except openai.NotFoundError:
        yield True, f"LLM endpoint {where} does not list models (404); trying the model directly"
    except Exception as exc:
        yield False, explain_llm_error(exc, cfg)
        return
    else:
        if cfg.model in names:
            yield True, f"LLM endpoint {where}: {len(names)} models listed, including {cfg.model!r}"
        else:
            shown = ", ".join(repr(n) for n in names[:5]) + (", …" if len(names) > 5 else "")
            yield False, f"LLM endpoint {where} does not list model {cfg.model!r} (it lists: {shown or 'none'})"
    # Streamed, as answers are: a server whose streaming is broken fails here, not mid-answer.
    text, finish = "", None
    try:
        model = make_chat_model(cfg.model_copy(update={"max_tokens": 8, "max_retries": 0}))
        for chunk in iter_with_deadline(lambda: model.stream("Say OK."), cfg.timeout):
            text += chunk.text
            finish = chunk.response_metadata.get("finish_reason") or finish
    except Exception as exc:
        yield False, explain_llm_error(exc, cfg)
        return
    if not text.strip():
        yield False, f"LLM model {cfg.model!r} at {where} streamed an empty reply: answers would fall back to extractive"
    elif finish is None:
        yield False, (f"LLM model {cfg.model!r} at {where} ended its stream without a finish reason: every answer "
                      f"would be marked incomplete")
    else:
        yield True, f"LLM model {cfg.model!r} answered: {text[:40]!r} (streamed)"
