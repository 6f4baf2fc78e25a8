"""The abstract-only caveat end to end: the answer (extractive and LLM), the CLI's text, the chat's
Markdown and the LLM prompt; the MCP `ask` tool is checked in tests/test_mcp.py."""

from pydantic import SecretStr

from assistant.answer.pipeline import Assistant
from assistant.faces.render import answer_text
from assistant.settings import LLMSettings
from tests.fake_openai import FakeOpenAI

OMNIMOE = "000_12a0d7b1c5c902c5#13"
HYPER = "What learning rate did OmniMoE use?"
NOT_GIVEN = "The question names OmniMoE, but its abstract does not appear to give this."
CAVEAT = ("Abstracts rarely give exact hyper-parameters: this answer is limited to what the abstracts say. "
          "For them, see the full text of the cited paper: [1] OmniMoE.")


def test_extractive_answer_says_it_is_limited_to_abstracts(assistant):
    ans = assistant.ask(HYPER)
    assert ans.sources[0].paper_id == OMNIMOE and len(ans.sources) == 1
    assert ans.caveat == CAVEAT and ans.note == f"{NOT_GIVEN} {CAVEAT}"
    assert answer_text(ans).startswith(f"Note: {NOT_GIVEN} {CAVEAT}\n")  # the CLI's text

    from assistant.page import answer_markdown

    assert f"⚠ {NOT_GIVEN} {CAVEAT}" in answer_markdown(ans)  # the chat
    plain = assistant.ask("What is OmniMoE?")
    assert plain.caveat == "" and "Abstracts rarely" not in plain.note


def test_nothing_found_still_says_where_such_details_are(assistant):
    ans = assistant.ask("What batch size was used to train protein structure predictors?")
    assert ans.verdict.value == "none" and ans.sources == []
    assert ans.caveat.endswith("The full papers, not their abstracts, would give them.")


def test_llm_prompt_carries_the_rule_and_the_answer_the_caveat(settings, index):
    with FakeOpenAI(models=["test-model"]) as fake:
        cfg = LLMSettings(base_url=fake.base_url, api_key=SecretStr("sk-test"), model="test-model", timeout=5.0,
                          max_retries=0)
        a = Assistant(settings.model_copy(update={"llm": cfg}), index)
        fake.script("The abstract does not give the learning rate of OmniMoE [1].")
        ans = a.ask(HYPER)
    system = next(m["content"] for m in fake.requests[0]["messages"] if m["role"] in ("system", "developer"))
    assert "Abstracts rarely state exact hyper-parameters" in system and "never guess a value" in system
    assert ans.mode == "llm" and ans.sources[0].paper_id == OMNIMOE and ans.caveat == CAVEAT
