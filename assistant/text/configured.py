"""The secrets this process was configured with, masked where an error leaves it (stderr, MCP errors, the page's errors).

A user who pastes their own key or the page's password into another input (a filter, a file name, a host
setting) must not see it come back in an error: rounds five to nine of hostile testing found one output path
after another that echoed it (settings errors, runtime errors, ``fail()`` lines, ``skipped:`` lines, MCP tool
and protocol errors, the page's error events and its log). So the secrets are masked once at each output
boundary (:func:`mask_secrets`) instead of in each message:

- the CLI's and ``app.py``'s stderr (:class:`assistant.text.sanitize.TerminalSafe` with ``mask=``);
- MCP's JSON-RPC errors and tool errors, on stdio and HTTP (:func:`masked_strings`);
- the page's error replies (:mod:`assistant.faces.masked_errors`).

Answers and paper lists on stdout are not masked here: the LLM's reply is already masked against the key
(:class:`assistant.text.masking.StreamRedactor`), and a page password that is a word ("research") would
otherwise be cut out of every abstract.
"""

from __future__ import annotations

import functools
import os
import stat

_added: set[str] = set()


def add_secret(value: str | None) -> None:
    """Mask ``value`` too from now on in this process (the page password given as ``--auth user:pass``: give the
    password). Values under 4 characters are ignored, as :func:`assistant.text.masking.redact` ignores them."""
    if isinstance(value, str) and len(value.strip()) >= 4:
        _added.add(value)


def configured_secrets() -> tuple[str, ...]:
    """The secrets to mask, read from the environment and ``.env`` (each source alone: one bad variable must not
    hide the others' secrets): ``OPENAI_API_KEY``, ``PAPER_ASSISTANT_LLM__API_KEY``, the password of
    ``PAPER_ASSISTANT_UI__AUTH``, a password or query value of the LLM's base URL, and those added with
    :func:`add_secret`. Read again only when those variables or the ``.env`` files change (a stat per call)."""
    from assistant.settings import ENV_FILES

    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(("PAPER_ASSISTANT_", "OPENAI_"))))
    files = []
    for path in ENV_FILES:
        try:
            st = os.stat(path)
        except OSError:
            continue
        # Only a plain file of a sane size is read: a FIFO .env made this wait forever, and a link to /dev/zero read
        # without end, on the first line written to stderr (a thirteenth hostile round; the CLI names such a file).
        if stat.S_ISREG(st.st_mode) and st.st_size <= 1 << 20:
            files.append((str(path), os.path.abspath(path), st.st_mtime_ns, st.st_size))
    return _read_secrets(env, tuple(files)) + tuple(sorted(_added))


@functools.lru_cache(maxsize=4)
def _read_secrets(env: tuple, files: tuple) -> tuple[str, ...]:
    """The configured secrets for one state of the environment (``env``) and ``.env`` files (``files``: ``(path as
    given, absolute path, mtime, size)`` of each plain one to read, in order)."""
    from pydantic_settings import BaseSettings, SettingsConfigDict

    from assistant.settings import _OpenAIEnv
    from assistant.text.masking import url_secrets

    readable = tuple(f[0] for f in files)

    class Secrets(BaseSettings):  # read alone: the settings as a whole may be what failed
        model_config = SettingsConfigDict(env_prefix="PAPER_ASSISTANT_", env_nested_delimiter="__",
                                          env_file=readable, extra="ignore")
        llm: dict | str | list | int | float | None = None
        ui: dict | str | list | int | float | None = None

    def read(source):
        try:
            return source()
        except Exception:  # noqa: BLE001 - a section that is no object, a .env that cannot be read
            return None

    found, openai = read(Secrets), read(lambda: _OpenAIEnv(_env_file=readable))
    llm, ui = (getattr(found, name, None) for name in ("llm", "ui"))
    llm = llm if isinstance(llm, dict) else {}
    secrets = [openai.api_key.get_secret_value() if openai and openai.api_key else None, llm.get("api_key"),
               str(ui.get("auth") or "").partition(":")[2] if isinstance(ui, dict) else None]
    for url in (llm.get("base_url"), openai.base_url if openai else None):
        secrets += url_secrets(url)  # as written and percent-decoded
    return tuple(dict.fromkeys(s for s in secrets if isinstance(s, str) and len(s.strip()) >= 4))


def mask_secrets(text: str) -> str:
    """``text`` with every configured secret (:func:`configured_secrets`) masked in every form
    :func:`assistant.text.masking.redact` knows (reversed, spaced out, encoded, in part). Costs a few
    microseconds when none is configured. Any failure leaves the text as it is: it is already an error's."""
    try:
        secrets = configured_secrets()
        if not secrets or not text:
            return text
        from assistant.text.masking import mask_all

        return mask_all(text, list(secrets))
    except Exception:  # noqa: BLE001 - never replace the output being shown with an error of ours
        return text


def shown_part(text: str, limit: int) -> str:
    """The first ``limit`` characters of ``text`` as shown in a message, the configured secrets masked BEFORE it is
    cut: a key cut first leaves a piece too short to be known (a 164-character key showed its first 38 characters,
    an eleventh hostile round). At most ``limit`` + 4,000 characters are read, far past any key."""
    return mask_secrets(text[: limit + 4000])[:limit]


def masked_strings(value):
    """``value`` (a JSON value: dicts, lists, strings, numbers) with :func:`mask_secrets` applied to every
    string in it, keys included; the same object when no secret is configured."""
    if not configured_secrets():
        return value
    return _masked_json(value)


def _masked_json(value):
    if isinstance(value, str):
        return mask_secrets(value)
    if isinstance(value, dict):
        return {_masked_json(k): _masked_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_masked_json(v) for v in value]
    return value
