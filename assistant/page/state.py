"""What the page's tabs share: the state over one assistant (:class:`Page`: its settings, each browser session's
chat and answers, the export folder, the paper picker's cache) and the helpers every tab's handlers use
(``ui_error``, ``make_filters``, ``trim_display``, the bounds on a chat). No Gradio here."""

from __future__ import annotations

import sys
import threading
from dataclasses import dataclass, field

from assistant.answer import Assistant
from assistant.settings import Calibration, Settings
from assistant.types import CitedAnswer

MAX_HISTORY_TURNS = Calibration().history.ui_turns
"""Turns (question, answer) the assistant reads as context for a follow-up (``calibration.history.ui_turns``)."""
MAX_DISPLAY_TURNS = 30
"""Turns the chat shows. Older ones are dropped from the page: the whole chat travels with every
request, so an unbounded one would make each question slower than the last."""
ANY = "any"
"""A filter dropdown's "no filter" choice."""


@dataclass
class Page:
    """One built page's state over ``assistant``, shared by its tabs' handlers (one per app, not per visitor).

    Per browser session (Gradio's ``session_hash``): ``chat_epochs``, bumped by New chat, so an answer still
    streaming stops writing once its chat was cleared (Gradio's cancel alone can lose the race with updates
    already on their way); ``answered``, the latest answers as ``[(key, answer)]``, newest first, whose
    sources the panel keeps. ``export_dir``: where the download buttons' files are written. ``picker``:
    the related-work picker's choices and the index state they were read at."""

    settings: Settings
    assistant: Assistant
    export_dir: str = ""
    chat_epochs: dict[str, int] = field(default_factory=dict)
    answered: dict[str, list[tuple[str, CitedAnswer]]] = field(default_factory=dict)
    picker: dict = field(default_factory=lambda: {"stamp": None, "choices": []})
    picker_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def api_visibility(self) -> str:
        """Behind a login (``settings.ui.auth``) the endpoints are left out of the API description, which
        Gradio also embeds in the login page, so a stranger does not read the index's venues, years and
        file names there."""
        return "undocumented" if self.settings.ui.auth else "public"


def ui_error(exc: BaseException) -> str:
    """One line for the page. User errors (an empty question, an unknown paper, a filter that matches
    nothing) are shown as they are; anything else, such as a Chroma server that went away, is named
    and logged as one line, so the page and the log stay readable and the next question can succeed."""
    from assistant.faces import one_line, user_errors
    from assistant.text import mask_secrets

    # The configured secrets masked: a key typed as a filter came back in "no indexed paper has venue …" (round nine).
    if isinstance(exc, user_errors()) or isinstance(exc, KeyError):
        return mask_secrets(one_line(exc))
    line = mask_secrets(f"{type(exc).__name__}: {one_line(exc)}")
    print(f"paper-assistant: request failed: {line}", file=sys.stderr)
    return f"the request failed ({line}); if the index is on a Chroma server, check that it is running"


def make_filters(venue: str | None = ANY, year: str | int | None = ANY, source: str | None = ANY,
                 has_code: bool = False, category: str | None = ANY):
    """The chat's filter dropdowns and code checkbox as retrieval Filters (``"any"`` or empty: no filter).
    Raises ValueError for a year that is not a number, or a filter given a list (a script's; the page sends one value)."""
    from assistant.retrieval import Filters

    def value(v):
        if isinstance(v, (list, dict, tuple)):  # Gradio lets a script send [] to a one-choice dropdown (round nine)
            raise ValueError("a filter takes one value, as the page's dropdowns send it")
        return None if v in (None, "", ANY) else v

    y = value(year)
    return Filters(venue=value(venue), year=int(y) if y is not None else None, source=value(source),
                   has_code=True if has_code else None, category=value(category))


def trim_display(history: list) -> list:
    """The latest ``MAX_DISPLAY_TURNS`` turns of a chat (a turn starts at a user message), behind a note."""
    starts = [i for i, m in enumerate(history) if m.get("role") == "user"]
    if len(starts) <= MAX_DISPLAY_TURNS:
        return history
    note = {"role": "assistant", "content": f'<span class="pa-trimmed">Earlier turns are not shown; the latest '
                                           f'{MAX_DISPLAY_TURNS} are kept.</span>'}
    return [note] + history[starts[-MAX_DISPLAY_TURNS]:]
