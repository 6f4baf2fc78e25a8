"""Serving the page: the checks before anything loads (an exposed bind needs a login, the port must be free), the
index made ready (:func:`prepare_assistant` ingests the configured corpus when missing or stale), then
:func:`launch` with the page's look, our own start line, and SIGTERM ending it as Ctrl-C does. Binds 127.0.0.1
by default; any other address requires ``--auth user:pass``. Analytics are off, so starting the page makes no
outbound connection (:mod:`vectorstore.offline`, imported by :mod:`assistant` before Gradio loads)."""

from __future__ import annotations

import ipaddress
import sys
import threading

from assistant.answer import Assistant
from assistant.page.blocks import build_app
from assistant.page.render import page_options
from assistant.settings import Settings


def is_loopback(host: str) -> bool:
    """True for "localhost" and a loopback IP address (127.0.0.0/8, ::1)."""
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_auth(auth: str | None) -> tuple[str, str] | None:
    """``"user:pass"`` → ("user", "pass"); raises ValueError on another shape."""
    if not auth:
        return None
    if ":" not in auth or auth.startswith(":") or auth.endswith(":"):
        raise ValueError("auth must look like user:password")
    user, _, pw = auth.partition(":")
    return user, pw


def prepare_assistant(settings: Settings, ingest_default: bool = True) -> Assistant:
    """Ingest the configured corpus if the index is missing or stale, then open the Assistant."""
    from assistant.answer import corpus_to_refresh, get_assistant, get_index
    from vectorstore.ingest import ingest

    if ingest_default:
        from vectorstore.store import IndexInUseError

        import os

        was_new = not os.path.exists(settings.index)  # no OSError: get_index names a location it cannot use
        index = get_index(settings, create=True)
        try:
            report = ingest(corpus_to_refresh(settings, index, was_new), index, write_batch=settings.store.write_batch)
        except IndexInUseError as exc:
            if not index.store.counts()[0]:
                raise
            # Another process is writing (an ingest of more papers, say): readers need no lock.
            print(f"warning: {exc}; serving the index as it is (the papers it adds appear as they are written)",
                  file=sys.stderr)
        else:
            if report.added or report.updated or report.removed or report.skipped:
                print(f"ingested the corpus: {report.summary()}", file=sys.stderr)
            for reason in report.skipped + [f"entry {line}" for line in report.entries.skipped[:20]]:
                print(f"skipped: {reason}", file=sys.stderr)
    return get_assistant(settings)


def launch(settings: Settings, ingest_default: bool = True, block: bool = True):
    """Ingest if needed, build and launch the app. Raises ValueError for an exposed bind without auth."""
    host, port = settings.ui.host, settings.ui.port
    auth = parse_auth(settings.ui.auth)
    if ":" in host:
        raise ValueError(f"cannot serve on the IPv6 address {host}: use 127.0.0.1 (or an IPv4 address with --auth)")
    if not is_loopback(host) and not auth:
        raise ValueError(f"refusing to bind {host} without authentication: pass --auth user:pass "
                         "(or PAPER_ASSISTANT_UI__AUTH)")
    check_port_free(host, port)  # before ingesting, not after
    assistant = prepare_assistant(settings, ingest_default)
    demo = build_app(settings, assistant)
    demo.queue(default_concurrency_limit=20)
    try:
        from assistant.faces import LoginGuard

        result = demo.launch(server_name=host, server_port=port, auth=LoginGuard(*auth).check if auth else None, share=False,
                             prevent_thread_lock=True, quiet=True, **page_options())
    except OSError as exc:  # lost a race for the port since the check
        raise ValueError(f"cannot serve on {host}:{port}: {exc}".splitlines()[0]) from None
    # Our own line instead of Gradio's banner (which suggests share=True), once the page is up.
    print(f"Paper Assistant on http://{host}:{port}" + (" (login required)" if auth else ""), file=sys.stderr)
    if block:
        import signal

        if threading.current_thread() is threading.main_thread():
            # SIGTERM (a service manager, `kill`) ends the process like Ctrl-C, so the server closes
            # and the atexit clean-up (the export folder) runs; Python's default would skip both.
            signal.signal(signal.SIGTERM, _terminate)
        demo.block_thread()
    return result


def _terminate(signum, frame):
    """SIGTERM's handler: end as Ctrl-C does."""
    raise KeyboardInterrupt


def check_port_free(host: str, port: int) -> None:
    """Raise ValueError (one line, what to do) when ``host:port`` cannot be bound, e.g. already in use."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            socket.getaddrinfo(host, port, socket.AF_INET, socket.SOCK_STREAM)
        except OSError as exc:  # a host that names no address: another port would not help (round nine)
            raise ValueError(f"cannot serve on {host}: no address of that name ({exc.strerror or exc}): give "
                             "--host 127.0.0.1 or an address of this machine (or PAPER_ASSISTANT_UI__HOST)") from None
        try:
            sock.bind((host, port))
        except OSError as exc:
            raise ValueError(f"cannot serve on {host}:{port} ({exc.strerror or exc}): choose another port with "
                             "--port (or PAPER_ASSISTANT_UI__PORT)") from None

