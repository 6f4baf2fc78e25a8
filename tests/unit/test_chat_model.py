"""The ChatModel contract: the OpenAI implementation over a loopback fake server, and the in-process fake."""

import pytest
from langchain_core.messages import HumanMessage
from pydantic import SecretStr

from assistant.answer.llm import LLMStreamIncomplete, OpenAIChat
from assistant.settings import LLMSettings
from tests.fake_chat import FakeChat
from tests.fake_openai import FakeOpenAI, Reply

MESSAGES = [HumanMessage("Say something.")]


def chat(fake) -> OpenAIChat:
    return OpenAIChat(LLMSettings(base_url=fake.base_url, api_key=SecretStr("sk-test"), model="m", timeout=5,
                                  max_retries=0))


def test_openai_stream_yields_pieces_and_usage_and_retries_once_without_stream_options():
    with FakeOpenAI(models=["m"]) as fake:
        fake.script(Reply(text="one two three", chunk_size=4, reject_stream_options=True),
                    Reply(text="one two three", chunk_size=4))
        model, usage = chat(fake), {}
        assert "".join(model.stream(MESSAGES, usage)) == "one two three"
        assert ["stream_options" in r for r in fake.requests] == [True, False]
        assert usage == {}  # the retry asked for no usage
        fake.script(Reply(text="again"))
        assert "".join(model.stream(MESSAGES)) == "again" and "stream_options" not in fake.requests[-1]


def test_openai_stream_reports_usage_and_a_cut_reply():
    with FakeOpenAI(models=["m"]) as fake:
        fake.script(Reply(text="a b c"), Reply(text="a b c d e f", finish_reason="length"))
        model, usage = chat(fake), {}
        assert "".join(model.stream(MESSAGES, usage)) == "a b c"
        assert set(usage) == {"input_tokens", "output_tokens", "total_tokens"}
        with pytest.raises(LLMStreamIncomplete) as cut:
            "".join(model.stream(MESSAGES))
        assert cut.value.finish_reason == "length"
        fake.script(Reply(text="whole"))
        assert model.complete(MESSAGES) == "whole"


@pytest.mark.parametrize("size", [1, 4, 7])
def test_openai_stream_masks_a_key_echoed_in_small_pieces(size):
    """F13: an endpoint streaming a few characters at a time echoed the key; its last characters,
    arriving after the first part had been masked, were shown (CLI, page and MCP all stream this way)."""
    key = "sk-proj-Abc123Def456Ghi789"
    text = f"Your key is {key}, as sent. SyPE extrapolates [1]."
    with FakeOpenAI(models=["m"]) as fake:
        fake.script(Reply(text=text, chunk_size=size))
        model = OpenAIChat(LLMSettings(base_url=fake.base_url, api_key=SecretStr(key), model="m", timeout=5,
                                       max_retries=0))
        pieces = list(model.stream(MESSAGES))
        assert fake.requests[0].headers["authorization"] == f"Bearer {key}"
    assert "".join(pieces) == "Your key is ***, as sent. SyPE extrapolates [1]."
    shown = ""
    for piece in pieces:  # nothing of the key on screen at any moment
        shown += piece
        assert not any(key[i : i + 4] in shown for i in range(len(key) - 3)), shown
    assert len(pieces) > 3 and "".join(pieces[:-1]).startswith("Your key is ***, as sent.")  # still live


def test_the_fake_follows_the_contract():
    fake = FakeChat(["first [1]", ["a", "b"], ValueError("down")], usage={"total_tokens": 3})
    assert fake.complete(MESSAGES) == "first [1]"
    usage = {}
    assert list(fake.stream(MESSAGES, usage)) == ["a", "b"] and usage == {"total_tokens": 3}
    with pytest.raises(ValueError):
        fake.complete(MESSAGES)
    assert len(fake.calls) == 3
    with pytest.raises(LLMStreamIncomplete):
        list(FakeChat(["x"], cut=True).stream(MESSAGES))
