"""The Gradio app, launched for real on 127.0.0.1 and driven through gradio_client."""

import re
import time

import pytest

from tests.conftest import free_port


@pytest.fixture(scope="session")
def app_url(settings, assistant):
    import assistant.page as web

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

    from assistant.research.lists import list_papers

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
    assert md.count("\n| ") >= 2 and "000_12a0d7b1c5c902c5#6`" not in md  # the header and FIA, above the bar
    assert "004_9268713af81d21d3#9" in md  # FIA: multi-concept unlearning
    assert re.search(r"\d+ related papers?; \d+ others? w(?:ere|as) below the bar", md)
    # A paper nothing in the index is close to: said so, and the nearest 3 shown under that heading.
    md = client.predict("", "000_12a0d7b1c5c902c5#13", api_name="/related")
    assert "None is closely related (similarity under" in md and "the nearest are:" in md
    assert len(re.findall(r"^\| \d+ \|", md, re.M)) == 3
    # A long draft is read to its first 8,000 characters, and the page says so over the table.
    md = client.predict("We study machine unlearning for diffusion models. " * 400, "", api_name="/related")
    assert md.startswith("Related to your text:\n\n_Your text is 20,000 characters long; related work read its "
                         "first 7,999 (at most 8,000 per request)") and "\n| 1 |" in md


def test_exposed_bind_requires_auth(settings):
    import assistant.page as web

    cfg = settings.model_copy(update={"ui": settings.ui.model_copy(update={"host": "0.0.0.0", "auth": None})})
    with pytest.raises(ValueError, match="without authentication"):
        web.launch(cfg, ingest_default=False, block=False)


def _app_on_two_papers(settings, encoder, tmp_path, later_heading: str):
    """The page launched on an index of first.txt (two papers); later.txt (one paper under
    ``later_heading``) is written, not ingested. Returns ``(demo, its URL, the index, later.txt)``."""
    import assistant.page as web
    from assistant.answer.pipeline import Assistant
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    first, later = tmp_path / "first.txt", tmp_path / "later.txt"
    first.write_text("ICML 2026\nWe route tokens to sparse experts for faster inference.\n\n"
                     "We denoise images with diffusion transformers.\n", encoding="utf-8")
    later.write_text(f"{later_heading}\nWe route tokens to experts on phone NPUs for fast mixture-of-experts inference.\n",
                     encoding="utf-8")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([first], idx)
    cfg = settings.model_copy(update={"index": tmp_path / "idx", "ui": settings.ui.model_copy(update={"port": free_port()})})
    demo = web.build_app(cfg, Assistant(cfg, idx))
    demo.queue()
    demo.launch(server_name="127.0.0.1", server_port=cfg.ui.port, prevent_thread_lock=True, share=False)
    return demo, f"http://127.0.0.1:{cfg.ui.port}/", idx, later


def test_a_paper_ingested_while_the_app_runs_can_be_picked_for_related_work(settings, encoder, tmp_path):
    from gradio_client import Client

    from vectorstore.ingest import ingest

    demo, url, idx, later = _app_on_two_papers(settings, encoder, tmp_path, "ICML 2026")
    try:
        ingest([later], idx)
        md = Client(url, verbose=False).predict("", "later#1", api_name="/related")
        assert md.startswith("Related to **") and "(later#1)" in md.split("\n")[0] and "first#1" in md
    finally:
        demo.close()


def test_papers_another_process_ingests_while_the_app_runs_are_related_and_filterable(settings, encoder, tmp_path):
    """Seventh break-it run (#111-#114): with `serve` running, `paper-assistant ingest` in another process added
    papers; /related for a new paper id failed with Chroma's InternalError "Error finding id", and the filter
    choices (venue, year, source) kept the old ones even in a reloaded page: the server's Chroma kept the
    vectors it had loaded before the ingest."""
    import subprocess
    import sys

    from gradio_client import Client

    from tests.conftest import ROOT

    demo, url, _, later = _app_on_two_papers(settings, encoder, tmp_path, "NeurIPS 2025")
    try:
        client = Client(url, verbose=False)
        assert "first#2" in client.predict("", "first#1", api_name="/related")  # the server has read the vectors
        done = subprocess.run([sys.executable, "-m", "assistant", "ingest", str(later), "--index", str(tmp_path / "idx")],
                              capture_output=True, text=True, cwd=ROOT, timeout=300)
        assert done.returncode == 0, done.stderr
        time.sleep(1.1)  # the server looks for another process's writes at most once a second
        md = client.predict("", "later#1", api_name="/related")
        assert md.startswith("Related to **") and "(later#1)" in md.split("\n")[0] and "first#1" in md, md
        on_load = next(f.fn for f in demo.fns.values() if getattr(f.fn, "__name__", "") == "current_choices")
        venue, year, source, category, _ = on_load()
        assert "NeurIPS" in venue["choices"] and "2025" in year["choices"] and "later.txt" in source["choices"]
        assert category["choices"] == ["any"] and category["visible"] is False  # no paper has a category
    finally:
        demo.close()


def test_a_start_refreshes_only_the_corpus_files_an_own_index_holds(settings, encoder, tmp_path):
    """`serve`/`mcp` on a user's own index never add the bundled papers to it (nor undo a remove);
    a corpus file the index holds is refreshed."""
    from assistant.answer.service import corpus_to_refresh
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


@pytest.fixture
def guarded_url(settings, assistant):
    """The page behind a login, launched as `serve --auth` launches it; yields (url, its login throttle)."""
    import assistant.page as web
    from assistant.faces import web_guard
    from assistant.faces.web_guard import LoginGuard

    cfg = settings.model_copy(update={"ui": settings.ui.model_copy(update={"port": free_port(), "auth": "ann:s3cret-pw"})})
    demo = web.build_app(cfg, assistant)
    made = len(web_guard.THROTTLES)
    demo.launch(server_name="127.0.0.1", server_port=cfg.ui.port, prevent_thread_lock=True, share=False, quiet=True,
                auth=LoginGuard("ann", "s3cret-pw").check, **web.page_options())
    throttle = web_guard.THROTTLES[made]
    throttle.delay = 0.3
    yield f"http://127.0.0.1:{cfg.ui.port}", throttle
    demo.close()


def _post(url: str, data: bytes, content_type: str, cookie: str = "", headers: list | None = None,
          send: dict[str, str] | None = None) -> tuple[int, bytes]:
    """``(status, body)`` of a POST (``send``: more request headers); a server that answers before reading
    the whole body may close the connection under the client's feet, so the body is sent in pieces and a
    broken pipe ignored."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    conn.putrequest("POST", u.path)
    conn.putheader("Content-Type", content_type)
    conn.putheader("Content-Length", str(len(data)))
    if cookie:
        conn.putheader("Cookie", cookie)
    for name, value in (send or {}).items():
        conn.putheader(name, value)
    conn.endheaders()
    try:
        for i in range(0, len(data), 65536):
            conn.send(data[i : i + 65536])
    except (BrokenPipeError, ConnectionResetError):
        pass
    resp = conn.getresponse()
    out = resp.status, resp.read()
    if headers is not None:
        headers.extend(resp.getheaders())
    conn.close()
    return out


def test_the_login_page_names_no_file_and_guessing_is_slowed_one_attempt_at_a_time(guarded_url):
    """The login page embedded the API description (venues, years, file names); 100 guesses took 1.2 s."""
    import urllib.request

    url, throttle = guarded_url
    page = urllib.request.urlopen(url + "/", timeout=30).read().decode()
    assert "auth_required" in page and ".txt" not in page and "Source file" not in page
    for _ in range(6):
        time.sleep(throttle.retry_in("127.0.0.1"))  # the 6th waits 0.3 s after the 5th failure
        assert _post(url + "/login", b"username=ann&password=guess", "application/x-www-form-urlencoded")[0] == 400
    # Per address: this one waits 0.6 s now (the 6th failure doubled the 0.3 s wait), another not at all.
    assert len(throttle.failures["127.0.0.1"]) == 6 and throttle.wait_s("127.0.0.1") == 0.6
    assert throttle.wait_s("192.0.2.7") == 0
    # Before the wait is over, attempts are refused at once, the right password too, and nothing queues:
    # parallel guesses made the owner wait 30 s behind them.
    from concurrent.futures import ThreadPoolExecutor

    t0 = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        replies = list(pool.map(lambda pw: _post(url + "/login", f"username=ann&password={pw}".encode(),
                                                 "application/x-www-form-urlencoded"), ["guess"] * 7 + ["s3cret-pw"]))
    assert time.monotonic() - t0 < 0.5
    assert {code for code, _ in replies} == {429} and replies[-1][1] == (b"too many failed logins from this "
                                                                           b"address: try again in 1 s")
    assert len(throttle.failures["127.0.0.1"]) == 6  # refused attempts are not checked, nor counted
    time.sleep(throttle.retry_in("127.0.0.1") + 0.05)
    code, body = _post(url + "/login", b"username=ann&password=s3cret-pw", "application/x-www-form-urlencoded")
    assert code == 200 and b"success" in body and "127.0.0.1" not in throttle.failures  # a success clears it


def test_a_guesser_naming_another_forwarded_address_each_time_is_still_slowed(guarded_url):
    """Seventh break-it run (#141): uvicorn took X-Forwarded-For as the client's address for any request from
    127.0.0.1, so a guesser sending another address each time was never slowed. The throttle counts the
    connection's own address; no proxy is trusted unless FORWARDED_ALLOW_IPS names one."""
    url, throttle = guarded_url
    codes = [_post(url + "/login", b"username=ann&password=guess", "application/x-www-form-urlencoded",
                   send={"X-Forwarded-For": f"203.0.113.{i}"})[0] for i in range(7)]
    assert codes == [400] * 5 + [429] * 2, codes  # the 6th came before the 0.3 s wait after the 5th was over
    assert list(throttle.failures) == ["127.0.0.1"] and len(throttle.failures["127.0.0.1"]) == 5


def test_every_spelling_of_the_login_route_is_throttled(guarded_url):
    """Hostile round (#35, high): after 5 wrong passwords ``POST /login`` answered 429, but ``/login/`` and
    ``/login%2F`` still checked the password (40 guesses in 0.61 s) and the right one there logged in."""
    url, throttle = guarded_url
    variants = ["/login/", "/login%2F", "/login%252F", "//login", "/login/"]
    codes = [_post(url + v, b"username=ann&password=guess", "application/x-www-form-urlencoded")[0] for v in variants]
    # Gradio serves /login and /login/; the other spellings are 400 or 404 there, and a 400 counts as a failure.
    assert codes[0] == 400 and len(throttle.failures["127.0.0.1"]) >= 2, codes
    fails = len(throttle.failures["127.0.0.1"])
    for _ in range(6 - fails):
        time.sleep(throttle.retry_in("127.0.0.1"))
        assert _post(url + "/login/", b"username=ann&password=guess", "application/x-www-form-urlencoded")[0] == 400
    # Now every spelling is refused before the password is read, the right password too.
    for v in ("/login", "/login/", "/login%2F", "//login"):
        code, body = _post(url + v, b"username=ann&password=s3cret-pw", "application/x-www-form-urlencoded")
        assert code == 429 and body.startswith(b"too many failed logins"), (v, code, body)
    time.sleep(throttle.retry_in("127.0.0.1") + 0.05)
    assert _post(url + "/login/", b"username=ann&password=s3cret-pw", "application/x-www-form-urlencoded")[0] == 200


def test_an_oversized_body_and_any_upload_are_refused_with_a_short_reply(guarded_url):
    """A 3.5 MB malformed chat history came back as a 17.8 MB error; uploads of any size were accepted."""
    url, _ = guarded_url
    code, body = _post(url + "/gradio_api/queue/join", b'{"data": ["' + b"x" * 3_000_000 + b'"]}', "application/json")
    assert code == 413 and body == b"request body over 2 MB: refused"
    headers: list = []
    assert _post(url + "/login", b"username=ann&password=s3cret-pw", "application/x-www-form-urlencoded",
                 headers=headers)[0] == 200
    cookie = "; ".join(v.split(";")[0] for k, v in headers if k.lower() == "set-cookie")
    boundary = "b0undary"
    upload = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n"
              f"Content-Type: text/plain\r\n\r\n{'y' * 20_000}\r\n--{boundary}--\r\n").encode()
    code, body = _post(url + "/gradio_api/upload", upload, f"multipart/form-data; boundary={boundary}", cookie)
    assert (code, body) == (404, b"not found")  # closed: the page takes no file


def _post_chunked(url: str, data: bytes, content_type: str) -> tuple[int, bytes]:
    """``(status, body)`` of a POST whose body is sent chunked (no Content-Length), 64 kB a chunk; a server
    that answers before reading it all may close the connection under the client's feet."""
    import http.client
    from urllib.parse import urlsplit

    u = urlsplit(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
    try:
        conn.request("POST", u.path, body=(data[i : i + 65536] for i in range(0, len(data), 65536)),
                     headers={"Content-Type": content_type}, encode_chunked=True)
    except (BrokenPipeError, ConnectionResetError):
        pass
    resp = conn.getresponse()
    out = resp.status, resp.read()
    conn.close()
    return out


def test_unknown_api_routes_a_chunked_body_over_the_cap_and_small_uploads_are_refused(settings, assistant, capfd):
    """Hostile round (#35, 9), the page launched as `serve` launches it (no login on loopback):
    ``POST /gradio_api/call/nosuch`` answered 500 and logged a 50-line traceback each time; a chunked body of
    3 MB got 400 "error parsing the body", not the 413 a body over 2 MB gets; uploads of 1 kB were taken
    without limit (200 in 3 s, each kept), though the page has no upload."""
    import os
    from pathlib import Path

    import assistant.page as web

    port = free_port()
    demo = web.build_app(settings.model_copy(update={"ui": settings.ui.model_copy(update={"port": port})}), assistant)
    demo.queue(default_concurrency_limit=20)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    url = f"http://127.0.0.1:{port}"
    uploads = Path(demo.GRADIO_CACHE)
    try:
        capfd.readouterr()
        for path in ("/gradio_api/call/nosuch", "/gradio_api/call/nosuch/", "/gradio_api/call/v2/nosuch"):
            code, body = _post(url + path, b'{"data": []}', "application/json")
            assert (code, body) == (404, b"not found"), (path, code, body[:300])
        assert _post(url + "/gradio_api/call/ask", b'{"data": ["What is SyPE?"]}', "application/json")[0] == 200
        logged = capfd.readouterr().err
        assert "Traceback" not in logged and len(logged.splitlines()) <= 3, logged[-2000:]

        code, body = _post_chunked(url + "/gradio_api/queue/join", b'{"data": ["' + b"x" * 3_000_000 + b'"]}',
                                   "application/json")
        assert (code, body) == (413, b"request body over 2 MB: refused")
        code, _ = _post_chunked(url + "/gradio_api/queue/join", b'{"data": ["hi"], "fn_index": 0}', "application/json")
        assert code != 413  # a small chunked body is read as before

        before = set(uploads.rglob("*")) if uploads.is_dir() else set()
        boundary = "b0undary"
        upload = (f"--{boundary}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"a.txt\"\r\n"
                  f"Content-Type: text/plain\r\n\r\n{os.urandom(250).hex()}\r\n--{boundary}--\r\n").encode()
        for path in ("/gradio_api/upload", "/gradio_api/upload/"):
            code, body = _post(url + path, upload, f"multipart/form-data; boundary={boundary}")
            assert (code, body) == (404, b"not found"), (path, code, body[:300])
        after = set(uploads.rglob("*")) if uploads.is_dir() else set()
        assert not [p for p in after - before if p.name == "a.txt"]
    finally:
        demo.close()


def test_unknown_run_and_api_names_and_a_bad_fn_index_are_refused_without_a_traceback(settings, assistant, capfd):
    """Hostile round (#35, F9): ``POST /gradio_api/run/NAME`` and ``/gradio_api/api/NAME`` for a NAME the page has
    not, and ``/gradio_api/queue/join`` (or ``run/ask``) with an ``fn_index`` it has not, answered 500 and logged a
    traceback each time. Now 404 (an unknown name) and 422 (an unknown fn_index), nothing logged; known ones, and a
    body sent chunked (read ahead and handed on), work as before."""
    import json

    import assistant.page as web

    port = free_port()
    demo = web.build_app(settings.model_copy(update={"ui": settings.ui.model_copy(update={"port": port})}), assistant)
    demo.queue(default_concurrency_limit=20)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    url = f"http://127.0.0.1:{port}"
    ask = next(i for i, f in demo.fns.items() if f.api_name == "ask")
    try:
        capfd.readouterr()
        for path in ("/gradio_api/run/nosuch", "/gradio_api/run/nosuch/", "/gradio_api/api/nosuch",
                     "/gradio_api/api/nosuch/"):
            code, body = _post(url + path, b'{"data": ["What is SyPE?"]}', "application/json")
            assert (code, body) == (404, b"not found"), (path, code, body[:300])
        for path, extra in (("/gradio_api/queue/join", ', "session_hash": "s1"'), ("/gradio_api/run/ask", "")):
            for bad in (999, -5, '"7777"'):
                code, body = _post(url + path, f'{{"data": [], "fn_index": {bad}{extra}}}'.encode(), "application/json")
                assert (code, json.loads(body)) == (422, {"detail": f"no endpoint has fn_index {str(bad).strip(chr(34))}"})
            # Third hostile round: a body Gradio's own reading crashed on ("fn_index": 1e400 was a 500 and a traceback).
            # Fourth: a known fn_index given fewer input values than it takes ("0", true) logged a traceback each.
            for invalid in (f'{{"data": [], "fn_index": 1e400{extra}}}', '{"data": [], "fn_index": NaN}', "[1, 2",
                            f'{{"data": [], "fn_index": "{ask}"{extra}}}', f'{{"data": [], "fn_index": {ask}{extra}}}'):
                code, body = _post(url + path, invalid.encode(), "application/json")
                assert (code, json.loads(body)) == (422, {"detail": "the request body is no valid call"}), (path, invalid)
        code, body = _post(url + "/gradio_api/run/ask", b'{"data": ["What is SyPE?"]}', "application/json")
        assert code == 200 and "SyPE" in json.dumps(json.loads(body)["data"])
        code, body = _post(url + "/gradio_api/api/nosuch", f'{{"data": ["What is SyPE?"], "fn_index": {ask}}}'.encode(),
                           "application/json")  # Gradio calls the fn_index given, whatever the name
        assert code == 200 and "SyPE" in json.dumps(json.loads(body)["data"])
        code, body = _post_chunked(url + "/gradio_api/queue/join", f'{{"data": ["What is SyPE?"], "fn_index": {ask}, '
                                   '"session_hash": "s2"}'.encode(), "application/json")
        assert code == 200 and "event_id" in json.loads(body)
        logged = capfd.readouterr().err
        assert "Traceback" not in logged and len(logged.splitlines()) <= 3, logged[-2000:]
    finally:
        demo.close()


def test_a_chunked_login_form_over_the_cap_gets_413_and_counts_no_failure(guarded_url):
    """Hostile round (#35, F17): a login form over 2 MB sent chunked (no Content-Length) got Starlette's 400
    "Field exceeded maximum size of 1024KB", counted by the throttle as a failed login, where the same form with
    a length got 413. Now 413 either way, and a small chunked login is read as before."""
    url, throttle = guarded_url
    form = b"username=ann&password=" + b"a" * 3_000_000
    assert _post_chunked(url + "/login", form, "application/x-www-form-urlencoded") == (
        413, b"request body over 2 MB: refused")
    assert _post(url + "/login", form, "application/x-www-form-urlencoded") == (413, b"request body over 2 MB: refused")
    assert "127.0.0.1" not in throttle.failures
    code, body = _post_chunked(url + "/login", b"username=ann&password=s3cret-pw", "application/x-www-form-urlencoded")
    assert code == 200 and b"success" in body


def test_the_login_throttle_waits_longer_after_each_failure_past_the_free_ones():
    from collections import deque

    from assistant.faces.web_guard import LoginThrottle

    throttle = LoginThrottle(None, free_failures=2, window_s=60, delay_s=1, max_delay_s=8)
    throttle.failures["a"] = deque([0.0, 1.0])
    assert throttle.wait_s("a", now=2.0) == 1 and throttle.wait_s("b", now=2.0) == 0
    throttle.failures["a"].extend([2.0, 3.0, 4.0, 5.0])
    assert throttle.wait_s("a", now=6.0) == 8  # 1, 2, 4, 8: capped
    assert throttle.retry_in("a", now=6.0) == 7 and throttle.retry_in("a", now=13.5) == 0  # 8 s after the last
    assert throttle.wait_s("a", now=100.0) == 0  # the window has passed


def test_the_page_links_a_sources_code_and_filters_papers_with_code(app_url):
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    _, history, panel = client.predict("Which papers release code?", [], api_name="/chat")
    # The link MapGR's abstract gives, as text of the panel: nothing fetches it (the browser tests check that
    # the page requests nothing but 127.0.0.1).
    assert '<a href="https://github.com/skyshoumeng/MapGR" target="_blank" rel="noopener noreferrer">' in panel
    assert "9 papers in the index match" in str(history[-1]["content"])
    _, history, panel = client.predict("Which papers are about machine unlearning?", [], has_code=True, api_name="/chat")
    text = str(history[-1]["content"])
    assert "1 paper matches with code:" in text and "FIA" in text and "VRU" not in text  # VRU links no code


def test_the_map_says_it_is_drawing_on_first_open(app_url):
    """The map tab's first open took 4 s with no progress text."""
    from gradio_client import Client

    import assistant.research.paper_map as paper_map

    paper_map._CACHE.clear()
    job = Client(app_url, verbose=False).submit("", api_name="/map")
    job.result(timeout=120)
    outputs = job.outputs()
    assert outputs[0][1].startswith("Drawing the map of 38 papers: layout, clusters and their keywords")
    assert outputs[-1][1].startswith("**38 papers**")
    again = Client(app_url, verbose=False).submit("", api_name="/map")
    again.result(timeout=120)
    assert len(again.outputs()) == 1  # drawn already: no progress line


def test_a_script_holds_a_conversation_over_http_and_new_chat_ends_it(app_url):
    """Over the HTTP API a script could not start a fresh conversation except with a new client."""
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    _, chat, _ = client.predict("What is VideoLoom?", [], api_name="/chat")
    _, chat, _ = client.predict("and what dataset?", chat, api_name="/chat")
    assert "LoomData-8.7k" in str(chat[-1]["content"])
    client.predict(api_name="/new_chat")
    _, chat, _ = client.predict("and what dataset?", [], api_name="/chat")
    assert "refers to an earlier answer, and there is none yet" in str(chat[-1]["content"])


def test_the_related_tab_takes_a_count_and_a_bar(app_url):
    """The Related-work tab had no control for how many papers or how similar."""
    from gradio_client import Client

    client = Client(app_url, verbose=False)
    everything = client.predict("", "000_12a0d7b1c5c902c5#6", 4, "0% (show all)", api_name="/related")
    assert len(re.findall(r"^\| \d+ \|", everything, re.M)) == 4
    strict = client.predict("", "000_12a0d7b1c5c902c5#6", 10, "70%", api_name="/related")
    assert strict.startswith("Related to **VRU**") and "similarity under 70%" in strict


def test_a_malformed_chat_history_gets_no_internals_and_a_bounded_log(settings, assistant, capfd):
    """Eighth break-it run (#98, #99): /chat given 6,000 messages of the wrong shape answered with pydantic's
    report of each ("6000 validation errors for ChatbotDataMessages …") and logged 18,000 lines; a call with
    2 of its inputs answered with Gradio's component reprs and memory addresses. Launched as `serve`
    launches it, the client learns only that the call failed; the log keeps one line for the malformed
    history and one bounded traceback for the call that misses inputs."""
    import json
    import urllib.request

    from gradio_client import Client
    from gradio_client.exceptions import AppError

    import assistant.page as web
    from assistant.faces.web_log import MAX_LOGGED_ERROR

    port = free_port()
    demo = web.build_app(settings.model_copy(update={"ui": settings.ui.model_copy(update={"port": port})}), assistant)
    demo.queue(default_concurrency_limit=20)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    try:
        capfd.readouterr()
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        junk = [{"role": "user", "content": ["not", "text", i]} for i in range(6000)]
        with pytest.raises(AppError) as err:
            client.predict("What is SyPE?", junk, api_name="/chat")
        said = str(err.value)  # Gradio's own words for "the app failed", nothing of the request
        assert "has not enabled verbose error reporting" in said and len(said) < 200, said[:300]
        assert "validation error" not in said and "ChatbotDataMessages" not in said
        # Second hostile round (#35, F16): the client's malformed history is one log line, no traceback.
        logged = capfd.readouterr().err
        refused = [line for line in logged.splitlines() if line.startswith("request refused: its inputs are not")]
        assert "Traceback" not in logged and len(refused) == 1 and len(refused[0]) < 400, logged[-2000:]
        code, body = _post(f"http://127.0.0.1:{port}/gradio_api/call/chat", b'{"data": ["hi", []]}', "application/json")
        assert code == 200, body[:300]  # an event id: its stream carries the error
        event = json.loads(body)["event_id"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/gradio_api/call/chat/{event}", timeout=30) as r:
            stream = r.read().decode()
        assert stream.split("\n")[:2] == ["event: error", 'data: {"error": null}'], stream[:300]  # no reprs, no text
        logged = capfd.readouterr().err
        assert "Traceback" in logged and len(logged) < 3 * (MAX_LOGGED_ERROR + 500), len(logged)
        assert "didn't receive enough input values (needed: 8, got: 2)" in logged  # the log keeps why
        # The page goes on answering.
        _, chat = client.predict("What is SyPE?", [], api_name="/chat")[:2]
        assert "Symplectic Positional Embeddings" in json.dumps(chat)
    finally:
        demo.close()


def test_the_configured_key_typed_into_an_input_is_masked_in_the_page_s_errors(settings, assistant, monkeypatch,
                                                                                capfd):
    """Ninth hostile round: the user's own key sent as the year filter came back in Gradio's error ("Value: … is
    not in the list of choices"), and as a paper to relate in the page's own error line. Launched as `serve`
    launches it, every error reply masks the configured secrets; answers are not touched."""
    import json
    import urllib.error
    import urllib.request

    from gradio_client import Client
    from gradio_client.exceptions import AppError

    import assistant.page as web

    key = "sk-hostile9-Zq7Wm2Xc4Vb8Nk3L"
    monkeypatch.setenv("OPENAI_API_KEY", key)
    port = free_port()
    demo = web.build_app(settings.model_copy(update={"ui": settings.ui.model_copy(update={"port": port})}), assistant)
    demo.queue(default_concurrency_limit=20)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    try:
        code, body = _post(f"http://127.0.0.1:{port}/gradio_api/call/chat",
                           json.dumps({"data": ["What is SyPE?", [], [], "any", key, "any", False, "any"]}).encode(),
                           "application/json")
        assert code == 200, body[:300]
        event = json.loads(body)["event_id"]
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/gradio_api/call/chat/{event}", timeout=60) as r:
            stream = r.read().decode()
        assert stream.startswith("event: error") and "not in the list of choices" in stream, stream[:300]
        assert key not in stream and "***" in stream, stream[:300]
        logged = capfd.readouterr().err  # a value no dropdown offers: one line, not a traceback (a tenth round)
        assert "Traceback" not in logged and "request refused: its inputs are not what the page takes" in logged
        # A twelfth round: a long key glued to other text as the chat history; pydantic's report keeps 24 characters
        # either end of a value, 18 of them the key's, too few to be known: the log line is made from the whole value.
        long_key = "sk-proj-" + "Qm7Zx2Lp9Wv4Tb8Nc3Rk6Hd1Jf5Gs0Ya" * 2
        monkeypatch.setenv("OPENAI_API_KEY", long_key)
        code, body = _post(f"http://127.0.0.1:{port}/gradio_api/call/chat", json.dumps(
            {"data": ["What is SyPE?", f"aaaaaa{long_key}bbbbb", None, "any", "any", "any", False, "any"]}).encode(),
            "application/json")
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/gradio_api/call/chat/{json.loads(body)['event_id']}",
                                    timeout=60) as r:
            r.read()
        logged = capfd.readouterr().err
        assert "request refused" in logged and not any(long_key[i:i + 8] in logged for i in range(len(long_key) - 7)), \
            logged[-1500:]
        monkeypatch.setenv("OPENAI_API_KEY", key)
        # A thirteenth round: a stream of an event or session Gradio holds nothing for broke its reply and logged 60
        # lines ("Exception in ASGI application"). 404, nothing logged.
        for path in ("/gradio_api/call/chat/nosuch", "/gradio_api/call/v2/chat/nosuch", "/gradio_api/queue/data?session_hash=x"):
            with pytest.raises(urllib.error.HTTPError) as missing:
                urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30)
            assert missing.value.code == 404, path
        assert "Traceback" not in capfd.readouterr().err
        client = Client(f"http://127.0.0.1:{port}/", verbose=False)
        with pytest.raises(AppError) as err:
            client.predict("What is SyPE?", [], [], "any", key, api_name="/chat")
        assert key not in str(err.value) and "***" in str(err.value), str(err.value)[:300]
        shown = client.predict("", f"{key}#3", 10, api_name="/related")  # an unknown paper: the page's own line
        assert shown.startswith("⚠") and key not in shown and "***" in shown, shown[:300]
        _, chat = client.predict("What is SyPE?", [], api_name="/chat")[:2]  # answers pass whole
        assert "Symplectic Positional Embeddings" in json.dumps(chat)
    finally:
        demo.close()
