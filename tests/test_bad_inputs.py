"""Bad inputs from a break-it run (issue 17), each one failing on the code before its fix.

Implausible JSONL years (1e30, 2**63, Infinity), terminal control sequences in abstracts and
questions, invalid UTF-8 in a question (command line and page), an LLM base URL with a bad port,
an emoji in front of a question, and `--export` onto an existing file.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.test_hardening import OMNIMOE, SYPE, run_main, text, ui  # noqa: F401 (ui: a fixture)

CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""What a terminal may execute: every C0 control but tab and newline, DEL, and every C1 control."""
OSC52 = "\x1b]52;c;aGFja2Vk\x07"  # writes "hacked" to the clipboard
HOSTILE = ("We introduce ZetaNet" + OSC52 + ", a graph network \x1b]8;;http://127.0.0.1/x\x1b\\that colours\x1b]8;;\x1b\\ "
           "planar graphs \x1b[2J\x1b[31min linear time\x1b[0m\x9b2J\x9d0;title\x9c.\rOverwritten. We also show that "
           "ZetaNet colours interval graphs optimally.")


@pytest.fixture(scope="module")
def scratch(tmp_path_factory, encoder):
    """(folder, index dir, CLI ingest result) for good and bad files ingested by one `ingest` command."""
    root = tmp_path_factory.mktemp("badinputs")
    good = root / "good.jsonl"
    good.write_text("\n".join(json.dumps(r) for r in [
        {"id": "zeta-1", "title": "ZetaNet" + OSC52, "abstract": HOSTILE, "year": 2025, "venue": "ICML"},
        {"id": "zeta-2", "title": "OmegaBench", "abstract": "We present OmegaBench, a benchmark for symbolic "
         "regression with 500 equations from physics.", "year": "2024"},
    ]) + "\n")
    (root / "papers.txt").write_text("NeurIPS 2025\n\nWe propose DeltaSort, a learned sorting network for GPUs.\n")
    bad = {"y1e30.jsonl": "1e30", "y2p63.jsonl": str(2**63), "yinf.jsonl": "Infinity", "ynan.jsonl": "NaN"}
    for name, year in bad.items():
        (root / name).write_text('{"id": "%s", "abstract": "We study a year that is no year.", "year": %s}\n'
                                 % (name, year))
    return root, root / "idx", bad


_INGESTED: dict = {}


@pytest.fixture
def ingested(scratch, monkeypatch, capsys):
    """(exit code, stdout, stderr) of one `paper-assistant ingest` of every file of ``scratch``, run once."""
    root, idx, _ = scratch
    if not _INGESTED:
        files = sorted(str(p) for p in root.iterdir() if p.suffix in (".jsonl", ".txt"))
        _INGESTED["result"] = run_main(monkeypatch, capsys, "ingest", *files, "--index", str(idx))
    return _INGESTED["result"]


# --- implausible years --------------------------------------------------------------------------
def test_an_implausible_year_skips_its_file_and_the_other_files_go_in(scratch, ingested):
    root, idx, bad = scratch
    code, out, err = ingested
    assert code == 1, err
    assert out == "3 added, 0 updated, 0 unchanged, 0 removed, 4 skipped; index holds 3 papers in 3 chunks\n"
    shown = {"y1e30.jsonl": "1e+30", "y2p63.jsonl": str(2**63), "yinf.jsonl": "inf", "ynan.jsonl": "nan"}
    assert sorted(err.splitlines()) == sorted(
        f"skipped: {root / name}:1: 'year' {shown[name]} is not a plausible year (expected 1000–2100)" for name in bad)


# A title's escape sequence drawn in the map PNG was a missing glyph and a matplotlib warning: now an error.
@pytest.mark.filterwarnings("error:Glyph:UserWarning")
def test_after_skipping_bad_years_every_command_works(scratch, ingested, monkeypatch, capsys, tmp_path):
    root, idx, _ = scratch
    code, out, err = run_main(monkeypatch, capsys, "ask", "What is OmegaBench?", "--index", str(idx))
    assert (code, err) == (0, "") and "[1] OmegaBench (zeta-2)" in out
    code, out, err = run_main(monkeypatch, capsys, "list", "Which papers study graph colouring?", "--index", str(idx),
                              "--year", "2025")
    assert (code, err) == (0, "") and "zeta-1" in out
    code, out, err = run_main(monkeypatch, capsys, "map", "--out", str(tmp_path / "m.png"), "--index", str(idx))
    assert (code, err) == (0, "") and out.startswith(f"wrote {tmp_path / 'm.png'}: 3 papers in ")


def test_year_validation_at_load():
    from vectorstore.papers.format_jsonl import _as_year
    from vectorstore.papers import CorpusError

    assert [_as_year(v, "f:1") for v in (2026, 2026.0, "2026", " 1999 ", None, "", "n/a", True)] == \
        [2026, 2026, 2026, 1999, None, None, None, None]
    for v in (1e30, 2**63, -(2**63) - 1, float("inf"), float("-inf"), float("nan"), 999, 2101, "1e30", "-5"):
        with pytest.raises(CorpusError, match=r"^f:1: 'year' .* is not a plausible year \(expected 1000–2100\)$"):
            _as_year(v, "f:1")


# --- terminal control sequences -------------------------------------------------------------------
def test_strip_controls_removes_every_sequence_and_keeps_the_text():
    from assistant.text.sanitize import strip_controls

    cases = {
        "a" + OSC52 + "b": "ab",  # OSC ended by BEL
        "a\x1b]8;;http://127.0.0.1/\x1b\\link\x1b]8;;\x1b\\b": "alinkb",  # OSC 8 hyperlink, ended by ST
        "a\x1b[2J\x1b[1;31mred\x1b[0m": "ared",  # CSI
        "a\x9b2Jb\x9d0;title\x9cc": "abc",  # 8-bit CSI and OSC
        "a\x1bPq#0;2;0;0;0\x1b\\b\x1b_apc\x1b\\c": "abc",  # DCS, APC
        "a\x1bcb\x1b(0c\x1b7d": "abcd",  # RIS, charset, save cursor
        "a\x1b]52;c;cut short\nnext": "a\nnext",  # an unterminated OSC ends at the line
        "tab\tnew\nline\rcr\x07bel\x00nul\x7fdel\x85nel": "tab\tnew\nlinecrbelnuldelnel",
        "café ∀ε 🤖 论文": "café ∀ε 🤖 论文",
        "ok \u202egnp.exe\u202c and \u2066iso\u2069 \u200f\u061cm": "ok gnp.exe and iso m",  # bidi controls (4th, 5th round)
        "עברית ومرحبا": "עברית ومرحبا",  # right-to-left text itself stays
    }
    assert {k: strip_controls(k) for k in cases} == cases


def test_nothing_the_cli_prints_holds_a_control_sequence(scratch, ingested, monkeypatch, capsys):
    root, idx, _ = scratch
    runs = {
        "ask": ["ask", OSC52 + "What is ZetaNet?\x1b[2J", "--abstracts"],
        "ask --json": ["ask", "What is ZetaNet?" + OSC52, "--json"],
        "list": ["list", "Which papers colour graphs?" + OSC52 + "\x9d0;x\x9c"],
        "related": ["related", "--paper", "zeta-1", "--min-similarity", "0"],  # the scratch corpus is tiny
        "related text": ["related", HOSTILE, "--min-similarity", "0"],
        "nothing found": ["ask", "\x1b]52;c;eA==\x07\x1b[2J"],  # a question of control sequences only
    }
    for name, args in runs.items():
        code, out, err = run_main(monkeypatch, capsys, *args, "--index", str(idx))
        assert CONTROL_CHARS.findall(out + err) == [], (name, out + err)
        if name.startswith("related"):  # by facet: the quoted sentences depend on the facet model
            assert code == 0 and "related paper" in out and "this paper:" in out, (name, out, err)
        elif name not in ("nothing found", "ask --json"):  # JSON escapes them (\\u001b): kept as data
            assert code == 0 and "ZetaNet" in out and "planar graphs in linear time" in out + err, (name, out, err)
    assert json.loads(run_main(monkeypatch, capsys, "ask", "What is ZetaNet?", "--json", "--index", str(idx))[1])[
        "citations"][0]["paper_id"] == "zeta-1"


# --- invalid UTF-8 in a question ---------------------------------------------------------------
def test_invalid_utf8_on_the_command_line_is_replaced_and_answered(index, index_dir, monkeypatch, capsys):
    # Python decodes argv bytes that are not UTF-8 (a Latin-1 "café", b"caf\xe9") to lone surrogates.
    code, out, err = run_main(monkeypatch, capsys, "ask", "What is SyPE? caf\udce9", "--index", str(index_dir))
    assert (code, err) == (0, "") and f"[1] SyPE ({SYPE})" in out
    code, out, err = run_main(monkeypatch, capsys, "list", "Which papers study caf\udce9 personality in large "
                              "language models?", "--index", str(index_dir))
    assert (code, err) == (0, "") and "000_12a0d7b1c5c902c5#14" in out and "\udce9" not in out
    code, out, err = run_main(monkeypatch, capsys, "related", "Symplectic positional embeddings caf\udce9 for "
                              "transformers", "--index", str(index_dir), "-k", "3", "--min-similarity", "0")
    assert (code, err) == (0, "") and SYPE in out


def call(url: str, api_name: str, data: list):
    """The outputs of one call of the page's API, sent as the page sends it: JSON whose strings may hold
    escapes such as "\\udcff" (a lone surrogate), which gradio_client's encoder cannot send."""
    import urllib.request

    body = json.dumps({"data": data}).encode()  # ensure_ascii: "\udcff" travels as the six characters \\udcff
    req = urllib.request.Request(f"{url}gradio_api/call/{api_name}", body, {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        event = json.loads(r.read())["event_id"]
    with urllib.request.urlopen(f"{url}gradio_api/call/{api_name}/{event}", timeout=120) as r:
        stream = r.read().decode()
    events = re.findall(r"^event: (\w+)\ndata: (.*)$", stream, re.M)
    assert events and events[-1][0] == "complete", stream[-1000:]
    return json.loads(events[-1][1])


def test_invalid_utf8_in_the_page_is_replaced_and_answered(ui):  # noqa: F811
    demo, url = ui
    personality = "Which papers study personality in large language models? \udcff"
    box, history, _turns, panel = call(url, "chat", ["What is SyPE? \udcff", [], "any", "any", "any", False, "any"])
    assert SYPE in panel and "[1](#pa-src-" in text(history[-1]), text(history[-1])
    assert text(history[-2]) == "What is SyPE? \ufffd"  # the question as shown: decoded with replacement
    box, history, _turns, panel, _list = call(url, "list", [personality, [], "any", "any", "any", False, "any"])
    assert "000_12a0d7b1c5c902c5#14" in panel and not text(history[-1]).startswith("⚠"), text(history[-1])
    plot, info = call(url, "map", [personality])
    assert "Highlighted (★): 2 papers" in info, info


# --- an emoji in front of a question -----------------------------------------------------------
@pytest.mark.parametrize("question, expected", [
    ("🤖 which paper makes MoE faster", OMNIMOE),
    ("👍🏽 What is SyPE? ✨", SYPE),
    ("1️⃣ Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?", OMNIMOE),
])
def test_an_emoji_does_not_turn_an_answer_into_nothing_found(assistant, question, expected):
    from assistant.relevance.judge import Verdict

    ans, plain = assistant.ask(question), assistant.ask(question.encode("ascii", "ignore").decode().strip())
    assert ans.verdict == plain.verdict != Verdict.none and ans.sources[0].paper_id == expected


def test_a_question_of_emoji_only_is_one_line(index_dir, monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "ask", "🤖✨", "--index", str(index_dir))
    assert (code, out, err) == (2, "", "error: the question has no words (emoji are left out): type a question "
                                       "about the papers\n")
    # An eleventh hostile round: "..." was read as a follow-up and answered with an unrelated paper.
    code, out, err = run_main(monkeypatch, capsys, "ask", "...", "--index", str(index_dir))
    assert (code, out, err) == (2, "", "error: the question has no words (only punctuation): type a question about "
                                       "the papers\n")


# --- LLM base URL with a bad port ----------------------------------------------------------------
@pytest.mark.parametrize("url, reason", [
    ("http://127.0.0.1:abc/v1", "Port could not be cast to integer value as 'abc'"),
    ("http://[::1/v1", "Invalid IPv6 URL"),
    ("http://127.0.0.1:70000/v1", "Port out of range 0-65535"),
])
def test_a_bad_llm_base_url_is_a_settings_error_when_settings_load(url, reason, index_dir, monkeypatch, capsys):
    from pydantic import ValidationError

    from assistant.settings import load_settings

    with pytest.raises(ValidationError, match="llm.base_url"):
        load_settings(llm={"base_url": url})
    line = (f"error: invalid setting llm.base_url: is not a valid URL ({reason}), e.g. http://127.0.0.1:11434/v1 "
            f"(got {url!r})\n")
    code, out, err = run_main(monkeypatch, capsys, "--base-url", url, "--model", "m", "ask", "What is SyPE?",
                              "--index", str(index_dir))
    assert (code, out, err) == (2, "", line)
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_MODEL", "m")
    code, out, err = run_main(monkeypatch, capsys, "doctor", "--index", str(index_dir))
    assert (code, out, err) == (2, "", line)


# --- decided: --export never overwrites silently; a short sentence is no heading -------------------
def test_export_refuses_an_existing_file_unless_forced(index, index_dir, monkeypatch, capsys, tmp_path):
    out_file = tmp_path / "sources.md"
    out_file.write_text("my notes\n")
    for cmd in (["ask", "What is SyPE?"], ["list", "Which papers study personality in large language models?"]):
        code, out, err = run_main(monkeypatch, capsys, *cmd, "--export", str(out_file), "--index", str(index_dir))
        assert (code, out, err) == (2, "", f"error: {out_file} already exists: pass --force to overwrite it, or "
                                           "choose another file name\n")
        assert out_file.read_text() == "my notes\n"
    code, out, err = run_main(monkeypatch, capsys, "ask", "What is SyPE?", "--export", str(out_file), "--force",
                              "--index", str(index_dir))
    assert code == 0 and err == f"exported 1 paper to {out_file}\n" and SYPE in out_file.read_text()


def test_export_and_map_never_write_through_a_link_or_into_a_folder(index, index_dir, monkeypatch, capsys, tmp_path):
    """Hostile round (#35, low 10): `--export` and `map --out` followed a dangling symbolic link and created its
    target elsewhere; `--export DIR --force` on a folder was "unexpected IsADirectoryError"."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    link, png_link, folder = tmp_path / "sources.md", tmp_path / "map.png", tmp_path / "notes.md"
    link.symlink_to(elsewhere / "target.md")  # dangling
    png_link.symlink_to(elsewhere / "target.png")
    folder.mkdir()
    code, out, err = run_main(monkeypatch, capsys, "ask", "What is SyPE?", "--export", str(link), "--force",
                              "--index", str(index_dir))
    assert (code, out) == (2, "") and err == (f"error: {link} is a symbolic link: --export writes only a plain file, "
                                              "never through a link; name another file\n")
    code, out, err = run_main(monkeypatch, capsys, "map", "--out", str(png_link), "--force", "--index", str(index_dir))
    assert code == 2 and err.startswith(f"error: {png_link} is a symbolic link: --out writes only a plain file")
    assert list(elsewhere.iterdir()) == []  # nothing created at either link's target
    code, out, err = run_main(monkeypatch, capsys, "list", "Which papers study personality in large language models?",
                              "--export", str(folder), "--force", "--index", str(index_dir))
    assert (code, err) == (2, f"error: {folder} is a folder: name a file for --export, e.g. {folder / 'papers.md'}\n")
    assert list(folder.iterdir()) == []


def test_export_and_map_refuse_a_fifo_or_socket_even_forced(index, index_dir, monkeypatch, capsys, tmp_path):
    """Hostile round (#35, F7): `--export FIFO --force` hung for ever (opening a FIFO waits for a reader); a socket
    was "unexpected OSError". Refused in one line before anything is opened. So that the old code fails here
    instead of hanging, a reader drains the FIFO if the command is still running after 20 s."""
    import os
    import socket
    import threading

    fifo, sock_path = tmp_path / "sources.md", tmp_path / "map.png"
    os.mkfifo(fifo)
    drained: list[bytes] = []
    done = threading.Event()

    def drain():
        if not done.wait(20):
            with open(fifo, "rb") as f:
                drained.append(f.read())

    threading.Thread(target=drain, daemon=True).start()
    try:
        code, out, err = run_main(monkeypatch, capsys, "list", "Which papers study personality in large language "
                                  "models?", "--export", str(fifo), "--force", "--index", str(index_dir))
    finally:
        done.set()
    assert (code, out, drained) == (2, "", [])
    assert err == (f"error: {fifo} is not a plain file (a FIFO, socket or device): --export writes only a plain file; "
                   "name another file\n")
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(sock_path))
    try:
        code, out, err = run_main(monkeypatch, capsys, "map", "--out", str(sock_path), "--force", "--index",
                                  str(index_dir))
    finally:
        sock.close()
    assert (code, err) == (2, f"error: {sock_path} is not a plain file (a FIFO, socket or device): --out writes only "
                              "a plain file; name another file\n")


def test_an_output_or_index_under_a_file_or_with_an_overlong_name_is_one_line(index, index_dir, monkeypatch, capsys,
                                                                              tmp_path):
    """Hostile round (#35, F15): `--export` under a path whose parent is a file was "unexpected FileExistsError",
    a file name over 255 bytes "unexpected OSError: [Errno 36]", `ingest --index` under a file "unexpected
    NotADirectoryError". Each is one line naming the path and what to do, and nothing is written."""
    blocker = tmp_path / "notes.txt"
    blocker.write_text("a file, not a folder\n")
    under = blocker / "sub" / "sources.md"
    code, out, err = run_main(monkeypatch, capsys, "list", "Which papers study personality in large language models?",
                              "--export", str(under), "--index", str(index_dir))
    assert (code, out, err) == (2, "", f"error: {under}: {blocker} is a file, not a folder, so nothing can be created "
                                       "under it: choose a path in a folder for --export\n")
    long_name = tmp_path / ("n" * 300 + ".md")
    shown = f"{str(long_name)[:79]}… ({len(str(long_name)):,} characters)"
    code, out, err = run_main(monkeypatch, capsys, "ask", "What is SyPE?", "--export", str(long_name),
                              "--index", str(index_dir))
    assert (code, out, err) == (2, "", f"error: {shown}: a name in it is 303 bytes long, over the 255 a file name may "
                                       "have here: choose a shorter name for --export\n")
    code, out, err = run_main(monkeypatch, capsys, "map", "--out", str(blocker / "map.png"), "--index", str(index_dir))
    assert (code, err) == (2, f"error: {blocker / 'map.png'}: {blocker} is a file, not a folder, so nothing can be "
                              "created under it: choose a path in a folder for --out\n")
    paper = tmp_path / "p.txt"
    paper.write_text("ICML 2026\n\nWe study UnderNet, a network for folders.\n")
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(paper), "--index", str(blocker / "idx"))
    assert (code, out, err) == (2, "", f"error: the index location {blocker / 'idx'}: {blocker} is a file, not a "
                                       "folder, so nothing can be created under it: choose a path in a folder for "
                                       "--index\n")
    long_index = tmp_path / ("i" * 300)
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(paper), "--index", str(long_index))
    assert code == 2 and err.startswith("error: the index location ") and err.endswith(
        ": a name in it is 300 bytes long, over the 255 a file name may have here: choose a shorter name for --index\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt", "p.txt"]


@pytest.mark.parametrize("first_line, venue", [
    ("We study penguins.", None), ("Is attention all you need?", None), ("我们研究企鹅。", None),
    ("NeurIPS accepted papers", "NeurIPS accepted papers"), ("ICML 2026.", "ICML"),
])
def test_a_short_sentence_is_not_taken_for_a_heading(tmp_path, first_line, venue):
    from vectorstore.papers import CorpusError, load_paper_list

    f = tmp_path / "list.txt"
    f.write_text(f"{first_line}\n\nWe present OmegaBench, a benchmark for symbolic regression.\n")
    if venue is None:
        with pytest.raises(CorpusError, match="the first line looks like an abstract, not a heading"):
            load_paper_list(f)
    else:
        (paper,) = load_paper_list(f)
        assert paper.venue == venue and paper.text.startswith("We present OmegaBench")


def test_doctor_says_an_ingest_is_running_while_one_holds_the_writer_lock(index, settings):
    from assistant.faces.doctor import run_doctor

    first = next(run_doctor(settings))
    assert first[0] and "an ingest is running" not in first[1] and "38 papers in" in first[1]
    with index.writer_lock():
        ok, line = next(run_doctor(settings))
    assert ok and "an ingest is running (another process on this machine)" in line
    assert next(run_doctor(settings))[1] == first[1]  # released: the plain line again


def test_doctor_during_a_first_ingest_says_it_is_running_not_that_the_index_is_empty(tmp_path, settings, encoder):
    """Second hostile round (#35, F14): while a first ingest loaded its model and embedded its first batch,
    doctor failed with "the index holds no papers … add some with `paper-assistant ingest`"."""
    from assistant.answer import forget_indexes
    from assistant.faces.doctor import run_doctor
    from vectorstore.index import open_index

    empty = settings.model_copy(update={"index": tmp_path / "first"})
    idx = open_index(empty.index, encoder)
    forget_indexes()
    ok, line = next(run_doctor(empty))
    assert not ok and "the index holds no papers" in line  # no ingest: the index is just empty
    with idx.writer_lock():
        forget_indexes()
        ok, line = next(run_doctor(empty))
        # Third hostile round: `ask` then said to run `ingest`, which was running.
        from assistant.answer import require_papers
        from assistant.answer.service import EmptyIndexError

        with pytest.raises(EmptyIndexError, match=r"^the index holds no papers yet: an ingest is running \(another "
                                                  r"process on this machine\); ask again once it has written some"):
            require_papers(idx)
    assert (ok, line) == (True, f"index at {empty.index}: an ingest is running (another process on this machine); "
                                "no papers are written yet")
    forget_indexes()


def test_map_out_refuses_an_existing_file_unless_forced(index, index_dir, monkeypatch, capsys, tmp_path):
    """As --export: an existing file is left alone with one line; --force overwrites it."""
    out_file = tmp_path / "map.png"
    out_file.write_bytes(b"my picture")
    code, out, err = run_main(monkeypatch, capsys, "map", "--out", str(out_file), "--index", str(index_dir))
    assert (code, out, err) == (2, "", f"error: {out_file} already exists: pass --force to overwrite it, or "
                                       "choose another file name\n")
    assert out_file.read_bytes() == b"my picture"
    code, out, err = run_main(monkeypatch, capsys, "map", "--out", str(out_file), "--force", "--index", str(index_dir))
    assert code == 0 and out.startswith(f"wrote {out_file}: 38 papers in") and out_file.read_bytes()[:4] == b"\x89PNG"


def test_related_paper_id_with_spaces_around_it_is_the_same_paper(index, index_dir, monkeypatch, capsys):
    code, out, err = run_main(monkeypatch, capsys, "related", "--paper", f"  {OMNIMOE} ", "--json", "-k", "3",
                              "--index", str(index_dir))
    assert code == 0, err
    plain = run_main(monkeypatch, capsys, "related", "--paper", OMNIMOE, "--json", "-k", "3", "--index", str(index_dir))[1]
    assert json.loads(out)["papers"] == json.loads(plain)["papers"] and OMNIMOE not in out


def test_ingesting_an_empty_file_or_folder_warns_instead_of_a_silent_0_added(monkeypatch, capsys, tmp_path):
    (tmp_path / "nothing").mkdir()
    (tmp_path / "nothing" / "notes.pdf").write_bytes(b"%PDF")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "heading.txt").write_text("ICML 2026\n\n")
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(tmp_path / "nothing"), str(tmp_path / "empty.jsonl"),
                              str(tmp_path / "heading.txt"), "--index", str(tmp_path / "idx"))
    assert code == 0 and out.startswith("0 added, 0 updated, 0 unchanged, 0 removed, 0 skipped")
    assert err.splitlines() == [f"warning: {tmp_path / 'nothing'}: no paper files (.txt paper lists, .jsonl, .bib, "
                                ".csv or arXiv snapshot .json) in this folder",
                                "warning: empty.jsonl: no papers in this file",
                                "warning: heading.txt: no papers in this file"]
    # A folder of many empty files: the first 50 are named, then a count (3,000 lines came out: a hostile round).
    (tmp_path / "many").mkdir()
    for i in range(53):
        (tmp_path / "many" / f"e{i:02d}.jsonl").write_text("")
    code, out, err = run_main(monkeypatch, capsys, "ingest", str(tmp_path / "many"), "--index", str(tmp_path / "idx"))
    assert code == 0 and len(err.splitlines()) == 51 and err.splitlines()[-1] == (
        "warning: … and 3 more files gave no paper"), err


def test_an_export_the_system_will_not_write_is_one_line(index, index_dir, monkeypatch, capsys, tmp_path):
    """Third hostile round (#35): as a user who may not write the folder, `--export rodir/x.md`, `--export
    rodir/sub/x.bib` and `map --out rodir/m.png` gave "unexpected PermissionError: [Errno 13] …", and `--export
    /proc/x.md` a bare "[Errno 2]". Each is one line naming the path and what to do. The test runs as root,
    which writes anywhere, so the refusals are made where the system would make them."""
    import os

    rodir = tmp_path / "rodir"
    rodir.mkdir()
    real_open, real_mkdir = os.open, os.mkdir

    def refusing(real):
        def call(path, *args, **kwargs):
            if str(path).startswith(str(rodir) + os.sep):
                raise PermissionError(13, "Permission denied", str(path))
            return real(path, *args, **kwargs)
        return call

    monkeypatch.setattr(os, "open", refusing(real_open))
    monkeypatch.setattr(os, "mkdir", refusing(real_mkdir))
    for args, path, flag in ((["ask", "What is OmniMoE?", "--export"], rodir / "x.md", "--export"),
                             (["ask", "What is OmniMoE?", "--export"], rodir / "sub" / "x.bib", "--export"),
                             (["map", "--out"], rodir / "m.png", "--out")):
        code, out, err = run_main(monkeypatch, capsys, *args, str(path), "--index", str(index_dir))
        refused = path.parent if path.parent != rodir else path
        assert code == 2 and err.endswith(
            f"error: {path}: cannot be written (permission denied{'' if refused == path else f' ({refused})'}): "
            f"choose a folder this user may write for {flag}\n"), err
    monkeypatch.undo()
    code, out, err = run_main(monkeypatch, capsys, "ask", "What is OmniMoE?", "--export", "/proc/x.md",
                              "--index", str(index_dir))
    assert code == 2 and err.endswith("error: /proc/x.md: cannot be written (no such file or directory): choose "
                                      "another path for --export\n"), err
    assert not any(rodir.iterdir())
