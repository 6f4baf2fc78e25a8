"""The CLI's surface: commands in a user's order, --version, --mode choices, help wording. No model:
each command imports what it runs after its options parse."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT


def run(*args):
    return subprocess.run([sys.executable, "-m", "assistant", *args], capture_output=True, text=True, cwd=ROOT,
                          timeout=60, env=dict(os.environ, COLUMNS="200"))


def test_help_lists_commands_in_a_users_order():
    out = run("--help").stdout
    names = re.findall(r"^│ (\w+)\s{2,}", out.split("Commands")[1], re.M)
    assert names == ["ingest", "remove", "ask", "chat", "list", "related", "map", "serve", "mcp", "doctor", "eval", "train"]


def test_version_prints_the_package_version():
    from importlib.metadata import version

    out = run("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"paper-assistant {version('paper-assistant')}"


def test_ask_mode_is_a_choice_with_a_one_line_error():
    out = run("ask", "anything", "--mode", "fast")
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "'fast' is not one of 'hybrid', 'dense', 'bm25'" in lines[0]
    assert "Value error" not in lines[0]


def test_list_export_help_names_the_listed_papers():
    assert "also write the listed papers" in run("list", "--help").stdout


def test_an_empty_index_option_is_an_error_not_the_working_directory():
    out = run("ask", "anything", "--index", "")
    assert out.returncode == 2
    line = out.stderr.strip().splitlines()[-1]
    assert "'--index'" in line and "the index directory is empty" in line


def test_chroma_port_outside_1_to_65535_is_refused():
    for port in ("99999", "0"):
        out = run("--chroma-port", port, "ask", "anything")
        assert out.returncode == 2 and "'--chroma-port'" in out.stderr, port
    from pydantic import ValidationError

    from assistant.settings import Settings

    with pytest.raises(ValidationError):
        Settings(store={"port": 70000})


def test_help_shows_metavars_in_a_users_words_not_type_names():
    for command in ("--help", "ingest --help", "ask --help", "remove --help", "map --help", "eval --help"):
        out = run(*command.split()).stdout
        assert not re.search(r"<(bool|str|int|float|path|Path|list\[\w+\])>", out), (command, out)
    ingest = run("ingest", "--help").stdout
    assert "{PATH}..." in ingest and re.search(r"--index\s+DIR", ingest)
    ask = run("ask", "--help").stdout
    assert re.search(r"-k\s+N ", ask) and re.search(r"--export\s+FILE", ask) and "<hybrid|dense|bm25>" in ask
