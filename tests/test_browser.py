"""The chat page in a real browser: Playwright driving Debian's Chromium (headless).

One browser for the module, and two pages served on free loopback ports: the page as users get
it by default (extractive answers) and the same page with an LLM endpoint (a fake OpenAI server
on 127.0.0.1 that streams its reply slowly, so the streaming can be watched). Screenshots go to
tests/artifacts/. Chromium comes from apt (`make browser`), never from `playwright install`.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import ARTIFACTS, free_port

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--disable-sync", "--no-first-run", "--disable-quic"]
TIMEOUT = 60_000  # ms; the machine may be busy
SYPE = "000_12a0d7b1c5c902c5#15"
STREAMED = ("SyPE generalizes rotary position embeddings by extending the rotation group to the symplectic "
            "group, which keeps relative positions while adding expressive power [1].")


def _launch(settings, assistant) -> tuple[str, object]:
    import assistant.page as web

    demo = web.build_app(settings, assistant)
    demo.queue(default_concurrency_limit=20)
    port = free_port()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, quiet=True,
                **web.page_options())
    return f"http://127.0.0.1:{port}/", demo


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run `make browser` (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield b
        b.close()


@pytest.fixture(scope="module")
def page_url(settings, assistant):
    url, demo = _launch(settings, assistant)
    yield url
    demo.close()


@pytest.fixture(scope="module")
def llm_page_url(settings, index):
    from assistant.answer.pipeline import Assistant

    from tests.fake_openai import FakeOpenAI, Reply

    with FakeOpenAI(models=["test-model"]) as fake:
        fake.default = Reply(text=STREAMED, chunk_size=6, chunk_delay=0.1)
        cfg = settings.model_copy(update={"llm": settings.llm.model_copy(
            update={"base_url": fake.base_url, "model": "test-model", "api_key": None, "timeout": 30})})
        url, demo = _launch(cfg, Assistant(cfg, index))
        yield url, fake
        demo.close()


def open_page(browser, url: str, width: int = 1400, height: int = 900):
    """A fresh page on ``url`` with the question box ready; records requests and page errors."""
    page = browser.new_page(viewport={"width": width, "height": height})
    page.set_default_timeout(TIMEOUT)
    page.requests_seen, page.errors_seen = [], []
    page.on("request", lambda r: page.requests_seen.append(r.url))
    page.on("pageerror", lambda e: page.errors_seen.append(str(e)))
    page.goto(url, wait_until="load")
    page.locator("#pa-question textarea").wait_for(state="visible")
    return page


def ask(page, question: str) -> None:
    page.locator("#pa-question textarea").fill(question)
    page.locator("#pa-ask").click()


def last_bot(page):
    return page.locator('#pa-chat [data-testid="bot"]').last


def shot(page, name: str) -> None:
    page.screenshot(path=str(ARTIFACTS / f"browser-{name}.png"), full_page=True)


def assert_clean(page) -> None:
    """No uncaught script errors, and every request the page made stayed on 127.0.0.1."""
    assert page.errors_seen == []
    hosts = {re.sub(r"^\w+://([^/]+)/.*$", r"\1", u) for u in page.requests_seen if not u.startswith(("data:", "blob:"))}
    assert {h.rsplit(":", 1)[0] for h in hosts} <= {"127.0.0.1"}, hosts


def test_question_answer_sources_and_citation_click(browser, page_url):
    page = open_page(browser, page_url)
    shot(page, "1-start")
    ask(page, "Which papers study personality in large language models?")
    sources = page.locator("#pa-sources details.pa-source")
    sources.nth(1).wait_for(state="attached")
    bot = last_bot(page)
    assert "2 papers in the index match" in bot.inner_text()
    assert page.locator("#pa-question textarea").input_value() == ""  # cleared for the next question
    # The first source is open with its cited sentence highlighted; the second is closed.
    first, second = sources.nth(0), sources.nth(1)
    assert first.get_attribute("open") is not None and second.get_attribute("open") is None
    # The two papers of the dev gold, in either order.
    heads = {first.locator("summary").inner_text(), second.locator("summary").inner_text()}
    assert {h.split()[-1] for h in heads} == {"000_12a0d7b1c5c902c5#14", "000_12a0d7b1c5c902c5#10"}
    # Clicking a source in the panel opens it: its abstract, the cited sentence in <mark>.
    second.locator("summary").click()
    mark = second.locator("mark")
    mark.wait_for(state="visible")
    cited = mark.inner_text().strip()
    assert len(cited) > 40 and cited in second.inner_text()
    assert cited[:60] in bot.inner_text()  # the answer quotes the highlighted sentence
    # Clicking the citation [1] in the answer brings source 1 into view, opened and highlighted.
    first.locator("summary").click()  # close it first
    assert first.get_attribute("open") is None
    bot.locator('a[href*="#pa-src-"]', has_text="1").first.click()
    page.wait_for_function("() => document.querySelector('#pa-sources details.pa-source').open")
    assert first.locator("mark").is_visible()
    assert first.evaluate("el => el.classList.contains('pa-flash')")
    shot(page, "2-answer-and-sources")
    assert_clean(page)
    page.close()


def test_citation_in_an_earlier_answer_opens_that_answers_source(browser, page_url):
    """The panel shows the latest answer's sources and keeps earlier answers' (collapsed): a citation
    in the first answer, clicked after a second answer, opens the first answer's source."""
    page = open_page(browser, page_url)
    ask(page, "How much does OmniMoE reduce inference latency compared to PEER?")
    page.locator("#pa-sources details.pa-source").first.wait_for(state="attached")
    first_src = page.locator("#pa-sources details.pa-source").first.get_attribute("id")
    ask(page, "Which papers study personality in large language models?")
    page.locator("#pa-sources details.pa-earlier").wait_for(state="attached")
    earlier = page.locator("#pa-sources details.pa-earlier")
    assert earlier.get_attribute("open") is None
    link = page.locator('#pa-chat [data-testid="bot"]').first.locator('a[href*="#pa-src-"]').first
    target = link.get_attribute("href").split("#")[1]
    assert target == first_src  # ids are unique to an answer: the old citation names its own source
    link.click()
    page.wait_for_function(f"() => document.getElementById('{target}').open")
    assert earlier.get_attribute("open") is not None
    assert page.locator(f"#{target}").evaluate("el => el.classList.contains('pa-flash')")
    assert_clean(page)
    page.close()


def test_math_renders_in_the_sources_panel_and_the_answer(browser, page_url):
    """``10.9$\\times$`` in an abstract is typeset by the KaTeX Gradio bundles (no network), in the
    sources panel and in the chat's quote; the stored quote keeps its LaTeX."""
    page = open_page(browser, page_url)
    ask(page, "How much does OmniMoE reduce inference latency compared to PEER?")
    panel = page.locator("#pa-sources details.pa-source").first
    panel.locator("mark .katex").first.wait_for(state="visible")
    assert panel.locator("mark .katex annotation").first.text_content().strip() == "\\times"
    assert "$\\times$" not in panel.inner_text() and "10.9" in panel.inner_text()
    bot = last_bot(page)
    bot.locator(".katex").first.wait_for(state="visible")
    assert "$\\times$" not in bot.inner_text()
    assert not bot.locator("li").count()  # one cited paper: not a bulleted list
    panel.scroll_into_view_if_needed()
    page.locator("#pa-sources").screenshot(path=str(ARTIFACTS / "browser-math-sources.png"))
    shot(page, "math")
    assert_clean(page)
    page.close()


def test_narrow_window_keeps_the_newest_question_and_answer_in_view(browser, page_url):
    """At 420 px a long answer is taller than the chat: its question and its start stay in view (the
    chat scrolls to the newest question), inside the chat's scroll box and inside the window."""
    page = open_page(browser, page_url, width=420, height=800)
    for n, q in enumerate(["What is SyPE?", "Which papers study personality in large language models?"], 1):
        ask(page, q)
        page.wait_for_function(f"""() => {{ const b = document.querySelectorAll('#pa-chat [data-testid="bot"]');
            return b.length >= {n} && b[b.length - 1].innerText.includes('[1]'); }}""")
    page.wait_for_function("""() => { const u = [...document.querySelectorAll('#pa-chat [data-testid="user"]')].pop();
        const box = document.querySelector('#pa-chat .bubble-wrap');
        return u && u.innerText.includes('personality') &&
               u.getBoundingClientRect().top >= box.getBoundingClientRect().top - 1; }""", timeout=20_000)
    geo = page.evaluate("""() => { const u = [...document.querySelectorAll('#pa-chat [data-testid="user"]')].pop();
        const b = [...document.querySelectorAll('#pa-chat [data-testid="bot"]')].pop();
        const box = document.querySelector('#pa-chat .bubble-wrap').getBoundingClientRect();
        return {u: u.getBoundingClientRect().top, b: b.getBoundingClientRect().top, top: box.top, bottom: box.bottom,
                vh: window.innerHeight}; }""")
    assert geo["top"] - 1 <= geo["u"] < geo["b"] < geo["bottom"], geo
    assert 0 <= geo["top"] and geo["b"] < geo["vh"], geo
    shot(page, "narrow-420")
    assert_clean(page)
    page.close()


def test_answer_streams_into_the_chat(browser, llm_page_url):
    page = open_page(browser, llm_page_url[0])
    # Record every text the answer bubble shows, as the page renders it (the chat may come after the question box: a
    # loaded machine once ran this before #pa-chat was in the page).
    page.locator("#pa-chat").wait_for(state="attached")
    page.evaluate("""() => {
      window.paSeen = [];
      new MutationObserver(() => {
        const bots = document.querySelectorAll('#pa-chat [data-testid="bot"]');
        const t = bots.length ? bots[bots.length - 1].innerText.trim() : "";
        if (t && window.paSeen[window.paSeen.length - 1] !== t) window.paSeen.push(t);
      }).observe(document.querySelector('#pa-chat'), {subtree: true, childList: true, characterData: true});
    }""")
    ask(page, "What is SyPE?")
    try:
        page.wait_for_function("() => window.paSeen.length >= 3", timeout=TIMEOUT)
        shot(page, "3-streaming")
    finally:
        page.locator("#pa-sources details.pa-source").first.wait_for(state="attached")
    seen = page.evaluate("() => window.paSeen")
    final = last_bot(page).inner_text()
    partial = [t for t in seen if STREAMED.startswith(" ".join(t.split())) and len(t) < len(STREAMED) - 10]
    assert len(partial) >= 2, seen  # the text grew piece by piece before the answer was complete
    assert " ".join(STREAMED.split()[:4]) in final and "[1]" in final
    panel = page.locator("#pa-sources")
    assert SYPE in panel.inner_text() and panel.locator("mark").first.is_visible()
    shot(page, "4-streamed-answer")
    assert_clean(page)
    page.close()


def test_related_work_tab(browser, page_url, assistant):
    from assistant.research.related import related_work

    draft = ("We corrupt the answers that large language models give and test whether LLM judges notice. "
             "Judges are often fooled by confident but wrong answers, so we propose an audit of reward models.")
    expected = related_work(assistant.retriever, assistant.sentences, text=draft, k=10)
    page = open_page(browser, page_url)
    page.get_by_role("tab", name="Related work").click()
    box = page.locator("#pa-related-text textarea")
    box.wait_for(state="visible")
    box.fill(draft)
    page.locator("#pa-related-go").click()
    rows = page.locator("#pa-related-out table tbody tr")
    rows.first.wait_for(state="visible")
    assert rows.count() == len(expected)
    assert len(expected) >= 1
    assert len(expected) <= 10
    assert expected[0].paper.id in rows.first.inner_text()
    shot(page, "5-related-work")
    # A specific query: fewer than 10 papers, each with a percentage, and the count of the others.
    q = "gradient-based certified unlearning with formal guarantees"
    specific = related_work(assistant.retriever, assistant.sentences, text=q, k=10)
    assert len(specific) >= 1  # the paper the query paraphrases clears the bar
    assert len(specific) < 10  # and some of the 10 considered do not
    assert "others were below the bar" in specific.headline()
    box.fill(q)
    page.locator("#pa-related-go").click()
    page.locator("#pa-related-out", has_text=specific.headline()).wait_for(state="visible")
    n = rows.count()
    assert n == len(specific)
    assert "000_12a0d7b1c5c902c5#6" in rows.first.inner_text()  # VRU
    for i in range(n):
        assert re.fullmatch(r"\d{1,3}%", rows.nth(i).locator("td").nth(2).inner_text().strip())
    shot(page, "5b-related-work-specific")
    assert_clean(page)
    page.close()


def test_blank_question_is_not_sent(browser, page_url):
    """A blank question makes no chat bubble and no warning: the box shows a hint instead (Enter and the
    Ask button alike), and its usual placeholder comes back with the next real question."""
    page = open_page(browser, page_url)
    assert "Ask about the indexed papers" in page.locator("#pa-chat").inner_text()  # the empty chat's hint
    box = page.locator("#pa-question textarea")
    box.fill("   ")
    box.press("Enter")  # Enter goes the same way as the Ask button
    page.wait_for_function("() => document.querySelector('#pa-question textarea').placeholder.startsWith('Type a question first')")
    box.fill("  ")
    page.locator("#pa-ask").click()
    page.wait_for_function("() => document.querySelector('#pa-question textarea').value === ''")
    page.wait_for_timeout(500)
    assert page.locator('#pa-chat [data-testid="user"]').count() == 0
    assert page.locator('#pa-chat [data-testid="bot"]').count() == 0
    assert "Ask about the indexed papers" in page.locator("#pa-chat").inner_text()  # still the empty chat
    ask(page, "Which papers study personality in large language models?")
    last_bot(page).wait_for(state="visible")
    page.wait_for_function("() => document.querySelector('#pa-question textarea').placeholder.startsWith('Ask a question')")
    assert page.locator('#pa-chat [data-testid="user"]').count() == 1
    assert_clean(page)
    page.close()


def test_images_in_a_reply_are_never_fetched(browser, llm_page_url):
    """Markdown image syntax or HTML in an LLM reply (or an abstract) is shown as text: the page loads
    nothing it names, not even from 127.0.0.1."""
    from tests.fake_openai import Reply

    url, fake = llm_page_url
    port = fake.base_url.split(":")[2].split("/")[0]
    fake.script(Reply(text=f"SyPE extends rotary embeddings [1]. ![chart](http://127.0.0.1:{port}/pixel.png) "
                           f'<img src="http://127.0.0.1:{port}/tag.png"> a < b [7]'))
    page = open_page(browser, url)
    ask(page, "What is SyPE?")
    page.locator("#pa-sources details.pa-source").first.wait_for(state="attached")
    bot = last_bot(page)
    page.wait_for_function("() => document.querySelector('#pa-chat').innerText.includes('Removed citations')")
    text = bot.inner_text()
    assert "![chart](" in text and "a < b" in text  # shown literally
    assert bot.locator("img").count() == 0
    assert not [u for u in page.requests_seen if "pixel.png" in u or "tag.png" in u]
    # [1] opens its source; the removed [7] is plain text, not a link to a source that is not shown.
    links = [a.inner_text() for a in bot.locator('a[href*="#pa-src-"]').all()]
    assert "1" in links and "7" not in links
    assert_clean(page)
    page.close()


def test_typing_while_an_answer_streams_is_kept_and_new_chat_stops_the_stream(browser, llm_page_url):
    from tests.fake_openai import Reply

    url, fake = llm_page_url
    slow = "SyPE extends rotary embeddings to the symplectic group [1]. " * 6  # about 3 s of stream
    fake.script(Reply(text=slow, chunk_size=6, chunk_delay=0.05))
    page = open_page(browser, url)
    box = page.locator("#pa-question textarea")
    ask(page, "What is SyPE?")
    page.wait_for_function("() => document.querySelector('#pa-chat').innerText.includes('SyPE extends')")
    box.press_sequentially("what dataset", delay=20)  # the next question, typed while the answer streams
    page.locator("#pa-sources details.pa-source").first.wait_for(state="attached")  # the answer is done
    assert box.input_value() == "what dataset"

    fake.script("What is SyPE?", Reply(text=slow, chunk_size=6, chunk_delay=0.05))  # the rewrite, then the answer
    asked = len(fake.requests)
    ask(page, "What is SyPE?")  # a follow-up: one rewrite request, then the streamed answer
    page.wait_for_function("() => document.querySelector('#pa-chat').innerText.split('SyPE extends').length > 7")
    page.get_by_role("button", name="New chat").click()
    page.wait_for_timeout(4000)  # past the end the stream would have had
    assert "SyPE extends" not in page.locator("#pa-chat").inner_text()  # the stream did not write the chat back
    fake.script(Reply(text="It is a positional encoding [1]."))
    before = len(fake.requests)
    ask(page, "What is SyPE?")
    last_bot(page).wait_for(state="visible")
    page.wait_for_function("() => document.querySelector('#pa-chat').innerText.includes('positional encoding')")
    assert before > asked and all(r.get("stream") for r in fake.requests[before:])  # no rewrite: no history left
    assert_clean(page)
    page.close()
