"""The Gradio app, launched for real on 127.0.0.1 and driven through gradio_client."""

import re
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
    assert data["citations"][0]["paper_id"] == "000_12a0d7b1c5c902c5#13"
    assert "[1]" in data["answer"]


def test_chat_endpoint_streams_answer_and_sources_panel(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    box, history, panel = client.predict("What is SyPE?", [], api_name="/chat")
    # The box is cleared by the first update; the last leaves it alone (a question typed meanwhile stays).
    assert box == {"__type__": "update"}
    assert history[-1]["role"] == "assistant" and "[1]" in str(history[-1]["content"])
    assert "000_12a0d7b1c5c902c5#15" in panel and "<mark" in panel


def test_a_follow_up_can_refer_to_a_list_shown_in_list_mode(app_url, assistant):
    from gradio_client import Client

    from assistant.listing import list_papers

    question = "Which papers study personality in large language models?"
    second = list_papers(assistant, question).papers[1].id
    client = Client(app_url, verbose=False)  # one session: the follow-up sees the list's turn
    _, history, _ = client.predict(question, [], api_name="/list")
    _, _, panel = client.predict("tell me more about the second one", history, api_name="/chat")
    assert second in panel and panel.count("pa-src-") == 1


def test_related_endpoint(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    md = client.predict("", "000_12a0d7b1c5c902c5#6", api_name="/related")  # VRU: certified unlearning
    assert md.count("\n| ") >= 3 and "000_12a0d7b1c5c902c5#6`" not in md
    assert "004_9268713af81d21d3#9" in md  # FIA: multi-concept unlearning
    assert re.search(r"\d+ related papers?; \d+ others? w(?:ere|as) below the bar", md)
    # A paper nothing in the index is close to: said so, and the nearest 3 shown under that heading.
    md = client.predict("", "000_12a0d7b1c5c902c5#13", api_name="/related")
    assert "None is closely related (similarity under" in md and "the nearest are:" in md
    assert len(re.findall(r"^\| \d+ \|", md, re.M)) == 3


def test_exposed_bind_requires_auth(settings):
    import app as web

    cfg = settings.model_copy(update={"ui": settings.ui.model_copy(update={"host": "0.0.0.0", "auth": None})})
    with pytest.raises(ValueError, match="without authentication"):
        web.launch(cfg, ingest_default=False, block=False)


def test_a_paper_ingested_while_the_app_runs_can_be_picked_for_related_work(settings, encoder, tmp_path):
    from gradio_client import Client

    import app as web
    from assistant.answer import Assistant
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    first, later = tmp_path / "first.txt", tmp_path / "later.txt"
    first.write_text("ICML 2026\nWe route tokens to sparse experts for faster inference.\n\n"
                     "We denoise images with diffusion transformers.\n", encoding="utf-8")
    later.write_text("ICML 2026\nWe route tokens to experts on phone NPUs for fast mixture-of-experts inference.\n",
                     encoding="utf-8")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([first], idx)
    cfg = settings.model_copy(update={"index": tmp_path / "idx", "ui": settings.ui.model_copy(update={"port": free_port()})})
    demo = web.build_app(cfg, Assistant(cfg, idx))
    demo.queue()
    demo.launch(server_name="127.0.0.1", server_port=cfg.ui.port, prevent_thread_lock=True, share=False)
    try:
        ingest([later], idx)
        md = Client(f"http://127.0.0.1:{cfg.ui.port}/", verbose=False).predict("", "later#1", api_name="/related")
        assert md.startswith("Related to **") and "(later#1)" in md.split("\n")[0] and "first#1" in md
    finally:
        demo.close()


def test_a_start_refreshes_only_the_corpus_files_an_own_index_holds(settings, encoder, tmp_path):
    """`serve`/`mcp` on a user's own index never add the bundled papers to it (nor undo a remove);
    a corpus file the index holds is refreshed."""
    from assistant.service import corpus_to_refresh
    from vectorstore.index import open_index
    from vectorstore.papers import iter_paper_files
    from vectorstore.ingest import ingest

    own = tmp_path / "own.txt"
    own.write_text("ICML 2026\nWe route tokens to sparse experts for faster inference.\n", encoding="utf-8")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([own], idx)
    cfg = settings.model_copy(update={"index": tmp_path / "idx"})
    assert corpus_to_refresh(cfg, idx, was_new=False) == []
    assert corpus_to_refresh(cfg, idx, was_new=True) == list(iter_paper_files(cfg.corpus))  # a new index: all
    assert len(corpus_to_refresh(cfg, idx, was_new=True)) == 2
    mine = cfg.model_copy(update={"corpus": [own, *cfg.corpus]})
    assert corpus_to_refresh(mine, idx, was_new=False) == [own]
