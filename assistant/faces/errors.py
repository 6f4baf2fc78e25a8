"""The errors a user can cause or fix, shown as one line by every face (CLI, UI).

Light to import (the standard library only): the CLI imports it at start-up, and the modules that
define the user errors load the answer path (LangChain, numpy, Chroma; about a second)."""

from __future__ import annotations

import re
import sys

# The library's user errors by module and class name. An exception of one of these classes can only
# have been raised once its module was imported, so `user_errors` looks them up among the loaded
# modules instead of importing them (tests/unit/test_startup.py checks every name resolves).
_USER_ERROR_CLASSES = (
    ("assistant.question.analysis", "QuestionError"), ("assistant.research.related", "UnknownPaperError"),
    ("vectorstore.papers.records", "CorpusError"), ("vectorstore.store.client", "StoreError"),
    ("vectorstore.encoding.contract", "EmbeddingModelError"), ("pydantic_core", "ValidationError"),
    ("assistant.answer.service", "EmptyIndexError"),
)


def _loaded(module: str, name: str) -> type[BaseException] | None:
    """The class ``module.name`` if that module is loaded (far enough to define it), else None:
    nothing can have raised it."""
    return getattr(sys.modules.get(module), name, None)


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception classes a user can cause or fix (for ``except`` and ``isinstance``): the
    library's (a bad question, an unknown paper id, a bad corpus file, an unreachable or missing
    index, an embedding model that cannot load, invalid settings), FileNotFoundError and ValueError."""
    loaded = (_loaded(module, name) for module, name in _USER_ERROR_CLASSES)
    return (*(cls for cls in loaded if cls is not None), FileNotFoundError, ValueError)


def one_line(exc: BaseException) -> str:
    """A user error as one line; a settings ValidationError names each bad field and its input."""
    validation_error = _loaded("pydantic_core", "ValidationError")  # pydantic.ValidationError
    if validation_error is not None and isinstance(exc, validation_error):
        parts = []
        for err in exc.errors():
            where = ".".join(str(x) for x in err.get("loc", ())) or "settings"
            got = err.get("input")
            shown = "" if isinstance(got, dict) else f" (got {_hide_secrets(where, got)!r})"
            msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")  # a validator's own words
            if isinstance(got, str) and _url_like(where, got):  # the URL parser quotes parts: a password's, a key's
                msg = re.sub(r"'[^']*'", "'***'", msg) if "@" in got else msg  # key-shaped runs: the whole line's
            parts.append(f"{where}: {msg}{shown}")
        what = "setting" if exc.title == "Settings" else exc.title.lower()
        from assistant.text import mask_secrets

        return _secret_runs(mask_secrets(f"invalid {what} " + "; ".join(parts)))
    if isinstance(exc, UnicodeDecodeError) and (where := env_file_problem(parse=False)):
        return where  # pydantic-settings reading a .env: the codec's words named no file (a tenth hostile round)
    text = str(exc)
    field = re.match(r'error parsing value for field "(\w+)" from source "\w*EnvSettingsSource"', text)
    if field:  # pydantic-settings names the section only: name the variables and what they must hold
        return (f"invalid setting {field.group(1)}: a PAPER_ASSISTANT_{field.group(1).upper()}__… variable that takes "
                "a JSON value does not hold valid JSON (e.g. PAPER_ASSISTANT_STORE__HEADERS='{\"X-Token\": \"…\"}')")
    return text.splitlines()[0] if text else type(exc).__name__


MAX_ENV_BYTES = 1 << 20
"""Bytes a settings file (``.env``) may have: a few hundred are usual."""


def env_file_problem(parse: bool = True) -> str | None:
    """One line naming a settings file (``.env``, :data:`assistant.settings.ENV_FILES`) that is no UTF-8 text or
    (``parse``) holds a line python-dotenv cannot read, or None. Such a line (an unclosed quote) was passed over with
    a warning each time a setting was read (154 lines a command), and it took the key with it: ``doctor`` then said
    "LLM: none configured" (a twelfth hostile round)."""
    import io
    import logging
    import os
    import stat
    from pathlib import Path

    from assistant.settings import ENV_FILES

    logging.getLogger("dotenv.main").setLevel(logging.ERROR)  # said here once, not by each read
    for path in ENV_FILES:
        try:
            st = os.stat(path)
        except OSError:
            continue
        where = Path(path).absolute()
        if not stat.S_ISREG(st.st_mode):  # a link to /dev/zero was read without end, a FIFO waited forever (13th round)
            return f"the settings file {where} is no plain file (a FIFO, device or folder): make it a plain file"
        if st.st_size > MAX_ENV_BYTES:
            return f"the settings file {where} is {st.st_size:,} bytes, over the {MAX_ENV_BYTES:,} a settings file may have"
        try:
            text = Path(path).read_bytes().decode("utf-8")
        except UnicodeDecodeError as err:
            return f"the settings file {Path(path).absolute()} is not UTF-8 text (byte {err.start}): re-save it as UTF-8"
        except OSError:
            continue
        if parse:
            from dotenv.parser import parse_stream

            bad = next((b.original.line for b in parse_stream(io.StringIO(text)) if b.error), None)
            if bad is not None:
                return (f"the settings file {Path(path).absolute()} cannot be read at line {bad} (an unclosed quote, or "
                        "no NAME=value): fix that line")
    return None


def _hide_secrets(where: str, value):
    """A setting's input as shown in an error: a key, token, password or ``user:pass`` (``auth``) field's as ``***``
    (judged by the field's own name, so ``max_tokens`` shows the user's number); a URL as :func:`_shown_url`; a
    number, a truth value or a path as given; any other text as ``***`` (it may be a secret pasted there)."""
    field = where.rsplit(".", 1)[-1]
    if re.search(r"(?:^|_)(?:key|token|secret|password|passwd|auth|headers?)$", field, re.I) and not re.search(
            r"per_token$", field, re.I):
        return "***"
    if isinstance(value, str) and _url_like(where, value):
        return _shown_url(value)
    if isinstance(value, (int, float, type(None))):  # bool included
        return value
    # Any other text is shown only when it is a number, a truth value or a path: a secret the user pasted into
    # the wrong setting (a timeout, the role) reached the error however the key was set (rounds five to seven).
    if isinstance(value, str) and (_PLAIN.fullmatch(value.strip()) or re.search(r"(?:index|corpus|dir)$", field)):
        return value
    return "***"


_PLAIN = re.compile(r"[+-]?(?:\d[\d_]*\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|[+-]?(?:inf|infinity|nan)|true|false|yes|no|on|off|",
                    re.I)
"""Setting inputs shown as given: numbers (inf and nan too), truth values, nothing."""


def _url_like(where: str, value: str) -> bool:
    """A setting's input read as a URL: a URL field's (``base_url``, ``host``), or any holding ``://`` or ``@``
    (a password in ``user:pw@host:8000/v1``, no scheme, reached the error whole: a sixth hostile round)."""
    return bool(re.search(r"(?:url|host)$", where, re.I)) or "://" in value or "@" in value


def _shown_url(url: str) -> str:
    """A URL as a settings error shows it: everything before its last ``@`` (a user and password, even one
    holding ``/`` or ``@``) and its query and fragment as ``***`` (key-shaped runs in the host or path are masked
    with the whole line, :func:`_secret_runs`); the scheme, host, port and plain path as given. A fourth hostile
    round saw the password's tail past a second ``@``, and the API key pasted into a bad base URL, verbatim."""
    shown = re.sub(r"^([a-z][a-z0-9+.-]*://)?.*@", lambda m: f"{m.group(1) or ''}***@", url, flags=re.I | re.S)
    return re.sub(r"[?#].*", "?***", shown, flags=re.S)  # its key-shaped runs go with the whole line's


def _secret_runs(text: str) -> str:
    """``text`` with each run of 16 or more letters, digits, ``_`` and ``-`` holding both letters and digits (a
    key's shape; no host name, path word or port is) as ``***``."""
    return re.sub(r"[A-Za-z0-9_-]{16,}", lambda m: "***" if re.search(r"\d", m[0]) and re.search(r"[A-Za-z]", m[0])
                  else m[0], text)


def exit_message(exc: BaseException) -> tuple[str, int]:
    """``(one line, exit code)`` for an exception that ended a command: a user error, a click usage
    error (with a pointer to ``--help``), a lost Chroma server, or anything unexpected (code 2); the configured
    secrets masked in it (:func:`assistant.text.mask_secrets`: a key pasted into a host setting was printed, round
    eight)."""
    from assistant.text import mask_secrets

    line, code = _exit_message(exc)
    return mask_secrets(line), code


def _exit_message(exc: BaseException) -> tuple[str, int]:
    if isinstance(exc, user_errors()):
        return one_line(exc), 2
    import click

    # typer may carry its own copy of click: recognise click's exceptions by their shape too.
    if isinstance(exc, click.ClickException) or (hasattr(exc, "show") and hasattr(exc, "exit_code")):
        ctx = getattr(exc, "ctx", None)
        hint = f" (see `{ctx.command_path} --help`)" if ctx is not None else ""
        # typer checks a Literal choice through pydantic, whose message starts "Value error, "
        return f"{exc.format_message().replace('Value error, ', '')}{hint}", exc.exit_code
    first = str(exc).splitlines()[0] if str(exc) else ""
    if type(exc).__module__.split(".")[0] == "httpx" or isinstance(exc, ConnectionError):
        # The Chroma server went away mid-command (ingest resumes where it stopped when run again).
        return (f"lost the connection to the Chroma server ({type(exc).__name__}: {first}); "
                "run the command again once the server is back"), 2
    if type(exc).__module__.split(".")[0] in ("chromadb", "pyo3_runtime") or type(exc).__name__ == "PanicException":
        from vectorstore.integrity import SQLITE_CORRUPT

        if any(words in first for words in SQLITE_CORRUPT):  # a damaged page found at query time, not on open
            return ("the index database (chroma/chroma.sqlite3) is damaged (SQLite: "
                    f"{next(w for w in SQLITE_CORRUPT if w in first)}): delete the index folder and run "
                    "`paper-assistant ingest` again (the paper files are not touched)"), 2
        if "readonly database" in first or "read-only file system" in first.lower():
            # A read-only index (its files or its disk): Chroma writes on every open, and said "(code: 8) attempt to
            # write a readonly database" with no remedy (a third hostile round).
            return ("the index cannot be written by this user (its database is read-only): give this user write "
                    "access to the index folder (e.g. `chmod -R u+rwX` on it), or copy it somewhere writable and "
                    "pass that with --index; nothing was changed"), 2
        # Chroma's own failures (a damaged HNSW or SQLite file, a failed compaction) name no remedy.
        from assistant.text import shown_part

        return (f"the Chroma index failed ({type(exc).__name__}: {shown_part(first, 200)}); if the disk is full, free some "
                "space and try again; otherwise its files are damaged: delete the index folder and run "
                "`paper-assistant ingest` again (the paper files are not touched)"), 2
    if isinstance(exc, PermissionError):  # an index folder at mode 000 was "unexpected PermissionError" (a 5th round)
        return permission_line(exc), 2
    return f"unexpected {type(exc).__name__}: {first}", 2


def permission_line(exc: PermissionError) -> str:
    """One line for a file or folder this user may not read or write (``exc.filename``), and what to do."""
    where = exc.filename or "a file this command needs"
    return (f"{where}: permission denied for this user: give this user read and write access to it (e.g. "
            f"`chmod -R u+rwX` on the index folder), or run as its owner, or choose another --index")
