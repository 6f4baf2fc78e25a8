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


def test_a_reply_past_the_token_budget_is_read_no_further():
    """Hostile round (#35, 4): an endpoint that ignores max_tokens and streams 50 MB kept an answer busy for
    over 300 s at 1.24 GB; a 200 kB reply was taken whole. Reading stops at max_tokens × reply_chars_per_token
    characters (here 64 × 8), the stream or the whole reply alike, and says why."""
    import time

    from assistant.answer.llm import LLMReplyOverBudget, explain_llm_error

    with FakeOpenAI(models=["m"]) as fake:
        cfg = LLMSettings(base_url=fake.base_url, api_key=SecretStr("sk-test"), model="m", timeout=5,
                          max_retries=0, max_tokens=64)
        fake.script(Reply(text="The same sentence again and again. " * 12, chunk_size=420, repeat=10_000))  # 4 MB
        started, got = time.monotonic(), []
        with pytest.raises(LLMReplyOverBudget) as cut:
            for piece in OpenAIChat(cfg).stream(MESSAGES):
                got.append(piece)
        assert time.monotonic() - started < 3
        assert "".join(got) == ("The same sentence again and again. " * 15)[:512] and cut.value.limit == 512
        assert explain_llm_error(cut.value, cfg, mid_answer=True) == (
            "The LLM's answer ran past the reply budget of 64 tokens and was cut at 512 characters (the endpoint "
            f"{fake.base_url} does not stop at max_tokens).")
        fake.script(Reply(text="x" * 200, chunk_size=1, repeat=20))  # 4,000 pieces of a character: 4 k > 2 × 64 + 16
        with pytest.raises(LLMReplyOverBudget):
            list(OpenAIChat(cfg.model_copy(update={"reply_chars_per_token": 1000})).stream(MESSAGES))
        fake.script(Reply(text="y" * 1000, repeat=200))  # 200 kB, not streamed
        with pytest.raises(LLMReplyOverBudget):
            OpenAIChat(cfg).complete(MESSAGES)
        fake.script(Reply(text="z" * 512, chunk_size=64))  # the budget itself is no cut
        assert "".join(OpenAIChat(cfg).stream(MESSAGES)) == "z" * 512


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


def test_the_answer_path_runs_on_any_chat_model_through_the_contract():
    """The condense step and related work's explanation call only ``complete`` of the ChatModel contract
    (tests/fake_chat.py keeps to it, no HTTP): what the model replies is used, cleaned and checked, and an
    endpoint failure is handed back to the caller, never raised through it."""
    from assistant.answer.followup import FollowUps
    from assistant.research.related import RelatedPaper
    from assistant.research.related_llm import add_llm_summaries, llm_explanation
    from assistant.settings import load_settings
    from assistant.types import CitedAnswer, Source
    from vectorstore.papers import Paper

    settings = load_settings()
    turns = [("What is OmniMoE?", CitedAnswer(question="What is OmniMoE?", answer="OmniMoE routes tokens [1].",
                                              sources=[Source(n=1, paper_id="p#1", label="OmniMoE", title="OmniMoE")]))]
    follow = FollowUps(settings, index=None)
    model = FakeChat(["Sure! Here is the standalone question:\n\"How fast is OmniMoE?\""])
    assert follow.condense("How fast is it?", turns, model) == ("How fast is OmniMoE?", True, None)
    (sent,) = model.calls
    prompt = "\n".join(m.content for m in sent)
    assert "User: What is OmniMoE?\nAssistant: OmniMoE routes tokens. (papers: OmniMoE)" in prompt
    assert "Follow-up question: How fast is it?" in prompt
    down = ValueError("down")
    assert follow.condense("How fast is it?", turns, FakeChat([down])) == ("How fast is it?", False, down)
    assert follow.condense("How fast is it?", [], model) == ("How fast is it?", False, None) and len(model.calls) == 1

    query = "We route tokens to experts. It is fast."
    paper = Paper(id="p#2", title="Sparse routing", text="Experts share a router. Routing is cheap. It scales.")
    item = RelatedPaper(paper=paper, score=0.5, similarity=0.6, pairs=[])
    reply = FakeChat(["Both route tokens [Q1] [P1]; only the paper scales [P3] [P9] [Q3] [7]."])
    assert llm_explanation(reply, settings.prompts_dir, query, item) == "Both route tokens [Q1] [P1]; only the paper scales [P3]."
    items = [item, RelatedPaper(paper=paper, score=0.4, similarity=0.5, pairs=[])]
    note = add_llm_summaries(FakeChat(["first [Q1].", ValueError("endpoint down")]), settings.llm, settings.prompts_dir,
                             query, items)
    assert items[0].summary == "first [Q1]." and items[1].summary == ""
    assert note.endswith("Showing sentence pairs only.")
    with pytest.raises(LLMStreamIncomplete):  # the fake's cut stream is the contract's, as the generator reads it
        list(FakeChat(["x"], cut=True).stream(MESSAGES))
