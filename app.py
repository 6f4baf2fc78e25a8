"""The chat page's entry point: ``python app.py`` serves it with the environment's settings (``PAPER_ASSISTANT_*``,
``.env``); ``paper-assistant serve`` (``make run``) serves the same page and takes flags. The page itself, its
tabs and its launch are :mod:`assistant.page`."""

from __future__ import annotations

import sys


def main() -> int:
    """Serve the page until Ctrl-C or SIGTERM. Returns the exit status: 0, 130 after Ctrl-C, or for an error the
    CLI's code (2: one the user can fix) after its one line on stderr, as ``paper-assistant serve`` prints it."""
    # Importing the assistant package first switches every library's telemetry off (vectorstore.offline),
    # before Gradio loads.
    from assistant.faces import env_file_problem, exit_message, safe_streams
    from assistant.page import launch
    from assistant.settings import load_settings

    with safe_streams():  # the log and errors as the CLI's: no escape sequences, the configured secrets masked
        problem = env_file_problem()
        if problem:  # before any setting is read, as the CLI checks it
            print(f"error: {problem}", file=sys.stderr)
            return 2
        try:
            launch(load_settings())
        except KeyboardInterrupt:
            return 130
        except Exception as exc:  # one line, as the CLI prints it
            message, code = exit_message(exc)
            print(f"error: {message}", file=sys.stderr)
            return code
    return 0


if __name__ == "__main__":
    sys.exit(main())
