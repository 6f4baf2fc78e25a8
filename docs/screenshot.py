"""Regenerate docs/screenshot.png, the README's picture of the page (a script, not a test).

    .venv/bin/python docs/screenshot.py        # needs the bundled index (make run or make ingest) and make browser

Serves the page on a free loopback port over ``data/index`` (extractive answers: no LLM), opens it in
headless Chromium, asks "What is SyPE?", waits for the cited answer and its sources, and writes
docs/screenshot.png (1400 × 900).
"""

from __future__ import annotations

import socket
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHROMIUM = "/usr/bin/chromium"
OUT = ROOT / "docs" / "screenshot.png"


def main() -> None:
    import vectorstore.offline  # noqa: F401 - telemetry off before gradio loads
    import assistant.page as web
    from assistant.answer.service import get_assistant
    from assistant.settings import load_settings
    from playwright.sync_api import sync_playwright

    settings = load_settings(index=ROOT / "data" / "index")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    demo = web.build_app(settings, get_assistant(settings))
    demo.queue()
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True, **web.page_options())
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/", wait_until="load")
            page.fill("#pa-question textarea", "What is SyPE?")
            page.click("#pa-ask")
            page.wait_for_selector("#pa-sources .pa-source", timeout=60_000)
            page.wait_for_timeout(800)  # KaTeX and the highlight settle
            page.screenshot(path=str(OUT))
            browser.close()
    finally:
        demo.close()
    print(OUT)


if __name__ == "__main__":
    main()
