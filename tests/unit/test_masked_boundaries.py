"""The configured secrets are masked where errors leave the program: the CLI's stderr, MCP's error replies and the
page's error replies (a ninth hostile round found each of them echoing a key the user had typed elsewhere)."""

import asyncio
import os
import json
import subprocess
import sys

import pytest
import typer

from tests.conftest import ROOT

KEY = "sk-hostile9-Zq7Wm2Xc4Vb8Nk3L"


@pytest.fixture
def key_set(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no .env of the working directory's
    monkeypatch.delenv("PAPER_ASSISTANT_UI__AUTH", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def test_cli_error_lines_and_skipped_lines_mask_the_key_and_answers_pass_whole(key_set, capsys, monkeypatch):
    from assistant.cli.common import fail
    from assistant.faces import run

    app = typer.Typer()

    @app.command()
    def boom(name: str):
        print(f"answer: {name}")  # stdout: answers and lists, not masked (a password may be a word in them)
        print(f"skipped: {name}.jsonl (not a paper file)", file=sys.stderr)
        fail(f"cannot write {name}.bib: permission denied")

    monkeypatch.setattr(sys, "argv", ["paper-assistant", KEY])
    with pytest.raises(SystemExit) as ended:
        run(app)
    out, err = capsys.readouterr()
    assert ended.value.code == 2
    assert out == f"answer: {KEY}\n"
    # A key's word goes whole (:func:`assistant.text.redact`'s rule for a key cut or altered by a character).
    assert err == "skipped: *** (not a paper file)\nerror: cannot write *** permission denied\n"


def test_a_password_given_as_auth_on_the_command_line_is_masked_in_its_errors(tmp_path):
    password = "Hunter2Hunter2Hunter2"
    got = subprocess.run([sys.executable, "-m", "assistant", "serve", "--auth", f"user:{password}", "--host",
                          f"::{password}", "--no-ingest", "--index", str(tmp_path / "index")], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    assert got.returncode == 2 and got.stderr.startswith("error: cannot serve on the IPv6 address *** use"), got.stderr
    assert password not in got.stderr + got.stdout


def test_error_replies_are_masked_and_answers_pass_as_they_came(key_set):
    from assistant.faces.masked_errors import masked_body

    sse = f'event: error\r\ndata: {{"error": "Value: {KEY} is not in the list of choices", "title": "Error"}}\r\n\r\n'
    assert json.loads(masked_body(sse.encode(), "text/event-stream").decode().split("data: ")[1]) == {
        "error": "Value: *** is not in the list of choices", "title": "Error"}
    plain = f'event: error\ndata: "no paper {KEY}"\n\n'.encode()
    assert masked_body(plain, "text/event-stream; charset=utf-8") == b'event: error\ndata: "no paper ***"\n\n'
    answer = f'event: message\ndata: {{"jsonrpc": "2.0", "id": 1, "result": {{"text": "{KEY}"}}}}\n\n'.encode()
    assert masked_body(answer, "text/event-stream") == answer  # no error: as it came
    tool_error = {"jsonrpc": "2.0", "id": KEY, "result": {"content": [{"type": "text", "text": f"no venue {KEY}"}],
                                                          "isError": True}}
    masked = json.loads(masked_body(json.dumps(tool_error).encode(), "application/json"))
    assert masked["id"] == KEY and masked["result"]["content"][0]["text"] == "no venue ***"  # ids stay the client's
    refused = json.dumps({"detail": f"bad {KEY}"}).encode()
    assert json.loads(masked_body(refused, "application/json", 422)) == {"detail": "bad ***"}
    assert masked_body(refused, "application/json", 200) == refused


def test_without_a_configured_secret_bodies_pass_untouched(monkeypatch, tmp_path):
    from assistant.faces.masked_errors import masked_reply

    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "PAPER_ASSISTANT_LLM__API_KEY", "PAPER_ASSISTANT_UI__AUTH"):
        monkeypatch.delenv(name, raising=False)
    message = {"error": f"no venue {KEY}"}
    assert masked_reply(message) is message


def test_the_asgi_guard_masks_a_json_error_and_sets_its_length_again(key_set):
    from assistant.faces import MaskedErrorBodies

    body = json.dumps({"error": {"code": -32602, "message": f"Unknown tool: {KEY}"}}).encode()

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body[:10], "more_body": True})
        await send({"type": "http.response.body", "body": body[10:]})

    sent = []

    async def send(message):
        sent.append(message)

    asyncio.run(MaskedErrorBodies(app)({"type": "http"}, None, send))
    start, whole = sent[0], b"".join(m.get("body", b"") for m in sent[1:])
    assert json.loads(whole) == {"error": {"code": -32602, "message": "Unknown tool: ***"}}
    assert dict(start["headers"])[b"content-length"] == str(len(whole)).encode()


def test_the_mcp_write_stream_masks_error_messages_only(key_set):
    from mcp.shared.message import SessionMessage
    from mcp.types import ErrorData, JSONRPCError, JSONRPCResponse

    from assistant.mcp.masked import MaskedWrites

    class Inner:
        def __init__(self):
            self.sent = []

        async def send(self, item):
            self.sent.append(item.message.model_dump(mode="json", by_alias=True, exclude_none=True))

    inner = Inner()
    stream = MaskedWrites(inner)
    error = JSONRPCError(jsonrpc="2.0", id="a", error=ErrorData(code=-32601, message=f"Method not found: {KEY}"))
    answer = JSONRPCResponse(jsonrpc="2.0", id="b", result={"structuredContent": {"abstract": KEY}})
    asyncio.run(stream.send(SessionMessage(error)))
    asyncio.run(stream.send(SessionMessage(answer)))
    assert inner.sent[0]["error"]["message"] == "Method not found: ***"
    assert inner.sent[1]["result"] == {"structuredContent": {"abstract": KEY}}


def test_a_filter_given_a_list_is_one_clear_line_not_chroma_s_text(key_set):
    """Ninth hostile round (L9-8): a script's ``venue=[]`` reached Chroma, and the chat showed its "Expected where
    operand value to be a non-empty list …"."""
    from assistant.page.state import make_filters, ui_error

    for bad in ([], ["ICML"], {"a": 1}):
        with pytest.raises(ValueError) as err:
            make_filters(venue=bad)
        assert ui_error(err.value) == "a filter takes one value, as the page's dropdowns send it"
    assert make_filters(venue="ICML", year="2026").year == 2026


def test_a_host_that_names_no_address_is_not_told_to_choose_another_port(monkeypatch):
    """Ninth hostile round: ``--host`` naming no address was told "choose another port with --port"."""
    import socket

    from assistant.page.serving import check_port_free

    def unresolved(*args, **kwargs):  # the resolver's answer for a name it does not know (no DNS is asked here)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", unresolved)
    with pytest.raises(ValueError) as err:
        check_port_free("paper-host", 7860)
    assert str(err.value).startswith("cannot serve on paper-host: no address of that name (Name or service not known)")
    assert "--host 127.0.0.1" in str(err.value) and "port" not in str(err.value)


def test_a_percent_escaped_password_of_the_base_url_is_masked_as_sent(monkeypatch, tmp_path):
    """Tenth hostile round: a base-URL password written `p%40ss1234w` (as a URL must write `@`) is sent, and echoed,
    as `p@ss1234w`; only the escaped form was masked, in error lines, LLM answers, doctor lines and MCP replies."""
    from pydantic import SecretStr

    from assistant.settings import LLMSettings
    from assistant.text import mask_secrets, redact

    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_API_KEY", "PAPER_ASSISTANT_LLM__API_KEY", "PAPER_ASSISTANT_UI__AUTH"):
        monkeypatch.delenv(name, raising=False)
    url = "http://u:p%40ss1234w@127.0.0.1:9/v1?api_key=k%2Bey%2F5678"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    assert mask_secrets("no indexed paper has venue 'p@ss1234w' nor 'k+ey/5678'") == (
        "no indexed paper has venue '***' nor '***'")
    cfg = LLMSettings(base_url=url, api_key=SecretStr("sk-other-0000"), model="m")
    assert redact("dec=u:p@ss1234w", cfg) == "dec=u:***"
    assert "QHNzMTIzNH" not in redact("Basic dTpwQHNzMTIzNHc=", cfg)  # base64 of "u:p@ss1234w", as sent


def test_a_settings_file_that_is_no_utf8_is_named(monkeypatch, tmp_path):
    """Tenth hostile round: a .env holding invalid UTF-8 ended with "'utf-8' codec can't decode byte 0xff in position
    28", naming no file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_bytes(b"OPENAI_MODEL=m\n\xff\xfe\x00garbage=\x80\n")
    got = subprocess.run([sys.executable, "-m", "assistant", "ask", "What is SyPE?", "--index", str(tmp_path / "i")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert (got.returncode, got.stderr) == (2, f"error: the settings file {tmp_path / '.env'} is not UTF-8 text (byte 15): "
                                                "re-save it as UTF-8\n")


def test_a_key_split_by_an_escaped_line_break_in_a_file_name_is_masked(key_set, monkeypatch):
    """Tenth hostile round: a paper file named `token-abc<line break>123.jsonl` came back as `token-abc\\n123` (file
    names are shown with control characters escaped), the key whole but for two characters."""
    from assistant.text import mask_secrets

    monkeypatch.setenv("OPENAI_API_KEY", "token-abc123")  # 12 characters: only its whole forms are masked
    for escape in ("\\n", "\\t", "\\r"):
        shown = f"skipped: /data/token-abc{escape}123.jsonl: invalid JSON"
        assert mask_secrets(shown) == "skipped: /data/***.jsonl: invalid JSON", shown
    assert mask_secrets("C:\\new\\table\\report.txt") == "C:\\new\\table\\report.txt"  # no key: as it was


LONG = "sk-proj-" + "u8jzPde0IgxLd6GncfBAepfJBd0Kh8oXyZ12abcdEFGHijklMNOPqrstUVWXyz0123456789" * 2 + "rESQedUStPKR0CsTy4Qwb8D"


def test_a_long_key_cut_by_a_message_is_still_masked(monkeypatch, tmp_path):
    """Eleventh hostile round: a 164-character key typed as a number argument came back as its first 38 characters
    (MCP's argument error cut the value to 40), and pydantic's log line showed its first and last 24 around "...":
    pieces under half the key, which only a half was masked by. Any 20 characters of a long key are masked now, and
    a value is masked before it is cut."""
    from pydantic import TypeAdapter, ValidationError

    from assistant.faces.web_log import bounded
    from assistant.mcp.server import arguments_error
    from assistant.text import mask_secrets

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", LONG)
    def leaks(text: str) -> bool:
        return any(LONG[i:i + 8] in text for i in range(len(LONG) - 7))

    for cut in (LONG[:38], LONG[:24], LONG[-24:], LONG[40:61]):
        shown = mask_secrets(f"input_value='{cut}...' and more")
        assert shown.startswith("input_value='***") and shown.endswith(" and more") and not leaks(shown), shown
    with pytest.raises(ValidationError) as err:
        TypeAdapter(int).validate_python(LONG)
    line = arguments_error("search", err.value)
    assert line == "invalid arguments for search: arguments: input should be a valid integer, unable to parse " \
                   "string as an integer (got '***')", line
    with pytest.raises(ValidationError) as err:
        TypeAdapter(int).validate_python(LONG + " and then some more words " * 3)
    assert arguments_error("search", err.value).endswith("(got '*** and then some more words  and then…)")
    text = "x" * 1990 + LONG + "y" * 5000  # the key across the cut at 2,000 characters
    kept = bounded(text, 4000, mask_secrets)
    assert not leaks(kept) and f"… {len(text) - 4000} characters cut …" in kept


def test_a_chroma_error_cut_to_200_characters_shows_no_piece_of_a_key(monkeypatch, tmp_path):
    """The same cut as round eleven's, in the one-line error for Chroma's own failures (its text may quote a filter
    value): masked first, then cut."""
    from assistant.faces import exit_message
    from assistant.text import shown_part

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OPENAI_API_KEY", LONG)
    chroma_error = type("InternalError", (Exception,), {"__module__": "chromadb.errors"})
    line, code = exit_message(chroma_error("Expected where value for venue, got " + "x" * 150 + " " + LONG))
    assert code == 2 and "***" in line and not any(LONG[i:i + 6] in line for i in range(len(LONG) - 5)), line
    assert shown_part("abc " + LONG, 30) == "abc ***"


def test_a_settings_file_line_that_cannot_be_read_is_one_line_not_a_key_silently_dropped(tmp_path):
    """Twelfth hostile round: an unclosed quote in .env printed python-dotenv's warning 154 times a command and
    dropped the key with it, so `doctor` said "LLM: none configured" and exited 0."""
    (tmp_path / ".env").write_text('OPENAI_API_KEY="sk-abc123abc123abc123\nOPENAI_MODEL=m\n')
    got = subprocess.run([sys.executable, "-m", "assistant", "doctor", "--index", str(tmp_path / "i")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert (got.returncode, got.stdout, got.stderr) == (2, "", f"error: the settings file {tmp_path / '.env'} cannot "
                                                               "be read at line 1 (an unclosed quote, or no NAME=value): "
                                                               "fix that line\n")


@pytest.mark.parametrize("make", ["fifo", "device"])
def test_a_settings_file_that_is_no_plain_file_is_one_line_not_a_hang(tmp_path, make):
    """Thirteenth hostile round: a .env that was a FIFO made every command wait forever; one linked to /dev/zero was
    read without end (a MemoryError traceback)."""
    import os

    if make == "fifo":
        os.mkfifo(tmp_path / ".env")
    else:
        (tmp_path / ".env").symlink_to("/dev/zero")
    got = subprocess.run([sys.executable, "-m", "assistant", "doctor", "--index", str(tmp_path / "i")], cwd=tmp_path,
                         capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)})
    assert (got.returncode, got.stderr) == (2, f"error: the settings file {tmp_path / '.env'} is no plain file (a FIFO, "
                                                "device or folder): make it a plain file\n")


@pytest.mark.parametrize("command", [["chat"], ["mcp", "--no-ingest"]])
def test_a_closed_stdin_is_no_unexpected_error(tmp_path, command):
    """Thirteenth hostile round: `chat <&-` said "unexpected AttributeError: 'NoneType' object has no attribute
    'isatty'", `mcp <&-` "… no attribute 'buffer'". chat has nothing to read (exit 0); stdio MCP needs its input."""
    got = subprocess.run([sys.executable, "-m", "assistant", *command, "--index", str(tmp_path / "i")], cwd=ROOT,
                         stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
                         env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PYTHONPATH": str(ROOT)},
                         preexec_fn=lambda: os.close(0))
    if command == ["chat"]:
        assert (got.returncode, got.stdout, got.stderr) == (0, "", "")
    else:
        assert (got.returncode, got.stderr) == (2, "error: MCP over stdio reads its standard input, which is closed: "
                                                   "start it from an MCP client, or serve it with --http\n")
