"""What every face shares: errors a user can cause or fix (``errors``), the console runner (``console``), plain-text
and JSON renderings (``render``; a comparison's: ``compared``), ``doctor``, the page's login and request bounds
(``web_guard``) and its log of failed requests (``web_log``), and error replies with the configured secrets masked
(``masked_errors``).

Imports: ``evaluation`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "compared": ("comparison_markdown", "comparison_text"),
    "console": ("run", "safe_streams"),
    "doctor": ("run_doctor",),
    "errors": ("env_file_problem", "exit_message", "one_line", "user_errors"),
    "masked_errors": ("MaskedErrorBodies", "masked_reply"),
    "render": ("also_heading", "answer_json", "answer_text", "list_html", "list_json", "list_markdown",
        "list_text", "near_records", "related_json", "related_markdown", "related_records", "related_text"),
    "web_guard": ("LoginGuard", "launch_options"),
})
