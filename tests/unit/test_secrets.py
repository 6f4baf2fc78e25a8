"""The API key and a base-URL password never reach a message, however an endpoint echoes them."""

import pytest
from pydantic import SecretStr, ValidationError

from assistant.faces.errors import one_line
from assistant.answer.llm import redact
from assistant.settings import LLMSettings

KEY = "sk-proj-Abc123Def456Ghi789"


@pytest.mark.parametrize("echo", [KEY, KEY.upper(), KEY.lower(), KEY[:-1], KEY[1:], f"Bearer {KEY}", f"key={KEY[3:]}"])
def test_an_echoed_key_is_masked_upper_cased_or_cut_by_a_character(echo):
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    shown = redact(f"401 Unauthorized: invalid key {echo} for this project.", cfg)
    assert shown.startswith("401 Unauthorized: invalid key ") and shown.endswith("*** for this project.")
    assert not any(KEY.lower()[i : i + 6] in shown.lower() for i in range(len(KEY) - 5))


@pytest.mark.parametrize("key", [KEY, KEY[:-1]], ids=["26 characters", "25 characters"])
def test_a_key_with_any_one_character_left_out_or_changed_is_masked(key):
    """Half of an odd-length key was rounded up: a 25-character key echoed without its 13th
    character left two runs of 12, neither masked."""
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(key), model="m")
    for i in range(len(key)):
        for echo in (key[:i] + key[i + 1 :], key[:i] + "#" + key[i + 1 :], key[:i] + "#" + key[i:]):
            assert redact(f"invalid key {echo} here", cfg) == "invalid key *** here", echo


def test_words_that_merely_start_like_the_key_stay():
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    assert redact("the model sk-proj is not loaded.", cfg) == "the model sk-proj is not loaded."


def test_a_password_in_the_base_url_is_masked_in_the_settings_error():
    with pytest.raises(ValidationError) as err:  # refused while parsing: nothing is ever connected to
        LLMSettings(base_url="http://alice:hunter2secret@127.0.0.1:abc/v1", model="m")
    line = one_line(err.value)
    assert "hunter2secret" not in line and "(got 'http://***@127.0.0.1:abc/v1')" in line


@pytest.mark.parametrize("url, shown", [
    (f"http://127.0.0.1:99999/{KEY}/v1", "http://127.0.0.1:99999/***/v1"),  # the key pasted into the path
    (f"http://127.0.0.1:99999/v1?k={KEY}", "http://127.0.0.1:99999/v1?***"),
    (f"ftp://{KEY}/v1", "ftp://***/v1"),
    ("http://u:p4ssw0rdSecret@ss@127.0.0.1:notaport/v1", "http://***@127.0.0.1:notaport/v1"),  # a second @
    ("http://u:p4ss/w0rdSecret@127.0.0.1:notaport/v1", "http://***@127.0.0.1:notaport/v1"),  # a / in the password
    (f"http://127.0.0.1:{KEY}/v1", "http://127.0.0.1:***/v1"),  # the key as the port: the parser quotes it too
    ("http://my-server.local:99999/v1", "http://my-server.local:99999/v1"),  # nothing secret: shown as given
])
def test_a_bad_base_url_is_shown_without_its_password_query_or_a_pasted_key(url, shown):
    """Fourth hostile round: the key pasted into a base URL that fails validation was printed verbatim, and a
    password holding "/" or "@" (in whole or its tail), also in the parser's own words ("… as 'p4ss'")."""
    with pytest.raises(ValidationError) as err:
        LLMSettings(base_url=url, model="m")
    line = one_line(err.value)
    assert line.endswith(f"(got {shown!r})")
    assert not any(secret in line for secret in (KEY, KEY[8:], "p4ss", "w0rdSecret", "ss@", "hostile"))


def test_a_key_in_the_base_urls_query_is_masked_where_the_url_is_shown():
    cfg = LLMSettings(base_url="http://127.0.0.1:1/v1?api_key=secretpw42", model="m")
    assert redact(f"Cannot connect to the LLM endpoint {cfg.base_url}", cfg) == (
        "Cannot connect to the LLM endpoint http://127.0.0.1:1/v1?api_key=***")


def _fullwidth(text: str) -> str:
    """``text`` with its ASCII characters in their fullwidth forms ('sk-1' -> 'ｓｋ－１')."""
    return "".join(chr(ord(c) + 0xFEE0) if "!" <= c <= "~" else c for c in text)


def _forms(key: str) -> dict[str, str]:
    import base64

    return {"as is": key, "reversed": key[::-1], "base64": base64.b64encode(key.encode()).decode(),
            "base64 inside": base64.b64encode(f"Authorization: Bearer {key}".encode()).decode(),
            "url-safe base64": base64.urlsafe_b64encode(f"k={key}".encode()).decode().rstrip("="),
            "spaced": " ".join(key), "dotted": ".".join(key), "spaced reversed": " ".join(key[::-1]),
            "hex": key.encode().hex(), "upper reversed": key[::-1].upper(),
            "base32": base64.b32encode(key.encode()).decode(),
            "base32 inside, lower-cased": base64.b32encode(f"token {key}".encode()).decode().lower(),
            "fullwidth": _fullwidth(key), "fullwidth upper": _fullwidth(key.upper()),
            "first half": key[: -(-len(key) // 2)], "last half": key[len(key) // 2 :],
            "middle half, reversed": key[6:19][::-1], "a middle character left out": key[:12] + key[13:]}


@pytest.mark.parametrize("form", list(_forms(KEY)))
def test_a_key_reversed_encoded_or_spaced_is_masked(form):
    """An endpoint echoed the key reversed, base64-encoded or spaced out, and it was printed."""
    import base64

    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    echo = _forms(KEY)[form]
    shown = redact(f"The answer [1]. Your key: {echo} (as sent).", cfg)
    assert shown.startswith("The answer [1]. Your key: ") and shown.endswith(" (as sent).") and "***" in shown
    for seen in (shown, shown[::-1], shown.replace(" ", "").replace(".", "")):
        assert not any(KEY.lower()[i : i + 6] in seen.lower() for i in range(len(KEY) - 5))
    assert KEY.encode().hex() not in shown.lower() and base64.b64encode(KEY.encode()).decode()[4:-4] not in shown


_CYRILLIC = str.maketrans("skpojacexABCEHKMOPT", "ѕкројасех" "АВСЕНКМОРТ")


def _disguised(key: str) -> dict[str, str]:
    """The forms an endpoint echoed the key in that were shown (hostile round #35, 5)."""
    import base64

    raw = key.encode()
    return {"hex, spaced": " ".join(f"{b:02x}" for b in raw), "hex, colons": ":".join(f"{b:02X}" for b in raw),
            "\\x escapes": "".join(f"\\x{b:02x}" for b in raw), "\\u escapes": "".join(f"\\u{ord(c):04x}" for c in key),
            "HTML entities": "".join(f"&#{ord(c)};" for c in key), "HTML hex entities": "".join(f"&#x{ord(c):x};" for c in key),
            "UTF-16 hex": key.encode("utf-16-be").hex(), "UTF-16LE hex, spaced": key.encode("utf-16-le").hex(" "),
            "byte list": str(list(raw)), "hex byte list": ", ".join(f"0x{b:02x}" for b in raw),
            "base64 of it reversed": base64.b64encode(raw[::-1]).decode(),
            "base64 twice": base64.b64encode(base64.b64encode(raw)).decode(),
            "base64 twice, inside": base64.b64encode(base64.b64encode(b"Authorization: Bearer " + raw)).decode(),
            "base85": base64.b85encode(raw).decode(), "Ascii85": base64.a85encode(raw).decode(),
            "doubled": "".join(c * 2 for c in key), "Cyrillic lookalikes": key.translate(_CYRILLIC),
            "URL-encoded": "".join(f"%{b:02X}" for b in raw),
            # The second hostile round (#35, F11):
            "octal escapes": "".join(f"\\{b:03o}" for b in raw), "8-bit binary": " ".join(f"{b:08b}" for b in raw),
            "8-bit binary, run together": "".join(f"{b:08b}" for b in raw), "hex of it reversed": raw[::-1].hex(),
            "hex of it reversed, spaced": raw[::-1].hex(" ")}


def _visible_of(echo: str, shown: str, key: str) -> list[str]:
    """Runs of ``echo`` still in ``shown`` that are worth 6 characters of ``key`` or more (of an echo with
    more than the key in it, "Authorization: Bearer …" encoded, the part after what encodes that alone)."""
    import base64
    import os

    width = -(-6 * len(echo) // len(key))
    lead = base64.b64encode(base64.b64encode(b"Authorization: Bearer ")).decode()
    echo = echo[len(os.path.commonprefix([echo, lead])):]
    return [echo[i : i + width] for i in range(len(echo) - width + 1) if echo[i : i + width] in shown]


@pytest.mark.parametrize("form", list(_disguised(KEY)))
def test_a_key_echoed_escaped_encoded_doubled_or_in_lookalikes_is_masked(form):
    """Hostile round (#35, 5): an endpoint echoing the key as hex with spaces or colons, \\x or \\u escapes,
    HTML entities, UTF-16 hex, a list of byte values, base64 of it reversed or base64 twice, base85, each
    character doubled or in Cyrillic lookalikes had it shown. The key is matched after undoing each."""
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    echo = _disguised(KEY)[form]
    shown = redact(f"The answer [1]. Your key: {echo} (as sent).", cfg)
    assert shown.startswith("The answer [1]. Your key: ") and shown.endswith(" (as sent).") and "***" in shown
    assert not _visible_of(echo, shown, KEY), shown


@pytest.mark.parametrize("form", list(_disguised(KEY)))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_a_streamed_answer_never_shows_a_disguised_key(form, size):
    from assistant.answer.llm import StreamRedactor

    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    echo = _disguised(KEY)[form]
    text = f"SyPE is a positional encoding [1]. Key {echo} echoed. It extrapolates well [2]."
    masked = StreamRedactor(cfg)
    shown = [masked.feed(text[i : i + size]) for i in range(0, len(text), size)] + [masked.flush()]
    assert "".join(shown) == redact(text, cfg) and not _visible_of(echo, "".join(shown), KEY)
    for n in range(len(shown)):  # nothing shown is taken back
        assert redact(text, cfg).startswith("".join(shown[: n + 1]))
    assert len("".join(shown[:-1])) >= len(redact(text, cfg)) - len("well [2].") - size


def test_plain_text_passes_unchanged():
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    text = "SyPE [1] improves length extrapolation by 3.2 points on PG-19; see also a b c d e."
    assert redact(text, cfg) == text


def test_pieces_of_the_key_under_the_minimum_and_compatibility_characters_stay():
    """Only a piece of half the key (13 of its 26 characters here) or more is masked, and matching in
    NFKC-normalized text leaves the text shown as sent ('ﬁ', 'x²', fullwidth words)."""
    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    text = (f"Keys look like {KEY[:12]}… or …{KEY[-12:]}; the ﬁrst term is x² (ｆｕｌｌｗｉｄｔｈ), "
            f"{_fullwidth(KEY[:12])} too.")
    assert redact(text, cfg) == text
    assert redact(f"Keys look like {KEY[:13]}…", cfg) == "Keys look like ***"  # the word is masked whole


@pytest.mark.parametrize("form", list(_forms(KEY)))
@pytest.mark.parametrize("size", [1, 3, 7])
def test_a_streamed_answer_never_shows_the_key_across_piece_boundaries(form, size):
    from assistant.answer.llm import StreamRedactor

    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    text = f"SyPE is a positional encoding [1]. Key {_forms(KEY)[form]} echoed. It extrapolates well [2]."
    masked = StreamRedactor(cfg)
    shown = [masked.feed(text[i : i + size]) for i in range(0, len(text), size)] + [masked.flush()]
    assert "".join(shown) == redact(text, cfg)
    assert "".join(shown).startswith("SyPE is a positional encoding [1]. Key ") and "***" in "".join(shown)
    # nothing of it ever on screen, even for a moment: each prefix shown is a prefix of the masked text
    for n in range(len(shown)):
        assert redact(text, cfg).startswith("".join(shown[: n + 1]))
    # and it does not hold the answer back: all but the last word shown before the end
    assert len("".join(shown[:-1])) >= len(redact(text, cfg)) - len("well [2].") - size


@pytest.mark.parametrize("size", range(1, 8))
@pytest.mark.parametrize("echo", [KEY, KEY.upper(), _fullwidth(KEY), f"key={KEY}"],
                         ids=["as is", "upper", "fullwidth", "glued"])
def test_a_key_streamed_in_small_pieces_never_shows_its_tail(echo, size):
    """F13: the first two thirds of the key were masked as soon as they arrived, and the rest, coming in
    later pieces, no longer looked like the key: its last 7 to 9 characters were shown."""
    from assistant.answer.llm import StreamRedactor

    cfg = LLMSettings(base_url="http://127.0.0.1:9/v1", api_key=SecretStr(KEY), model="m")
    text = f"Sure. Your key is {echo} as sent, and SyPE extrapolates [1]."
    masked = StreamRedactor(cfg)
    shown = [masked.feed(text[i : i + size]) for i in range(0, len(text), size)] + [masked.flush()]
    assert "".join(shown) == "Sure. Your key is *** as sent, and SyPE extrapolates [1]." == redact(text, cfg)
    for n in range(len(shown)):
        assert redact(text, cfg).startswith("".join(shown[: n + 1]))
    assert len("".join(shown[:-1])) >= len(redact(text, cfg)) - len("[1].") - size  # live: only a word held


def test_without_a_key_pieces_pass_as_they_come():
    from assistant.answer.llm import StreamRedactor

    masked = StreamRedactor(LLMSettings(base_url="http://127.0.0.1:9/v1", model="m"))
    assert [masked.feed(p) for p in ("Sy", "PE [1", "].")] == ["Sy", "PE [1", "]."] and masked.flush() == ""


def test_a_number_setting_shows_the_users_value_and_a_secret_setting_does_not():
    """MAX_TOKENS=-1 was shown as '***': the field's name held "token"."""
    with pytest.raises(ValidationError) as err:
        LLMSettings(max_tokens=-1, reply_chars_per_token=0)
    line = one_line(err.value)
    assert "max_tokens" in line and "(got -1)" in line and "reply_chars_per_token" in line and "(got 0)" in line
    with pytest.raises(ValidationError) as err:
        LLMSettings(api_key=["hunter2secret"])
    assert "hunter2secret" not in one_line(err.value) and "(got '***')" in one_line(err.value)


def test_a_key_with_a_line_break_inside_is_refused_before_any_request(monkeypatch):
    """A newline inside OPENAI_API_KEY failed as "cannot connect … is the server running?"; a trailing one
    (a key file read whole) is no part of the key. The variable named is the one set (a hostile round: a bad
    PAPER_ASSISTANT_LLM__API_KEY was called OPENAI_API_KEY)."""
    from assistant.answer.wire import sent_key

    monkeypatch.delenv("PAPER_ASSISTANT_LLM__API_KEY", raising=False)
    assert sent_key(LLMSettings(api_key=SecretStr(KEY + "\n"))) == KEY
    assert sent_key(LLMSettings()) == "not-needed"
    with pytest.raises(ValueError, match=r"the API key \(OPENAI_API_KEY, or the llm.api_key setting\) holds a line "
                                         "break") as err:
        sent_key(LLMSettings(api_key=SecretStr(KEY[:9] + "\n" + KEY[9:])))
    assert KEY[:9] not in str(err.value)
    monkeypatch.setenv("PAPER_ASSISTANT_LLM__API_KEY", KEY[:9] + "\n" + KEY[9:])
    with pytest.raises(ValueError, match=r"the API key \(PAPER_ASSISTANT_LLM__API_KEY, or"):
        sent_key(LLMSettings(api_key=SecretStr(KEY[:9] + "\n" + KEY[9:])))


def test_the_key_pasted_into_another_setting_is_masked_in_the_settings_error(monkeypatch):
    """Fifth hostile round: OPENAI_BASE_URL or TIMEOUT set to the key itself showed it verbatim ("got 'sk-…'"),
    and a key of letters only, inside a URL, slipped past the key-shaped mask."""
    letters = "abcdefghijklmnopqrstuvwxyzab"
    for key, bad in ((KEY, {"timeout": KEY}), (KEY, {"base_url": KEY}), (KEY, {"base_url": f"127.0.0.1:8080/{KEY}/v1"}),
                     (letters, {"base_url": f"http://127.0.0.1:99999/{letters}/v1"}), (KEY, {"system_role": KEY})):
        monkeypatch.setenv("OPENAI_API_KEY", key)
        with pytest.raises(ValidationError) as err:
            LLMSettings(model="m", **bad)
        line = one_line(err.value)
        assert line.startswith("invalid llmsettings ") and "***" in line
        assert not any(key[i : i + 8] in line for i in range(len(key) - 7)), line


def test_a_prefixed_key_pasted_elsewhere_and_a_schemeless_password_are_masked(monkeypatch):
    """Sixth hostile round: a key set as PAPER_ASSISTANT_LLM__API_KEY (not key-shaped: vLLM's "token-abc123") and
    pasted into TIMEOUT, and the password of a base URL without "://", reached the settings error whole."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("PAPER_ASSISTANT_LLM__API_KEY", "token-abc123")
    for bad, shown in (({"timeout": "token-abc123"}, "(got '***')"), ({"base_url": "token-abc123"}, "(got '***')"),
                       ({"base_url": "user:p4ssw0rd@127.0.0.1:8000/v1"}, "(got '***@127.0.0.1:8000/v1')"),
                       ({"base_url": "http:/user:p4ssw0rd@127.0.0.1:8000/v1"}, "(got '***@127.0.0.1:8000/v1')"),
                       ({"base_url": "127.0.0.1:8000/v1?k=value"}, "(got '127.0.0.1:8000/v1?***')"),
                       ({"timeout": "abc"}, "(got '***')"), ({"timeout": "-5"}, "(got '-5')")):  # text hidden, numbers shown
        with pytest.raises(ValidationError) as err:
            LLMSettings(model="m", **bad)
        line = one_line(err.value)
        assert line.endswith(shown) and "abc123" not in line and "p4ss" not in line and "value'" not in line, line


def test_every_error_line_masks_the_configured_secrets_and_nothing_else(monkeypatch):
    """Eighth hostile round: the key pasted into a host setting came back in runtime errors ("refusing to bind
    token-abc123 …", "cannot reach Chroma server at token-abc123:8000"), which only settings errors masked."""
    from assistant.faces.errors import exit_message

    monkeypatch.setenv("OPENAI_API_KEY", "token-abc123")
    monkeypatch.setenv("PAPER_ASSISTANT_UI__AUTH", "admin:hunter2pw")
    for text in ("refusing to bind token-abc123 without authentication", "cannot serve on hunter2pw:7860"):
        line, code = exit_message(ValueError(text))
        assert code == 2 and "***" in line and "abc123" not in line and "hunter2" not in line, line
    paper = "no indexed paper has id '000_12a0d7b1c5c902c5#3'; did you mean 000_12a0d7b1c5c902c5#13?"
    assert exit_message(ValueError(paper)) == (paper, 2)  # an id is no secret: left whole
