import json
import os
import re
import subprocess
import sys

import pytest

from tests.conftest import ROOT
from tests.conversations import CONVERSATIONS


def run_cli(*args, env_extra=None, timeout=180):
    env = dict(os.environ, **(env_extra or {}))
    return subprocess.run([sys.executable, "-m", "assistant", *args], capture_output=True, text=True, cwd=ROOT,
                          env=env, timeout=timeout)


def test_ask_json_end_to_end(index, index_dir):
    out = run_cli("ask", "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?",
                  "--index", str(index_dir), "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["citations"][0]["paper_id"] == "000_12a0d7b1c5c902c5#13"
    assert "6.7ms" in data["citations"][0]["sentence"]


def test_ask_text_prints_math_as_unicode_and_json_keeps_the_stored_quote(index, index_dir):
    q = "How much does OmniMoE reduce inference latency compared to PEER?"
    out = run_cli("ask", q, "--index", str(index_dir))
    assert out.returncode == 0, out.stderr
    assert "(a 10.9× speedup)" in out.stdout and "$" not in out.stdout
    assert not out.stdout.startswith("- ")  # one cited paper: a sentence, not a one-item list
    data = json.loads(run_cli("ask", q, "--index", str(index_dir), "--json").stdout)
    assert "10.9$\\times$" in data["citations"][0]["sentence"]  # quotes match the stored text


def test_ask_text_and_errors_are_one_line(index, index_dir):
    out = run_cli("ask", "Which papers improve protein structure prediction?", "--index", str(index_dir))
    assert out.returncode == 0
    assert "No relevant abstract found" in out.stdout and "Sources:" not in out.stdout
    bad = run_cli("ask", "   ", "--index", str(index_dir))
    assert bad.returncode == 2
    assert bad.stderr.strip().splitlines()[-1].startswith("error: the question is empty")
    assert "Traceback" not in bad.stderr
    missing = run_cli("ask", "anything", "--index", str(index_dir / "nowhere"))
    assert missing.returncode == 2 and "no index" in missing.stderr and "Traceback" not in missing.stderr


def test_ingest_then_related(tmp_path):
    f = tmp_path / "mini.txt"
    f.write_text("ICML 2026\n\nWe introduce FooNet, a network for graph coloring with 3x speed.\n\n"
                 "We study protein folding with diffusion models.\n\nWe present BarBench, a benchmark for graph coloring.\n")
    out = run_cli("ingest", str(f), "--index", str(tmp_path / "idx"))
    assert out.returncode == 0, out.stderr
    assert "3 added, 0 updated, 0 unchanged, 0 removed, 0 skipped" in out.stdout
    again = run_cli("ingest", str(f), "--index", str(tmp_path / "idx"))
    assert "0 added, 0 updated, 3 unchanged" in again.stdout
    rel = run_cli("related", "--paper", "mini#1", "--index", str(tmp_path / "idx"), "--json")
    assert rel.returncode == 0, rel.stderr
    ranked = [r["paper_id"] for r in json.loads(rel.stdout)["papers"]]
    assert ranked[0] == "mini#3" and "mini#1" not in ranked
    unknown = run_cli("related", "--paper", "mini#9", "--index", str(tmp_path / "idx"))
    assert unknown.returncode == 2 and "no indexed paper has id 'mini#9'" in unknown.stderr


def test_index_location_that_is_a_file_is_one_clear_error(tmp_path, encoder):
    import pytest

    from vectorstore.index import open_index
    from vectorstore.store import StoreError

    a_file = tmp_path / "not-a-folder"
    a_file.write_text("x")
    for create in (False, True):
        with pytest.raises(StoreError, match="is a file, not a folder"):
            open_index(a_file, encoder, create=create)
    assert a_file.read_text() == "x"


def test_usage_errors_are_one_line_and_k_comes_from_the_settings(index, index_dir):
    bad = run_cli("related", "foo", "--venue", "icml")
    assert bad.returncode == 2
    assert bad.stderr.strip().startswith("error: No such option: --venue (see `")
    assert bad.stderr.strip().endswith(" related --help`)") and len(bad.stderr.strip().splitlines()) == 1
    out = run_cli("ask", "What is SyPE?", "--index", str(index_dir), "--json",
                  env_extra={"PAPER_ASSISTANT_RETRIEVAL__K": "2"})
    data = json.loads(out.stdout)
    assert len(data["citations"]) + len(data["also_retrieved"]) == 2


def test_corpus_setting_takes_a_plain_path_or_several(monkeypatch, tmp_path):
    import os

    from assistant.settings import load_settings

    monkeypatch.setenv("PAPER_ASSISTANT_CORPUS", str(tmp_path / "a.txt"))
    assert load_settings().corpus == [tmp_path / "a.txt"]
    monkeypatch.setenv("PAPER_ASSISTANT_CORPUS", os.pathsep.join([str(tmp_path / "a.txt"), str(tmp_path / "b")]))
    assert load_settings().corpus == [tmp_path / "a.txt", tmp_path / "b"]
    monkeypatch.setenv("PAPER_ASSISTANT_CORPUS", json.dumps([str(tmp_path / "c.jsonl")]))
    assert load_settings().corpus == [tmp_path / "c.jsonl"]
    # "~" is the home folder, as in a shell, not a folder named "~"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PAPER_ASSISTANT_CORPUS", "~/d.txt")
    monkeypatch.setenv("PAPER_ASSISTANT_INDEX", "~/idx")
    assert (load_settings().corpus, load_settings().index) == ([tmp_path / "d.txt"], tmp_path / "idx")


def test_serve_refuses_a_busy_port_before_ingesting():
    import socket

    import pytest

    import assistant.page as web

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        with pytest.raises(ValueError, match=rf"cannot serve on 127.0.0.1:{port} .*choose another port with --port"):
            web.check_port_free("127.0.0.1", port)


def test_an_unexpected_failure_in_the_page_is_one_line():
    import assistant.page as web

    msg = web.ui_error(ConnectionRefusedError(111, "Connection refused"))
    assert msg.startswith("the request failed (ConnectionRefusedError: ") and "Chroma server" in msg
    assert web.ui_error(ValueError("the question is empty: type a question")) == "the question is empty: type a question"


def test_project_env_file_is_read_from_any_working_directory(tmp_path, monkeypatch):
    from assistant import settings as st

    env = tmp_path / "project.env"
    env.write_text("PAPER_ASSISTANT_RETRIEVAL__K=3\n")
    monkeypatch.setattr(st.Settings, "model_config", {**st.Settings.model_config, "env_file": (env, ".env")})
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PAPER_ASSISTANT_RETRIEVAL__K", raising=False)
    assert st.load_settings().retrieval.k == 3
    assert st.ENV_FILES[0] == st.PROJECT_ROOT / ".env"


def test_the_environment_beats_a_dotenv_file_whatever_the_variable_name(tmp_path, monkeypatch):
    from assistant.settings import load_settings

    monkeypatch.chdir(tmp_path)
    for name in ("OPENAI_MODEL", "PAPER_ASSISTANT_LLM__MODEL", "PAPER_ASSISTANT_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / ".env").write_text("PAPER_ASSISTANT_LLM__MODEL=from-dotenv\n")
    assert load_settings().llm.model == "from-dotenv"
    monkeypatch.setenv("OPENAI_MODEL", "from-env")
    assert load_settings().llm.model == "from-env"
    monkeypatch.setenv("PAPER_ASSISTANT_LLM__MODEL", "prefixed-env")
    assert load_settings().llm.model == "prefixed-env"


def test_ask_and_doctor_on_an_empty_index_say_how_to_add_papers(tmp_path):
    f = tmp_path / "mini.txt"
    f.write_text("ICML 2026\n\nWe introduce FooNet, a network for graph coloring with 3x speed.\n")
    idx = str(tmp_path / "idx")
    assert run_cli("ingest", str(f), "--index", idx).returncode == 0
    assert run_cli("remove", "mini.txt", "--index", idx).returncode == 0
    out = run_cli("ask", "Which papers study graph coloring?", "--index", idx)
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "holds no papers" in out.stderr and "paper-assistant ingest <files>" in out.stderr
    assert "No relevant abstract found" not in out.stdout
    doc = run_cli("doctor", "--index", idx)
    assert "holds no papers" in doc.stdout + doc.stderr and "paper-assistant ingest" in doc.stdout + doc.stderr
    for args in (["list", "graph coloring"], ["related", "graph coloring networks"],
                 ["map", "--out", str(tmp_path / "m.png")]):
        out = run_cli(*args, "--index", idx)
        assert out.returncode == 2, args
        assert "holds no papers" in out.stderr, args
        assert len(out.stderr.strip().splitlines()) == 1, (args, out.stderr)


def test_chat_keeps_the_paper_across_follow_ups_and_new_forgets_it(index, index_dir):
    """The CLI had no conversation: `ask "what dataset did it use?"` silently answered an unrelated paper."""
    lines = "What is VideoLoom?\nand what dataset?\n/sources\n/new\nand what dataset?\n"
    out = subprocess.run([sys.executable, "-m", "assistant", "chat", "--index", str(index_dir)], input=lines,
                         capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert out.returncode == 0, out.stderr
    turns = out.stdout.split("you> ")[1:]
    assert [t.splitlines()[0] for t in turns] == ["What is VideoLoom?", "and what dataset?", "and what dataset?"]
    assert "LoomData-8.7k" in turns[1] and "[1] VideoLoom (004_9268713af81d21d3#16)" in turns[1]
    assert "Recent advancements in Video Large Language Models" in turns[1]  # /sources: the abstract
    assert "(a new conversation: earlier answers are forgotten)" in turns[1]
    assert "refers to an earlier answer, and there is none yet" in turns[2]
    one_shot = run_cli("ask", "what dataset did it use?", "--index", str(index_dir))
    assert "follow-ups need `paper-assistant chat`" in one_shot.stderr
    # Bytes no UTF-8 decoder reads, after a first answer (a thirteenth round: the follow-up's history reached the
    # tokenizer with lone surrogates, "unexpected TypeError: TextInputSequence must be str").
    raw = subprocess.run([sys.executable, "-m", "assistant", "chat", "--index", str(index_dir)], cwd=ROOT, timeout=180,
                         input=b"".join(b"What is VideoLoom \xff\xfe " + b"and its data " * 80 + b"?\n" for _ in range(4))
                         + b"and what did it use \xff?\n", capture_output=True)
    assert raw.returncode == 0 and b"unexpected" not in raw.stderr, raw.stderr[-500:]
    # A filter value no paper has: one line and exit 2, as `ask` (each turn said so, then exit 0: an 11th round).
    bad = subprocess.run([sys.executable, "-m", "assistant", "chat", "--venue", "nosuch", "--index", str(index_dir)],
                         input="What is VideoLoom?\n", capture_output=True, text=True, cwd=ROOT, timeout=180)
    assert (bad.returncode, bad.stdout) == (2, "") and bad.stderr.startswith("error: no indexed paper has venue 'nosuch'")


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_the_issue_33_conversations_compare_keep_their_paper_and_quote_syntheses_in_chat(index, index_dir, name):
    """Issue 33 (items 1–3) in `paper-assistant chat`, no LLM: a comparison side by side, "another" and "they" as a
    researcher means them, a synthesis quoted with the line saying a written one needs an LLM."""
    turns, checks = CONVERSATIONS[name]
    out = subprocess.run([sys.executable, "-m", "assistant", "chat", "--index", str(index_dir)], input="\n".join(turns) + "\n",
                         capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert out.returncode == 0, out.stderr
    said = out.stdout.split("you> ")[1:]
    assert [t.splitlines()[0] for t in said] == turns
    for i, shows, lacks, cited in checks:
        text = said[i]
        for words in shows:
            assert words in text, (name, i, words, text)
        for words in lacks:
            assert words not in text, (name, i, words, text)
        sources = text.split("\nSources:\n", 1)[1].split("\n\n")[0]
        assert re.findall(r"^\[\d+\] .* \((\S+#\d+)\)", sources, re.M) == cited, (name, i, text)


def test_a_cold_ask_imports_only_what_it_runs(index, index_dir):
    """Every CLI call took 3.2–5 s, most of it imports: render → related → retrieval pulled in LangChain's
    retriever (0.7 s) for a class the command never uses, and the prompts, the LLM client and the text
    splitter loaded LangChain without an LLM configured."""
    script = ("import sys, json\nsys.argv = ['paper-assistant', 'ask', 'What is SyPE?', '--index', sys.argv[1]]\n"
              "from assistant.cli import main\ntry:\n    main()\nexcept SystemExit:\n    pass\n"
              "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "PAPER_ASSISTANT_LLM"))}
    out = subprocess.run([sys.executable, "-c", script, str(index_dir)], capture_output=True, text=True, cwd=ROOT,
                         env=env, timeout=180)
    assert out.returncode == 0, out.stderr
    assert "SyPE" in out.stdout
    loaded = set(json.loads(out.stdout.splitlines()[-1]))
    assert loaded & {"langchain_core", "langchain_text_splitters", "langsmith", "langchain_openai", "openai", "torch",
                     "transformers", "sentence_transformers", "sklearn", "gradio", "mcp", "matplotlib"} == set()


def test_the_documented_json_keys_are_the_ones_the_commands_write(index, index_dir):
    """The README documented "id" and "quoted sentence" where `ask --json` writes `paper_id` and `sentence`."""
    import re

    doc = (ROOT / "docs" / "usage.md").read_text()

    def keys(label: str) -> list[str]:
        line = next(ln for ln in doc.splitlines() if ln.startswith(f"- {label}:"))
        return re.findall(r"`([a-z_]+)`", line.split(":", 1)[1])

    ask = json.loads(run_cli("ask", "What is SyPE?", "--index", str(index_dir), "--json").stdout)
    listed = json.loads(run_cli("list", "machine unlearning", "--index", str(index_dir), "--json").stdout)
    related = json.loads(run_cli("related", "--paper", "000_12a0d7b1c5c902c5#6", "--index", str(index_dir),
                                 "--json", "--min-similarity", "0").stdout)
    assert keys("`ask --json`") == list(ask)
    assert keys("each of `citations` and `also_retrieved`") == list(ask["citations"][0]) == list(ask["also_retrieved"][0])
    assert keys("`list --json`") == list(listed) and keys("each of its `papers`") == list(listed["papers"][0])
    assert keys("`related --json`") == list(related)
    related_line = [ln for ln in doc.splitlines() if ln.startswith("- each of its `papers`:")][1]
    assert re.findall(r"`([a-z_]+)`", related_line.split(":", 1)[1]) == list(related["papers"][0])
