"""The CLI starts without the answer path: `paper-assistant --help`, a usage error or a one-line error
print before LangChain, numpy, torch or Chroma load (they took 1–3 s on 2 busy cores)."""

import importlib
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAVY = {"pydantic", "pydantic_core", "pydantic_settings", "numpy", "torch", "langchain_core", "langchain",
         "langchain_text_splitters", "chromadb", "mcp", "rich", "sentence_transformers", "gradio"}
LIGHT = {"assistant", "assistant.cli", "assistant.cli.common", "assistant.cli.indexing", "assistant.cli.query",
         "assistant.cli.chat", "assistant.cli.tools", "assistant.cli.serving", "assistant.faces", "assistant.faces.console",
         "assistant.faces.errors", "assistant.text", "assistant.text.configured", "assistant.text.sanitize"}


def loaded_after(code: str) -> set[str]:
    """Modules loaded by a fresh interpreter that runs ``code``."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)})
    assert out.returncode == 0, out.stderr[-2000:]
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_importing_the_cli_and_its_console_loads_typer_but_not_the_answer_path():
    mods = loaded_after("import assistant.cli, assistant.faces.console")
    assert "typer" in mods
    assert {m.split(".")[0] for m in mods} & HEAVY == set()
    assert {m for m in mods if m.startswith("assistant")} == LIGHT


def test_help_prints_without_the_answer_path():
    mods = loaded_after("import sys\nsys.argv = ['paper-assistant', 'ingest', '--help']\nfrom assistant.cli import main\n"
                        "try:\n    main()\nexcept SystemExit:\n    pass")
    # The settings module too: the .env files are checked before any command (pydantic-settings, no answer path).
    assert {m for m in mods if m.startswith("assistant")} == LIGHT | {"assistant.settings"}
    # typer checks option values with pydantic, and rich draws the help
    assert {m.split(".")[0] for m in mods} & (HEAVY - {"rich", "pydantic", "pydantic_core", "pydantic_settings"}) == set()


@pytest.mark.parametrize("module, name", __import__("assistant.faces.errors", fromlist=["x"])._USER_ERROR_CLASSES)
def test_every_named_user_error_exists_and_gives_one_line_and_exit_code_2(module, name):
    from assistant.faces.errors import exit_message, user_errors

    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, BaseException) and cls in user_errors()
    if name != "ValidationError":  # pydantic's cannot be made by hand; tests/test_cli.py shows a real one
        assert exit_message(cls("the index is somewhere else\nsecond line")) == ("the index is somewhere else", 2)


def test_the_mcp_command_default_port_is_the_servers():
    from assistant.cli.serving import MCP_HTTP_PORT
    from assistant.mcp.server import DEFAULT_HTTP_PORT

    assert MCP_HTTP_PORT == DEFAULT_HTTP_PORT


def test_global_options_reach_each_commands_settings_and_do_not_outlive_the_invocation(monkeypatch):
    from typer.testing import CliRunner

    import assistant.settings
    from assistant.cli import app

    loaded = []

    def load_settings(**overrides):  # what the command would load its settings with; then stop it
        loaded.append(overrides)
        raise ValueError("stop here")

    monkeypatch.setattr(assistant.settings, "load_settings", load_settings)
    runner = CliRunner()
    out = runner.invoke(app, ["--model", "m1", "--chroma-port", "8001", "--embedding-model", "x/y",
                              "ask", "What?", "--index", "/tmp/i1", "-k", "3"])
    assert isinstance(out.exception, ValueError), out.output
    assert loaded[-1] == {"llm": {"model": "m1", "base_url": None, "timeout": None, "first_token_timeout": None},
                          "store": {"host": None, "port": 8001}, "embedding": {"model": "x/y"},
                          "index": Path("/tmp/i1"), "retrieval": {"k": 3}}
    runner.invoke(app, ["doctor"])
    assert loaded[-1] == {}


COMMANDS = ["ingest", "remove", "ask", "chat", "list", "related", "map", "serve", "mcp", "doctor", "eval", "train"]


def test_no_arguments_print_the_help_and_no_empty_error_line():
    """`paper-assistant` alone prints what `--help` prints (every command, in order), nothing on stderr,
    and exits 2 (a usage error) without an error line under the help."""
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), "COLUMNS": "100"}
    out = subprocess.run([sys.executable, "-m", "assistant.cli"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, env=env)
    help_ = subprocess.run([sys.executable, "-m", "assistant.cli", "--help"], cwd=ROOT, capture_output=True,
                           text=True, timeout=120, env=env)
    assert (out.returncode, out.stderr, help_.returncode) == (2, "", 0)
    assert out.stdout.rstrip() == help_.stdout.rstrip() and "Usage:" in out.stdout
    listed = re.findall(r"^│ (\w+) {2,}", out.stdout.split("Commands")[1], re.M)
    assert listed == COMMANDS


def test_the_answer_path_loads_langchain_openai_only_when_a_chat_model_is_made():
    mods = loaded_after("import assistant.answer.pipeline, assistant.answer.generate")
    # Without a chat model no LangChain piece is needed: prompts and parsers load on first use.
    assert {"langchain_core", "langchain_openai", "openai", "langchain_text_splitters"} & {m.split(".")[0] for m in mods} == set()
    mods = loaded_after("from assistant.answer.llm import make_chat_model\nfrom assistant.settings import LLMSettings\n"
                        "make_chat_model(LLMSettings(model='m', base_url='http://127.0.0.1:9/v1', api_key='k'))")
    assert "langchain_openai" in mods


def test_a_chroma_failure_names_doctor_and_the_rebuild_instead_of_unexpected():
    """Damaged HNSW files raised a raw "unexpected InternalError" in every command, with no remedy."""
    from chromadb.errors import InternalError

    from assistant.faces.errors import exit_message

    line, code = exit_message(InternalError("Error in compaction: Failed to apply logs\nmore"))
    assert code == 2 and line == ("the Chroma index failed (InternalError: Error in compaction: Failed to apply logs); "
                                  "if the disk is full, free some space and try again; otherwise its files are "
                                  "damaged: delete the index folder and run `paper-assistant ingest` again (the "
                                  "paper files are not touched)")


def test_doctor_names_a_full_disk_or_damaged_files_instead_of_chromas_words(monkeypatch, tmp_path):
    """After a full disk, doctor printed "index: Error executing plan: Error sending backfill request to
    compactor…"; with damaged HNSW files it named no fix."""
    import shutil

    from chromadb.errors import InternalError

    from assistant.faces.doctor import _index_failure
    from assistant.settings import load_settings

    settings = load_settings(index=tmp_path)
    err = InternalError("Error executing plan: Error loading hnsw index")
    assert _index_failure(err, settings) == (f"Chroma cannot read the index (Error executing plan: Error loading hnsw "
                                             f"index): its files are damaged; delete {tmp_path} and run "
                                             "`paper-assistant ingest` again (the paper files are not touched)")
    usage = shutil.disk_usage(tmp_path)
    monkeypatch.setattr(shutil, "disk_usage", lambda _: usage._replace(free=2**20))
    assert _index_failure(err, settings).startswith(f"the disk holding {tmp_path} is full (1 MB free): free some space")


def test_a_read_only_index_is_one_line_with_its_remedy():
    """Third hostile round (#35): `ask` on a read-only index showed Chroma's "(code: 8) attempt to write a readonly
    database" inside "the Chroma index failed … delete the index folder", a remedy that loses the index."""
    from assistant.faces.errors import exit_message

    chroma_error = type("InternalError", (Exception,), {"__module__": "chromadb.errors"})
    line, code = exit_message(chroma_error("error returned from database: (code: 8) attempt to write a readonly database"))
    assert code == 2 and line == ("the index cannot be written by this user (its database is read-only): give this user "
                                  "write access to the index folder (e.g. `chmod -R u+rwX` on it), or copy it somewhere "
                                  "writable and pass that with --index; nothing was changed")


def test_a_read_only_index_found_on_open_is_one_line_with_its_remedy(tmp_path, monkeypatch):
    """Fourth hostile round (#35): refused while Chroma opened it, the same database said "cannot open the Chroma
    index at …: error returned from database: (code: 8) …", Chroma's words and no remedy."""
    import chromadb
    import pytest

    from vectorstore.store import StoreError
    from vectorstore.store.client import make_client

    def refused(*args, **kwargs):
        raise RuntimeError("error returned from database: (code: 8) attempt to write a readonly database")

    monkeypatch.setattr(chromadb, "PersistentClient", refused)
    with pytest.raises(StoreError) as err:
        make_client(tmp_path / "idx")
    assert str(err.value).startswith(f"the index at {tmp_path / 'idx'} cannot be read or written by this user")
    assert f"chmod -R u+rwX {tmp_path / 'idx'}" in str(err.value) and "code: 8" not in str(err.value)


def test_a_full_disk_found_on_open_is_one_line_with_its_remedy(tmp_path, monkeypatch):
    """Eighth hostile round: `remove` on a full disk said "cannot open the Chroma index at …: error returned from
    database: (code: 13) database or disk is full", Chroma's words and no remedy (opening writes)."""
    import chromadb
    import pytest

    from vectorstore.store import StoreError
    from vectorstore.store.client import make_client

    def full(*args, **kwargs):
        raise RuntimeError("error returned from database: (code: 13) database or disk is full")

    monkeypatch.setattr(chromadb, "PersistentClient", full)
    with pytest.raises(StoreError) as err:
        make_client(tmp_path / "idx")
    assert str(err.value) == (f"the disk holding the index ({tmp_path / 'idx'}) is full: free some space and run the "
                              "command again; nothing in the index was changed")


def test_a_permission_error_anywhere_is_one_line_with_its_remedy():
    """Fifth hostile round (#35): an index folder at mode 000 gave "unexpected PermissionError: … idx/chroma"."""
    from assistant.faces.errors import exit_message

    line, code = exit_message(PermissionError(13, "Permission denied", "/data/idx/chroma"))
    assert code == 2 and line == ("/data/idx/chroma: permission denied for this user: give this user read and write "
                                  "access to it (e.g. `chmod -R u+rwX` on the index folder), or run as its owner, or "
                                  "choose another --index")


def test_doctor_reports_a_damaged_page_met_while_reading_every_record_as_a_fail_line(monkeypatch, tmp_path):
    """A tenth hostile round: a page of chroma.sqlite3 garbled under the paper records made doctor stop with the
    readers' `error:` line (exit 2), "delete the index folder" naming no folder, instead of its FAIL report."""
    from chromadb.errors import InternalError

    import assistant.faces.doctor as doctor
    from assistant.settings import load_settings

    def malformed(settings):
        raise InternalError("error returned from database: (code: 11) database disk image is malformed")

    monkeypatch.setattr(doctor, "_check_index", lambda settings: (True, f"index at {tmp_path}: 38 papers in 58 chunks"))
    monkeypatch.setattr(doctor, "_health_problems", malformed)
    ok, line = next(doctor._doctor_lines(load_settings(index=tmp_path)))
    assert not ok and line == (f"index at {tmp_path}: 38 papers in 58 chunks; Chroma cannot read the index (error "
                               "returned from database: (code: 11) database disk image is malformed): its files are "
                               f"damaged; delete {tmp_path} and run `paper-assistant ingest` again (the paper files "
                               "are not touched)")
