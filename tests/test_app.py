"""The Gradio app, launched for real on 127.0.0.1 and driven through gradio_client."""

import pytest

from tests.conftest import free_port


@pytest.fixture(scope="session")
def app_url(settings, assistant):
    import app as web

    cfg = settings.model_copy(update={"ui": settings.ui.model_copy(update={"port": free_port()})})
    demo = web.build_app(cfg, assistant)
    demo.queue(default_concurrency_limit=20)
    demo.launch(server_name="127.0.0.1", server_port=cfg.ui.port, prevent_thread_lock=True, share=False)
    yield f"http://127.0.0.1:{cfg.ui.port}/"
    demo.close()


def test_app_answers_through_gradio_client(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    data = client.predict("Which work makes a fine-grained mixture-of-experts layer about eleven times faster than PEER?",
                          api_name="/ask")
    assert data["sources"][0]["paper_id"] == "000_12a0d7b1c5c902c5#13"
    assert "[1]" in data["answer"]


def test_chat_endpoint_streams_answer_and_sources_panel(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    box, history, panel = client.predict("What is SyPE?", [], api_name="/chat")
    assert box == ""
    assert history[-1]["role"] == "assistant" and "[1]" in str(history[-1]["content"])
    assert "000_12a0d7b1c5c902c5#15" in panel and "<mark" in panel


def test_related_endpoint(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    md = client.predict("", "000_12a0d7b1c5c902c5#13", api_name="/related")
    assert md.count("\n| ") >= 5 and "000_12a0d7b1c5c902c5#13`" not in md


def test_exposed_bind_requires_auth(settings):
    import app as web

    cfg = settings.model_copy(update={"ui": settings.ui.model_copy(update={"host": "0.0.0.0", "auth": None})})
    with pytest.raises(ValueError, match="without authentication"):
        web.launch(cfg, ingest_default=False, block=False)
