"""The fake OpenAI server against the real clients (openai + langchain_openai.ChatOpenAI)."""

from __future__ import annotations

import asyncio
import time

import openai
import pytest
from langchain_openai import ChatOpenAI

from tests.fake_openai import FakeOpenAI, Reply, free_port

TEXT = "Retrieval-augmented generation grounds answers in the retrieved abstracts."


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    # A proxy or tracing variable in the developer's environment would send traffic
    # off the machine; these tests must only ever talk to 127.0.0.1.
    for name in (
        "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
        "OPENAI_PROXY", "OPENAI_BASE_URL", "OPENAI_API_BASE",
        "LANGSMITH_TRACING", "LANGCHAIN_TRACING_V2", "LANGSMITH_GATEWAY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture
def fake():
    with FakeOpenAI(models=["test-model", "other-model"]) as server:
        yield server


def chat(fake: FakeOpenAI | None = None, *, base_url: str | None = None, timeout: float = 5, **kwargs) -> ChatOpenAI:
    return ChatOpenAI(
        base_url=base_url or fake.base_url,
        api_key="sk-test",
        model=kwargs.pop("model", "test-model"),
        timeout=timeout,
        max_retries=0,
        **kwargs,
    )


def test_base_url_is_loopback_v1(fake):
    """The server listens on the loopback address only (not every interface), and the OpenAI client finds the
    API under the base URL's /v1; a path outside the API is a 404."""
    import json
    import urllib.error
    import urllib.request

    assert fake.base_url == f"http://127.0.0.1:{fake.port}/v1"
    assert fake._server.server_address == ("127.0.0.1", fake.port)
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=5)
    assert [m.id for m in client.models.list()] == ["test-model", "other-model"]
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(f"http://127.0.0.1:{fake.port}/v1/engines", timeout=5)
    assert err.value.code == 404 and json.load(err.value)["error"]["code"] == "unknown_url"


def test_invoke_returns_scripted_text_and_records_request(fake):
    fake.script(Reply(text=TEXT))
    message = chat(fake).invoke("what is RAG really")

    assert message.content == TEXT
    # usage is whitespace-word counts: 4 prompt words, 8 reply words.
    assert message.usage_metadata["input_tokens"] == 4
    assert message.usage_metadata["output_tokens"] == 8
    assert message.response_metadata["finish_reason"] == "stop"
    (request,) = fake.requests
    assert request["model"] == "test-model"
    assert request["messages"] == [{"role": "user", "content": "what is RAG really"}]
    assert not request.get("stream")
    assert request.headers["authorization"] == "Bearer sk-test"
    assert fake.pending == 0


def test_script_is_consumed_in_order_then_default(fake):
    fake.script("one", Reply(text="two"))
    fake.default = Reply(text="fallback")
    llm = chat(fake)
    assert [llm.invoke("q").content for _ in range(4)] == ["one", "two", "fallback", "fallback"]


def test_models_endpoint_lists_configured_models(fake):
    client = openai.OpenAI(base_url=fake.base_url, api_key="sk-test", max_retries=0, timeout=5)
    models = client.models.list()
    assert [m.id for m in models.data] == ["test-model", "other-model"]
    assert {m.owned_by for m in models.data} == {"test"}


def test_stream_yields_scripted_text_in_several_chunks(fake):
    fake.script(Reply(text=TEXT, chunk_size=8))
    chunks = [c.content for c in chat(fake).stream("q")]

    assert "".join(chunks) == TEXT
    content_chunks = [c for c in chunks if c]
    assert content_chunks == [TEXT[i : i + 8] for i in range(0, len(TEXT), 8)]
    assert fake.requests[0]["stream"] is True
    # With a custom base_url ChatOpenAI does not ask for stream usage by default, which
    # is why reject_stream_options only bites when stream_usage=True.
    assert "stream_options" not in fake.requests[0]


def test_stream_usage_chunk_when_requested(fake):
    fake.script(Reply(text=TEXT))
    chunks = list(chat(fake, stream_usage=True).stream("two words"))

    assert "".join(c.content for c in chunks) == TEXT
    usage = [c.usage_metadata for c in chunks if c.usage_metadata]
    assert len(usage) == 1
    assert (usage[0]["input_tokens"], usage[0]["output_tokens"], usage[0]["total_tokens"]) == (2, 8, 10)
    assert fake.requests[0]["stream_options"] == {"include_usage": True}


@pytest.mark.parametrize(
    ("status", "error", "code"),
    [
        (401, openai.AuthenticationError, "invalid_api_key"),
        (429, openai.RateLimitError, "rate_limit_exceeded"),
        (500, openai.InternalServerError, None),
    ],
)
@pytest.mark.parametrize("streaming", [False, True], ids=["invoke", "stream"])
def test_error_statuses_raise_openai_errors(fake, status, error, code, streaming):
    fake.script(Reply(status=status))
    llm = chat(fake)
    with pytest.raises(error) as excinfo:
        llm.invoke("q") if not streaming else list(llm.stream("q"))
    assert excinfo.value.status_code == status
    assert excinfo.value.code == code


def test_error_message_override(fake):
    fake.script(Reply(status=429, error_message="You exceeded your current quota"))
    with pytest.raises(openai.RateLimitError, match="exceeded your current quota"):
        chat(fake).invoke("q")


def test_unknown_model_is_404_and_keeps_the_script(fake):
    fake.script("kept for later")
    with pytest.raises(openai.NotFoundError) as excinfo:
        chat(fake, model="gpt-nope").invoke("q")

    assert excinfo.value.code == "model_not_found"
    assert "gpt-nope" in excinfo.value.message
    assert fake.requests[0]["model"] == "gpt-nope"
    assert fake.pending == 1
    assert chat(fake).invoke("q").content == "kept for later"


def test_delay_beyond_timeout_raises_timeout_and_server_survives(fake):
    fake.script(Reply(text="too late", delay=2), "on time")
    started = time.monotonic()
    with pytest.raises(openai.APITimeoutError):
        chat(fake, timeout=0.5).invoke("q")
    assert time.monotonic() - started < 1.8

    assert chat(fake).invoke("q").content == "on time"


def test_delay_within_timeout_is_just_slow(fake):
    fake.script(Reply(text="slow but fine", delay=0.3))
    started = time.monotonic()
    assert chat(fake, timeout=3).invoke("q").content == "slow but fine"
    assert time.monotonic() - started >= 0.3


def test_connection_refused_on_free_port():
    llm = chat(base_url=f"http://127.0.0.1:{free_port()}/v1", timeout=3)
    with pytest.raises(openai.APIConnectionError) as excinfo:
        llm.invoke("q")
    # Refused, not timed out (APITimeoutError subclasses APIConnectionError).
    assert not isinstance(excinfo.value, openai.APITimeoutError)


def test_cut_stream_yields_prefix_then_raises(fake):
    text = "abcdefghijklmnopqrstuvwxyz"
    fake.script(Reply(text=text, chunk_size=4, cut_after=3))
    received = []
    with pytest.raises(openai.APIConnectionError):
        for chunk in chat(fake).stream("q"):
            received.append(chunk.content)
    assert "".join(received) == "abcdefghijkl"


def test_reject_stream_options_only_when_sent(fake):
    fake.script(Reply(text=TEXT, reject_stream_options=True), Reply(text=TEXT, reject_stream_options=True))
    with pytest.raises(openai.BadRequestError) as excinfo:
        list(chat(fake, stream_usage=True).stream("q"))
    assert excinfo.value.status_code == 400
    assert "stream_options" in excinfo.value.message
    assert excinfo.value.param == "stream_options"

    # The same server answers a stream without stream_options normally.
    assert "".join(c.content for c in chat(fake).stream("q")) == TEXT
    assert ["stream_options" in r for r in fake.requests] == [True, False]


def test_usage_false_invoke_and_stream(fake):
    fake.script(Reply(text=TEXT, usage=False), Reply(text=TEXT, usage=False))
    message = chat(fake).invoke("q")
    assert message.content == TEXT
    assert message.usage_metadata is None

    chunks = list(chat(fake, stream_usage=True).stream("q"))
    assert "".join(c.content for c in chunks) == TEXT
    assert [c.usage_metadata for c in chunks if c.usage_metadata] == []


def test_concurrent_async_requests(fake):
    fake.script(*(Reply(text="same", delay=0.3) for _ in range(3)))
    llm = chat(fake)

    async def run():
        return await asyncio.gather(*(llm.ainvoke(f"q{i}") for i in range(3)))

    started = time.monotonic()
    replies = asyncio.run(run())
    assert [r.content for r in replies] == ["same"] * 3
    # Served in parallel threads: three 0.3 s delays overlap instead of adding up.
    assert time.monotonic() - started < 0.85
    assert sorted(r["messages"][0]["content"] for r in fake.requests) == ["q0", "q1", "q2"]


def test_stop_refuses_further_connections():
    server = FakeOpenAI()
    url = server.base_url
    server.stop()
    server.stop()  # idempotent
    with pytest.raises(openai.APIConnectionError):
        chat(base_url=url, timeout=2).invoke("q")
