"""Browser tests of the issue-6 workflows: list mode, export download, paper map.

Headless Debian Chromium (/usr/bin/chromium) driven by Playwright, against the real app on 127.0.0.1.
Screenshots go to tests/artifacts/.
"""

import re
import shutil

import pytest

from tests.conftest import ARTIFACTS, free_port
from tests.conversations import CONVERSATIONS

pytestmark = pytest.mark.browser

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
LIST_Q = "Which papers study personality in large language models?"
GOLD = {"000_12a0d7b1c5c902c5#14", "000_12a0d7b1c5c902c5#10"}


@pytest.fixture(scope="module")
def url(settings, assistant):
    import assistant.page as web

    port = free_port()
    demo = web.build_app(settings, assistant)
    demo.queue(default_concurrency_limit=8)
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False, css=web.CSS)
    yield f"http://127.0.0.1:{port}/"
    demo.close()


@pytest.fixture(scope="module")
def browser():
    import os

    from playwright.sync_api import sync_playwright

    if not os.path.exists(CHROMIUM):
        pytest.fail("chromium is not installed: apt-get install -y chromium (or `make browser`)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                              args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        yield b
        b.close()


@pytest.fixture
def page(browser, url):
    ctx = browser.new_context(viewport={"width": 1400, "height": 1000}, accept_downloads=True)
    pg = ctx.new_page()
    pg.goto(url, wait_until="load")
    pg.wait_for_selector("#pa-question textarea", timeout=30_000)
    yield pg
    ctx.close()


def shot(page, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / name), full_page=True)


def run_list(page) -> None:
    page.locator("#pa-list-mode input[type=checkbox]").check()
    page.wait_for_selector("#pa-list-go", state="visible")
    assert not page.locator("#pa-ask").is_visible()
    page.fill("#pa-question textarea", LIST_Q)
    page.click("#pa-list-go")
    page.wait_for_selector("#pa-sources .pa-list-count", timeout=60_000)


def test_list_mode_shows_count_evidence_and_note(page):
    run_list(page)
    count = page.inner_text("#pa-sources .pa-list-count")
    listed = page.locator("#pa-sources details.pa-source").evaluate_all("els => els.map(e => e.id.replace('pa-listed-', ''))")
    assert count.startswith(f"{len(listed)} papers found") and set(listed) == GOLD
    page.locator("#pa-sources details.pa-source summary").first.click()
    assert page.locator("#pa-sources details.pa-source mark").first.is_visible()
    bubble = page.locator("#pa-chat").inner_text()
    assert "2 papers" in bubble and "000_12a0d7b1c5c902c5#14" in bubble
    page.locator("#pa-sources .pa-list-note summary").click()
    assert "62%" in page.inner_text("#pa-sources .pa-list-note")
    shot(page, "workflow_list_mode.png")


def test_export_downloads_bibtex_and_markdown(page, tmp_path):
    from assistant.research.export import read_bibtex

    run_list(page)
    bib_btn = page.locator("#pa-export-bib")
    page.wait_for_function("() => { const b = document.querySelector('#pa-export-bib');"
                           " return b && !b.disabled && /BibTeX \\(2\\)/.test(b.innerText); }", timeout=30_000)
    with page.expect_download() as dl:
        bib_btn.click()
    path = tmp_path / "papers.bib"
    dl.value.save_as(path)
    back = read_bibtex(path.read_text())
    assert {r["paperid"] for r in back} == GOLD and all(r["year"] == "2026" for r in back)
    with page.expect_download() as dl2:
        page.locator("#pa-export-md").click()
    md = tmp_path / "papers.md"
    dl2.value.save_as(md)
    assert all(pid in md.read_text() for pid in GOLD)
    shot(page, "workflow_export.png")


def test_paper_map_tab_draws_all_papers_and_highlights_hits(page):
    page.get_by_role("tab", name="Paper map").click()
    page.wait_for_selector("#pa-map-plot .js-plotly-plot", timeout=60_000)
    page.wait_for_function("() => document.querySelectorAll('#pa-map-plot .scatterlayer .point').length >= 38",
                           timeout=30_000)
    assert page.locator("#pa-map-plot .scatterlayer .point").count() == 38
    # Every paper labelled, and no two labels print on each other (boxes as the browser drew them).
    boxes = page.evaluate("""() => [...document.querySelectorAll('#pa-map-plot .annotation-text')]
        .map(e => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom, e.textContent]; })""")
    assert len(boxes) == 38
    clashes = [(a[4], b[4]) for i, a in enumerate(boxes) for b in boxes[i + 1:]
               if min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1]
    assert clashes == []
    page.fill("#pa-map-question textarea", LIST_Q)
    page.click("#pa-map-go")
    page.wait_for_function("() => document.querySelectorAll('#pa-map-plot .scatterlayer .point').length === 40",
                           timeout=60_000)
    legend = page.locator("#pa-map-plot .legend").first.text_content()
    assert "hits of the question (2)" in legend and re.search(r"personality", legend)
    assert "Highlighted (★): 2 papers" in page.inner_text("#pa-map-info")
    shot(page, "workflow_map.png")


def test_chat_answer_exports_its_sources_and_enter_lists_in_list_mode(page, tmp_path):
    from assistant.research.export import read_bibtex

    page.fill("#pa-question textarea", "What is SyPE?")
    page.click("#pa-ask")
    page.wait_for_function("() => { const b = document.querySelector('#pa-export-bib');"
                           " return b && !b.disabled && /BibTeX \\(\\d+\\)/.test(b.innerText); }", timeout=60_000)
    with page.expect_download() as dl:
        page.locator("#pa-export-bib").click()
    dl.value.save_as(tmp_path / "a.bib")
    assert read_bibtex((tmp_path / "a.bib").read_text())[0]["paperid"] == "000_12a0d7b1c5c902c5#15"
    # Enter in list mode lists instead of answering.
    page.locator("#pa-list-mode input[type=checkbox]").check()
    page.fill("#pa-question textarea", LIST_Q)
    page.press("#pa-question textarea", "Enter")
    page.wait_for_selector("#pa-sources .pa-list-count", timeout=60_000)
    assert page.inner_text("#pa-sources .pa-list-count").startswith("2 papers found")
    page.wait_for_function("() => /BibTeX \\(2\\)/.test(document.querySelector('#pa-export-bib').innerText)",
                           timeout=60_000)
    # New chat forgets the list as well: nothing left to export.
    page.get_by_role("button", name="New chat").click()
    page.wait_for_function("() => document.querySelector('#pa-export-bib').disabled", timeout=30_000)
    assert page.locator("#pa-sources .pa-list-count").count() == 0
    page.wait_for_function("() => document.querySelector('#pa-export-bib').innerText.trim() === 'BibTeX'",
                           timeout=30_000)


def test_source_filter_limits_the_answer_to_one_file(page):
    page.locator("#pa-filters").get_by_text("Filters").first.click()
    page.locator("#pa-filter-source input").click()
    page.get_by_role("option", name="004_9268713af81d21d3.txt").click()
    page.fill("#pa-question textarea", "Which papers use reinforcement learning to train language models?")
    page.click("#pa-ask")
    page.wait_for_selector("#pa-sources details.pa-source", timeout=60_000)
    ids = [c.inner_text() for c in page.locator("#pa-sources details.pa-source summary code").all()]
    shot(page, "workflow-filtered-answer.png")
    assert ids and all(i.startswith("004_9268713af81d21d3#") for i in ids), ids


def test_the_chats_buttons_never_cover_a_message_and_the_source_filter_shows_its_whole_value(page):
    """The "Chat" chip and icons overlapped the top message once the chat scrolled; the Source dropdown
    cut its value."""
    for q in ("What is SyPE?", "What is OmniMoE?", "What is VideoLoom?"):
        page.fill("#pa-question textarea", q)
        page.click("#pa-ask")
        page.wait_for_function(f"() => document.querySelector('#pa-chat').innerText.includes({q!r})", timeout=60_000)
    page.wait_for_timeout(1500)
    overlaps = page.evaluate("""() => {
      const chat = document.querySelector('#pa-chat');
      const box = e => e.getBoundingClientRect();
      const scroller = [...chat.querySelectorAll('*')].find(e => e.scrollHeight > e.clientHeight + 20
          && /auto|scroll/.test(getComputedStyle(e).overflowY));
      const hits = [];
      let scrolled = false;
      // Every scroll position, 40 px apart: a floating chip or toolbar covers text at some of them.
      for (let y = 0; scroller && y <= scroller.scrollHeight - scroller.clientHeight + 40; y += 40) {
        scroller.scrollTop = y;
        scrolled = scrolled || scroller.scrollTop > 0;
        const view = box(scroller);
        const covers = [...chat.querySelectorAll('[data-testid="block-label"], .top-panel, .icon-button-wrapper.top-panel')]
            .filter(c => box(c).width > 0);
        const msgs = [...chat.querySelectorAll('.message')].map(box).filter(r => r.bottom > view.top && r.top < view.bottom);
        hits.push(covers.reduce((n, c) => n + msgs.filter(m => { const r = box(c);
            return Math.min(r.right, m.right) - Math.max(r.left, m.left) > 1
                && Math.min(r.bottom, m.bottom, view.bottom) - Math.max(r.top, m.top, view.top) > 1; }).length, 0));
      }
      return {scrolled, labels: chat.querySelectorAll('[data-testid="block-label"]').length, hits};
    }""")
    assert overlaps["scrolled"] and overlaps["labels"] == 0 and sum(overlaps["hits"]) == 0, overlaps
    shot(page, "workflow_chat_scrolled.png")
    page.locator("#pa-filters").get_by_text("Filters").click()
    page.locator("#pa-filter-source input").click()
    page.get_by_role("option", name="004_9268713af81d21d3.txt").click()
    width = page.evaluate("() => { const e = document.querySelector('#pa-filter-source input');"
                          " return [e.scrollWidth, e.clientWidth, e.value]; }")
    assert width[2] == "004_9268713af81d21d3.txt" and width[0] <= width[1], width


def test_a_question_asked_while_an_answer_is_still_coming_is_asked_after_it(page):
    """Ask was ignored while the previous answer was still being written (Gradio's default for a click
    is to drop it while the event is pending): the question stayed in the box and nothing happened."""
    first, second = "What is SyPE?", "What is OmniMoE?"
    page.fill("#pa-question textarea", first)
    page.click("#pa-ask")
    page.wait_for_function(f"() => document.querySelector('#pa-chat').innerText.includes({first!r})", timeout=60_000)
    page.fill("#pa-question textarea", second)  # at once, while the first answer is pending
    page.click("#pa-ask")
    page.wait_for_function(f"() => document.querySelector('#pa-chat').innerText.includes({second!r})", timeout=60_000)
    page.wait_for_function("() => document.querySelector('#pa-chat').innerText.split('OmniMoE').length > 2",
                           timeout=60_000)  # the second answer names OmniMoE too
    text = page.inner_text("#pa-chat")
    assert text.index(first) < text.index(second) and "SyPE" in text[len(first):text.index(second)]


@pytest.mark.parametrize("name", list(CONVERSATIONS))
def test_the_issue_33_conversations_compare_keep_their_paper_and_quote_syntheses_in_the_page(page, name):
    """Issue 33 (items 1–3) in the page's chat, no LLM: the same answers as `chat` (tests/test_cli.py) — a
    comparison side by side, "another" and "they" as a researcher means them, a synthesis quoted with the line
    saying a written one needs an LLM."""
    turns, checks = CONVERSATIONS[name]
    bubbles = []
    for i, question in enumerate(turns):
        page.fill("#pa-question textarea", question)
        page.click("#pa-ask")
        # An answer is final when its citations link to its sources (assistant.page.render.link_citations).
        page.wait_for_function(f"""() => {{ const b = document.querySelectorAll('#pa-chat [data-testid="bot"]');
            return b.length === {i + 1} && b[{i}].querySelector('a[href*="#pa-src-"]'); }}""", timeout=90_000)
        bubbles.append(page.locator('#pa-chat [data-testid="bot"]').nth(i).inner_text())
        cited = [c.inner_text() for c in page.locator("#pa-sources .pa-sources > details.pa-source summary code").all()]
        for turn, shows, lacks, expected in checks:
            if turn != i:
                continue
            for words in shows:
                assert words in bubbles[i], (name, i, words, bubbles[i])
            for words in lacks:
                assert words not in bubbles[i], (name, i, words, bubbles[i])
            assert cited == expected, (name, i, cited)
    shot(page, f"conversation-{name}.png")
