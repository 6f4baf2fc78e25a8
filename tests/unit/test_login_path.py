"""Every spelling of Gradio's login route is one route to the login throttle (assistant.faces.web_guard)."""

import pytest

from assistant.faces.web_guard import is_login_path


@pytest.mark.parametrize("path", ["/login", "/login/", "/login%2F", "/login%252F", "//login", "/LOGIN", "/app/login",
                                  "/login//", "/%6Cogin"])
def test_login_spellings(path):
    assert is_login_path(path)


@pytest.mark.parametrize("path", ["/", "/logins", "/login/x", "/gradio_api/queue/join", "/loginx/", "", "/log%20in"])
def test_other_paths(path):
    assert not is_login_path(path)
