"""What stands between the page's HTTP server and a stranger: a login that slows guessing down, and
a bound on every request body.

Gradio checks a password as often as it is asked (100 guesses took 1.2 s) and reads any request
body whole (a 3.5 MB malformed chat history came back as a 17.8 MB error and 35 MB of log). Both
guards are plain ASGI / callables handed to ``demo.launch`` (``auth=LoginGuard(...).check``, ``app_kwargs=``).
"""

from __future__ import annotations

import asyncio
import hmac
import time
from collections import deque

MAX_REQUEST_BYTES = 2 * 2**20
"""Largest request body the server reads (bytes). The whole chat travels with every question, and
30 shown turns with their sources stay far below this."""
MAX_UPLOAD = "1kb"
"""The page has no upload: Gradio's upload route accepts nothing bigger than this."""


class LoginGuard:
    """The login for Gradio (pass ``auth=guard.check``): checks ``user:password`` in constant time, and after
    ``free_failures`` failed logins within ``window_s`` seconds makes each further attempt wait
    ``delay_s`` seconds (doubling, at most ``max_delay_s``), one attempt at a time, so parallel
    guessing gains nothing. Waits are asyncio sleeps: the server's threads stay free."""

    def __init__(self, user: str, password: str, free_failures: int = 5, window_s: float = 300.0,
                 delay_s: float = 1.0, max_delay_s: float = 30.0):
        self.user, self.password = user, password
        self.free, self.window, self.delay, self.max_delay = free_failures, window_s, delay_s, max_delay_s
        self.failures: deque[float] = deque()
        self._lock: asyncio.Lock | None = None

    def wait_s(self, now: float | None = None) -> float:
        """Seconds the next attempt waits, from the failures in the window."""
        now = time.monotonic() if now is None else now
        while self.failures and now - self.failures[0] > self.window:
            self.failures.popleft()
        over = len(self.failures) - self.free
        return 0.0 if over < 0 else min(self.max_delay, self.delay * 2 ** min(over, 16))

    async def check(self, user: str, password: str) -> bool:
        """The ``auth=`` callable (a coroutine function: Gradio awaits only those)."""
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            wait = self.wait_s()
            if wait:
                await asyncio.sleep(wait)
            ok = hmac.compare_digest(user.encode(), self.user.encode()) & hmac.compare_digest(
                password.encode(), self.password.encode())
            if not ok:
                self.failures.append(time.monotonic())
            return bool(ok)


class BodyLimit:
    """ASGI middleware answering 413 to a request whose body is over ``max_bytes``: by its
    Content-Length before reading, else once the streamed body passes the limit."""

    def __init__(self, app, max_bytes: int = MAX_REQUEST_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            return await self._refuse(send)
        seen = 0

        async def limited():
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, limited, send)
        except _TooLarge:
            await self._refuse(send)

    async def _refuse(self, send) -> None:
        body = f"request body over {self.max_bytes // 2**20} MB: refused".encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})


class _TooLarge(Exception):
    pass


def launch_options() -> dict:
    """``demo.launch`` keyword arguments: the body limit and no uploads (the login is ``LoginGuard``)."""
    from starlette.middleware import Middleware

    return {"max_file_size": MAX_UPLOAD, "app_kwargs": {"middleware": [Middleware(BodyLimit)]}}
