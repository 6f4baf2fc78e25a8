"""An in-process chat model for fast tests: the :class:`assistant.answer.llm.ChatModel` contract, no HTTP.

``FakeChat(replies)`` answers each call with the next scripted reply (the last one repeats). A reply
is a string, a list of pieces (streamed one by one), or an exception (raised before any piece).
``cut=True`` ends a stream without a finish reason, as a dropped connection does. Every call's
messages are recorded in ``calls``. For the wire protocol itself use tests/fake_openai.py.
"""

from __future__ import annotations

from collections.abc import Iterator

from assistant.answer.llm import LLMStreamIncomplete


class FakeChat:
    def __init__(self, replies=("OK [1].",), usage: dict[str, int] | None = None, cut: bool = False):
        self.replies = list(replies)
        self.usage = usage
        self.cut = cut
        self.calls: list[list] = []

    def _next(self, messages):
        self.calls.append(list(messages))
        reply = self.replies[min(len(self.calls) - 1, len(self.replies) - 1)]
        if isinstance(reply, BaseException):
            raise reply
        return [reply] if isinstance(reply, str) else list(reply)

    def complete(self, messages) -> str:
        return "".join(self._next(messages))

    def stream(self, messages, usage: dict | None = None) -> Iterator[str]:
        pieces = self._next(messages)
        yield from pieces
        if usage is not None and self.usage:
            usage.update(self.usage)
        if self.cut:
            raise LLMStreamIncomplete(None)
