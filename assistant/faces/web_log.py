"""The page server's log of a failed request: one line for a request the page refuses (its inputs are not what the
page takes), else a traceback bounded in length; the configured secrets masked before anything is cut (a long key
cut to its first 38 characters, or to pydantic's 25 around "...", was too short a piece to be known: an eleventh
hostile round). Gradio's queue prints through :class:`BoundedTraceback` (``launch_options`` installs it)."""

from __future__ import annotations

MAX_LOGGED_ERROR = 4000
"""Characters of one request's traceback the server log keeps (its start and its end)."""


def bounded(text: str, limit: int = MAX_LOGGED_ERROR, mask=None) -> str:
    """``text`` kept whole up to ``limit`` characters, else its first and last ``limit // 2`` with the
    number of characters cut between them; ``mask`` (a function) applied to each part kept before it is cut."""
    mask = mask or (lambda part: part)
    if len(text) <= limit:
        return mask(text)
    margin = limit // 2 + 1000  # past any key: one cut in two at the edge is masked whole first
    head, tail = mask(text[:margin])[:limit // 2], mask(text[-margin:])[-(limit // 2):]
    return f"{head}\n… {len(text) - limit} characters cut …\n{tail}"


def _masked(text: str) -> str:
    from assistant.text import mask_secrets

    return mask_secrets(text)


class BoundedTraceback:
    """The ``traceback`` module as Gradio's queue sees it, with ``print_exc`` bounded (:func:`bounded`).
    A request whose inputs fail Gradio's own validation (a chat history of 6,000 malformed messages)
    printed every pydantic error: 18,000 log lines for one 100 kB request."""

    def __getattr__(self, name):
        import traceback

        return getattr(traceback, name)

    @staticmethod
    def print_exc(limit=None, file=None, chain=True) -> None:
        import sys
        import traceback

        exc = sys.exc_info()[1]
        if _malformed_inputs(exc):
            # The client's fault, not the page's: one line (a hostile round logged a traceback for each, #35 F16).
            first = _refusal(exc)
            print(f"request refused: its inputs are not what the page takes ({type(exc).__name__}: {first})",
                  file=file or sys.stderr)
            return
        print(bounded(traceback.format_exc(limit=limit, chain=chain), mask=_masked), file=file or sys.stderr, end="")


def _refusal(exc: BaseException) -> str:
    """What was refused, in at most 200 characters, the configured secrets masked before anything is cut. Pydantic's
    own text quotes each value shortened to its first and last 24 characters, so a key glued to other text showed 18
    of each, too few to be known as the key (a twelfth hostile round): its errors are read whole instead."""
    from pydantic import ValidationError
    from assistant.text import shown_part

    chain = (exc, getattr(exc, "__cause__", None), getattr(exc, "__context__", None))
    invalid = next((e for e in chain if isinstance(e, ValidationError)), None)
    if invalid is None:
        return shown_part(" ".join(str(exc)[:8000].split()), 200)
    parts = [f"{'.'.join(map(str, e.get('loc', ()))) or 'input'}: {e.get('msg', 'invalid')} (got "
             f"{shown_part(repr(e.get('input')), 40)})" for e in invalid.errors(include_url=False)[:3]]
    return shown_part(f"{invalid.error_count()} validation error(s) for {invalid.title}: " + "; ".join(parts), 200)


def _malformed_inputs(exc: BaseException | None) -> bool:
    """True when ``exc`` (or what caused it) is pydantic's or Gradio's refusal of a request's inputs (a chat history
    of the wrong shape, a value no dropdown offers: a traceback each, a tenth round): before any handler of ours."""
    from pydantic import ValidationError

    return any(isinstance(e, ValidationError) or f"{type(e).__module__}.{type(e).__name__}" in _REFUSALS
               for e in (exc, getattr(exc, "__cause__", None), getattr(exc, "__context__", None)))


_REFUSALS = ("gradio.exceptions.Error", "gradio.exceptions.ComponentProcessingError")
