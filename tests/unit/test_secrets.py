"""The API key and a base-URL password never reach a message, however an endpoint echoes them."""

import pytest
from pydantic import SecretStr, ValidationError

from assistant.errors import one_line
from assistant.llm import redact
from assistant.settings import LLMSettings

KEY = "sk-proj-Abc123Def456Ghi789"


@pytest.mark.parametrize("echo", [KEY, KEY.upper(), KEY.lower(), KEY[:-1], KEY[1:], f"Bearer {KEY}", f"key={KEY[3:]}"])
def test_an_echoed_key_is_masked_upper_cased_or_cut_by_a_character(echo):
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    shown = redact(f"401 Unauthorized: invalid key {echo} for this project.", cfg)
    assert shown.startswith("401 Unauthorized: invalid key ") and shown.endswith("*** for this project.")
    assert not any(KEY.lower()[i : i + 6] in shown.lower() for i in range(len(KEY) - 5))


def test_words_that_merely_start_like_the_key_stay():
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    assert redact("the model sk-proj is not loaded.", cfg) == "the model sk-proj is not loaded."


def test_a_password_in_the_base_url_is_masked_in_the_settings_error():
    with pytest.raises(ValidationError) as err:  # refused while parsing: nothing is ever connected to
        LLMSettings(base_url="http://alice:hunter2secret@127.0.0.1:abc/v1", model="m")
    line = one_line(err.value)
    assert "hunter2secret" not in line and "http://alice:***@127.0.0.1:abc/v1" in line


def test_a_key_in_the_base_urls_query_is_masked_where_the_url_is_shown():
    cfg = LLMSettings(base_url="http://127.0.0.1:1/v1?api_key=secretpw42", model="m")
    assert redact(f"Cannot connect to the LLM endpoint {cfg.base_url}", cfg) == (
        "Cannot connect to the LLM endpoint http://127.0.0.1:1/v1?api_key=***")
