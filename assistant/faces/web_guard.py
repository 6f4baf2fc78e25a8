"""What stands between the page's HTTP server and a stranger: a login that slows guessing down, a
bound on every request body, and no route the page does not use (uploads, unknown API calls).

Gradio checks a password as often as it is asked (100 guesses took 1.2 s) and reads any request
body whole (a 3.5 MB malformed chat history came back as a 17.8 MB error and 35 MB of log). The
guards are plain ASGI middleware and a callable handed to ``demo.launch`` (``app_kwargs=``,
``auth=LoginGuard(...).check``).
"""

from __future__ import annotations

import hmac
import math
import time
from collections import deque

MAX_REQUEST_BYTES = 2 * 2**20
"""Largest request body the server reads (bytes). The whole chat travels with every question, and
30 shown turns with their sources stay far below this."""
MAX_UPLOAD = "1kb"
"""The page has no upload: its route is closed (:class:`ClosedRoutes`), and Gradio's own cap stays behind it."""


class LoginGuard:
    """The login for Gradio (pass ``auth=guard.check``): ``user:password`` compared in constant time.
    Guessing is slowed per client address by :class:`LoginThrottle`, not here: Gradio's ``auth``
    callable does not see who asks, and one shared delay let a guesser lock the real user out."""

    def __init__(self, user: str, password: str):
        self.user, self.password = user, password

    async def check(self, user: str, password: str) -> bool:
        """The ``auth=`` callable (a coroutine function: Gradio awaits only those)."""
        return bool(hmac.compare_digest(user.encode(), self.user.encode())
                    & hmac.compare_digest(password.encode(), self.password.encode()))


class LoginThrottle:
    """ASGI middleware slowing login guesses per client address (the connection's: see
    :func:`launch_options` for forwarded headers): after ``free_failures`` failed logins
    (HTTP 400 from ``POST …/login``) within ``window_s`` seconds, the address may try again only
    ``delay_s`` seconds after its last failure, doubling up to ``max_delay_s``. An attempt before then,
    or while another from the same address is being checked, is answered at once with 429 and the
    seconds to wait (``Retry-After``): nothing queues, so parallel guessing gains nothing and the owner
    is never stuck behind a guesser's queue (it waited 30 s). A success clears the address. Other
    addresses, and sessions already logged in, are not slowed."""

    def __init__(self, app, free_failures: int = 5, window_s: float = 300.0, delay_s: float = 1.0,
                 max_delay_s: float = 30.0):
        self.app = app
        self.free, self.window, self.delay, self.max_delay = free_failures, window_s, delay_s, max_delay_s
        self.failures: dict[str, deque[float]] = {}
        self._checking: set[str] = set()
        THROTTLES.append(self)

    def wait_s(self, client: str, now: float | None = None) -> float:
        """Seconds from ``client``'s last failure until it may try again (0: at once)."""
        now = time.monotonic() if now is None else now
        seen = self.failures.get(client, deque())
        while seen and now - seen[0] > self.window:
            seen.popleft()
        over = len(seen) - self.free
        return 0.0 if over < 0 else min(self.max_delay, self.delay * 2 ** min(over, 16))

    def retry_in(self, client: str, now: float | None = None) -> float:
        """Seconds ``client`` must still wait before its next attempt is checked (0: now)."""
        now = time.monotonic() if now is None else now
        seen = self.failures.get(client)
        wait = self.wait_s(client, now)
        return max(0.0, seen[-1] + wait - now) if wait and seen else 0.0

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or scope.get("method") != "POST" or not is_login_path(scope.get("path", "")):
            return await self.app(scope, receive, send)
        client = (scope.get("client") or ("?", 0))[0]
        # No await between the check and the mark: asyncio runs this atomically.
        retry = self.retry_in(client)
        if retry or client in self._checking:
            return await _too_many(send, max(1, math.ceil(retry)))
        self._checking.add(client)
        status = {}

        async def watched(message):
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            self._checking.discard(client)
            if status.get("code") == 400:
                self.failures.setdefault(client, deque()).append(time.monotonic())
            elif status.get("code") == 200:
                self.failures.pop(client, None)


def is_login_path(path: str) -> bool:
    """True for every spelling of the login route a server may route to Gradio's login: ``/login``,
    ``/login/`` (Gradio serves both), ``/login%2F`` (decoded again, however often it was quoted), doubled
    slashes, any case, under a root path. A throttle that matched only ``…/login`` let 40 guesses a second
    through ``/login/``."""
    from urllib.parse import unquote

    for _ in range(4):  # "%252F" is "%2F" quoted again
        decoded = unquote(path)
        if decoded == path:
            break
        path = decoded
    parts = [p for p in path.lower().split("/") if p]
    return bool(parts) and parts[-1] == "login"


async def _too_many(send, retry_s: int) -> None:
    body = f"too many failed logins from this address: try again in {retry_s} s".encode()
    await send({"type": "http.response.start", "status": 429,
                "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", str(retry_s).encode())]})
    await send({"type": "http.response.body", "body": body})


THROTTLES: list[LoginThrottle] = []
"""Every LoginThrottle made in this process (the app makes one per launch), for tests and ``doctor``."""


class BodyLimit:
    """ASGI middleware answering 413 to a request whose body is over ``max_bytes``: by its Content-Length before
    reading; a body without one (chunked) is read first, up to ``max_bytes`` + one piece, and handed to the app
    only when it is within the limit. Handing the app a chunked body as it arrived let the app's own parsers
    answer first: a 3 MB JSON body got Gradio's 400 "error parsing the body", a 3 MB login form Starlette's 400
    "Field exceeded maximum size of 1024KB" (hostile round #35, F17), where the same body with a length got 413.
    At most ``max_bytes`` (2 MB) is held per request, what the app would have read anyway."""

    def __init__(self, app, max_bytes: int = MAX_REQUEST_BYTES):
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and length.isdigit():  # the server reads no more than it says
            if int(length) > self.max_bytes:
                return await self._refuse(send)
            return await self.app(scope, receive, send)
        body, over = await read_body(receive, self.max_bytes)
        if over:
            return await self._refuse(send)
        return await self.app(scope, replay(body, receive), send)

    async def _refuse(self, send) -> None:
        body = f"request body over {self.max_bytes // 2**20} MB: refused".encode()
        await send({"type": "http.response.start", "status": 413,
                    "headers": [(b"content-type", b"text/plain"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


async def read_body(receive, limit: int) -> tuple[list[dict], bool]:
    """``(the request's messages read, over)``: ``http.request`` messages until the last (or a disconnect),
    stopping once more than ``limit`` bytes came (``over`` True; the rest is never read)."""
    messages, seen = [], 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        seen += len(message.get("body", b""))
        if seen > limit:
            return messages, True
        if not message.get("more_body", False):
            return messages, False


def replay(messages: list[dict], receive):
    """A ``receive`` handing out ``messages`` (read by :func:`read_body`) first, then the connection's own
    (a streaming reply waits on it for the client leaving)."""
    pending = list(messages)

    async def receive_again():
        return pending.pop(0) if pending else await receive()

    return receive_again


class ClosedRoutes:
    """ASGI middleware answering 404 (short, nothing logged) to Gradio routes the page does not offer: the
    upload route (the page takes no file; 200 uploads of 1 kB in 3 s were each kept on disk) and an API
    call naming no endpoint of the app: ``POST …/gradio_api/call/nosuch`` (and ``run/``, ``api/``, hostile round
    #35, F9) was a 500 with a 50-line traceback in the log, each time. A body naming an endpoint by a
    ``fn_index`` the app has not (``queue/join``, ``run/``, ``api/``: Gradio then ignores the name) gets 422. The
    app's endpoints are read from the Gradio app serving the request (``scope["app"].get_blocks()``), so one
    built later or elsewhere is seen as it is."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        if _unknown_stream(scope):
            return await _answer(send, 404, b"not found")
        route, fns = _api_route(scope)
        if route[:1] == ["upload"]:
            return await _answer(send, 404, b"not found")
        if fns is None:  # no Gradio app to ask (another route, or an app without endpoints)
            return await self.app(scope, receive, send)
        if route[0] == "call" and _api_name(route) not in _names(fns):
            return await _answer(send, 404, b"not found")
        if scope.get("method") != "POST" or route[0] not in ("run", "api", "queue"):
            return await self.app(scope, receive, send)
        body, _ = await read_body(receive, MAX_REQUEST_BYTES)  # BodyLimit, outside, has bounded it
        fn_index = _fn_index(b"".join(m.get("body", b"") for m in body), fns)
        if fn_index == INVALID:  # Gradio reads such a body itself, and one of them crashed it (fn_index 1e400: a 500)
            return await _answer(send, 422, b'{"detail": "the request body is no valid call"}', b"application/json")
        if fn_index is not None and fn_index not in fns:
            return await _answer(send, 422, f'{{"detail": "no endpoint has fn_index {fn_index}"}}'.encode(),
                                 b"application/json")
        if fn_index is None and route[0] != "queue" and _api_name(route) not in _names(fns):
            return await _answer(send, 404, b"not found")
        return await self.app(scope, replay(body, receive), send)


def _api_route(scope) -> tuple[list[str], dict | None]:
    """``(the path's parts after its last "gradio_api", the app's endpoints {fn_index: fn})`` for a route
    :class:`ClosedRoutes` judges (upload, ``call/``, ``run/``, ``api/``, ``queue/join``), else ``([], None)``."""
    route = _after_gradio_api(scope)
    if route is None:
        return [], None
    if route[:1] == ["upload"]:
        return route, None
    if not ((route[:1] in (["call"], ["run"], ["api"]) and len(route) >= 2) or route == ["queue", "join"]):
        return [], None
    blocks = getattr(scope.get("app"), "get_blocks", lambda: None)()
    fns = getattr(blocks, "fns", None)
    return route, fns if isinstance(fns, dict) else None


def _unknown_stream(scope) -> bool:
    """True for a GET of an event stream Gradio holds nothing for: ``call/NAME/EVENT`` of an unknown event, or
    ``queue/data`` of an unknown session. Gradio found out inside the stream it had begun, so each such request logged
    "Exception in ASGI application" (60 lines) and broke its reply (a thirteenth hostile round)."""
    route = _after_gradio_api(scope)
    if scope.get("method") != "GET" or route is None:
        return False
    queue = getattr(getattr(scope.get("app"), "get_blocks", lambda: None)(), "_queue", None)
    if queue is None:
        return False
    if route == ["queue", "data"]:
        from urllib.parse import parse_qs

        session = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("session_hash", [""])[0]
        return session not in getattr(queue, "pending_messages_per_session", {session: None})
    if route[:1] == ["call"] and len(route) == 3 + (route[1:2] == ["v2"]):
        event = route[-1]
        pending = getattr(queue, "pending_event_ids_session", {})
        return event not in getattr(queue, "event_ids_to_events", {event: None}) and not any(
            event in ids for ids in pending.values())
    return False


def _after_gradio_api(scope) -> list[str] | None:
    """The request path's parts after its last "gradio_api", or None when it has none."""
    parts = [p for p in scope.get("path", "").split("/") if p]
    return parts[len(parts) - parts[::-1].index("gradio_api"):] if "gradio_api" in parts else None


def _api_name(route: list[str]) -> str:
    """The endpoint a route names: POST call/[v2/]NAME[/], GET call/[v2/]NAME/EVENT, POST run|api/NAME[/]."""
    return route[2] if route[1] == "v2" and len(route) > 2 else route[1]


def _names(fns: dict) -> set[str]:
    return {f.api_name for f in fns.values() if isinstance(getattr(f, "api_name", None), str)}


INVALID = "invalid"
"""What :func:`_fn_index` gives for a body no predict call can be."""


def _fn_index(body: bytes, fns: dict) -> int | str | None:
    """The ``fn_index`` of a predict body as Gradio reads it (its own model, so "3" and 3.0 are 3 there too); None
    when it names none; :data:`INVALID` when the body is no valid one, or gives fewer input values than ``fns``
    (the app's endpoints) say its endpoint takes (answered 422 here: Gradio's own reading of
    ``"fn_index": 1e400`` raised past its handler, a 500 and a 96-line traceback, a third hostile round)."""
    from gradio.data_classes import PredictBody
    from pydantic import ValidationError

    if not body.strip():
        return None
    try:
        call = PredictBody.model_validate_json(body)
    except (ValidationError, ValueError):
        return INVALID
    fn = fns.get(call.fn_index) if call.fn_index is not None else None
    if fn is not None and len(call.data) < len(getattr(fn, "inputs", None) or []):
        return INVALID  # Gradio counts them too, raising past its handler: a traceback per request (a 4th round)
    return call.fn_index


async def _answer(send, status: int, body: bytes, content_type: bytes = b"text/plain") -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", content_type), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


TRUSTED_PROXIES = "FORWARDED_ALLOW_IPS"
"""uvicorn's (Gradio's server's) own setting: the addresses whose X-Forwarded-For header it takes as the
client's address. Unset, uvicorn trusts 127.0.0.1 and ::1, so any local process (or a guesser behind a
local tunnel) could name any client, and a guesser sending another address each time was never slowed."""


def launch_options() -> dict:
    """``demo.launch`` keyword arguments: error replies masked (:class:`assistant.faces.MaskedErrorBodies`), the body
    limit, the login throttle, no uploads and no unknown API routes (:class:`ClosedRoutes`; the login itself is
    ``LoginGuard``), and no error text but our own (``gr.Error``) to clients: Gradio's own (a pydantic report of
    every malformed message, component reprs with addresses) stays in the log, bounded (:class:`assistant.faces.web_log.BoundedTraceback`).
    Also makes the server trust no proxy's forwarded headers unless :data:`TRUSTED_PROXIES` is set (a reverse proxy
    of one's own: name its address there), so the throttle counts the connection's own address."""
    import os

    import gradio.queueing
    from starlette.middleware import Middleware

    from assistant.faces.masked_errors import MaskedErrorBodies
    from assistant.faces.web_log import BoundedTraceback

    # Read by uvicorn.Config, which Gradio makes inside demo.launch; "" matches no address.
    os.environ.setdefault(TRUSTED_PROXIES, "")
    gradio.queueing.traceback = BoundedTraceback()  # the queue's only use of the module is print_exc

    return {"max_file_size": MAX_UPLOAD, "show_error": False,
            "app_kwargs": {"middleware": [Middleware(MaskedErrorBodies), Middleware(BodyLimit), Middleware(ClosedRoutes),
                                          Middleware(LoginThrottle)]}}
