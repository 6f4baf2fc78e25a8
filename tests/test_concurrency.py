"""Twenty chat sessions at once through the real page (gradio_client from threads).

Every session must get its own, correct answer, and no session may wait for another to finish:
the page serves sessions concurrently (queue concurrency 20), so a slow answer in one session
(an LLM stream, say) does not hold up the others. An extractive answer is CPU work (encoding the
question under the encoder's lock, then NumPy), so on two cores twenty of them take about as long
as twenty in a row; the tests check that they are all in flight together and that nothing is
worse than that. Latency percentiles at 1, 5 and 20 sessions: benchmarks/concurrency.py.
"""

from __future__ import annotations

import re
import statistics
import threading
import time

import pytest

from tests.conftest import free_port
from tests.smoke_questions import QUESTIONS

SLOW_MARK = "(take your time)"
SLOW_SECONDS = 4.0


class CountingReplies:
    """The page's answer stream (``reply_stream``), counting answers in flight; a question carrying
    SLOW_MARK first sleeps SLOW_SECONDS, standing in for a slow LLM stream."""

    def __init__(self, inner):
        self._inner = inner
        self._lock = threading.Lock()
        self.in_flight = 0
        self.peak = 0

    def __call__(self, assistant, question, *args, **kwargs):
        # Counted from the call: the chat first shows the question (one update) and only then
        # reads the stream, so counting from the stream's first step would miss that part.
        with self._lock:
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

        def stream():
            try:
                q = question
                if SLOW_MARK in (q or ""):
                    time.sleep(SLOW_SECONDS)
                    q = q.replace(SLOW_MARK, "")
                yield from self._inner(assistant, q, *args, **kwargs)
            finally:
                with self._lock:
                    self.in_flight -= 1

        return stream()


@pytest.fixture(scope="module")
def served(settings, assistant):
    import assistant.page as web
    import assistant.page.chat as chat

    counting = CountingReplies(chat.reply_stream)
    with pytest.MonkeyPatch.context() as patch:
        # The page's chat answers through reply_stream; counting there sees every session's answer.
        patch.setattr(chat, "reply_stream", counting)
        demo = web.build_app(settings, assistant)
        demo.queue(default_concurrency_limit=20)  # as app.launch does
        port = free_port()
        demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, share=False,
                    quiet=True, **web.page_options())
        yield counting, f"http://127.0.0.1:{port}/"
        demo.close()


def first_source(panel: str) -> str | None:
    m = re.search(r'class="pa-source"[^>]*>.*?<code>([^<]+)</code>', panel, re.S)
    return m.group(1) if m else None


def clients(url: str, n: int) -> list:
    """``n`` connected clients, made in parallel (each fetches the page's config)."""
    from gradio_client import Client

    out = [None] * n

    def make(i):
        out[i] = Client(url, verbose=False)

    threads = [threading.Thread(target=make, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def run_sessions(cs: list, questions: list[str], delays: list[float] | None = None) -> list[dict]:
    """Each client asks its question from its own thread, all released together."""
    results = [None] * len(cs)
    gate = threading.Barrier(len(cs))

    def session(i):
        gate.wait()
        if delays:
            time.sleep(delays[i])
        t0 = time.perf_counter()
        try:
            _, history, panel = cs[i].predict(questions[i], [], api_name="/chat")
            results[i] = dict(start=t0, end=time.perf_counter(), source=first_source(panel), history=history)
        except Exception as exc:  # reported by the assertions below
            results[i] = dict(start=t0, end=time.perf_counter(), source=None, error=repr(exc))

    threads = [threading.Thread(target=session, args=(i,)) for i in range(len(cs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    return results


def test_twenty_sessions_at_once_all_correct_and_overlapping(served):
    counting, url = served
    cs = clients(url, 20)
    for q, _ in QUESTIONS:  # warm the sentence cache, as a running server would be
        cs[0].predict(q, [], api_name="/chat")
    single = []
    for q, expected in QUESTIONS[:3]:
        t0 = time.perf_counter()
        _, _, panel = cs[0].predict(q, [], api_name="/chat")
        single.append(time.perf_counter() - t0)
        assert first_source(panel) == expected
    one = statistics.median(single)

    counting.peak = 0
    asked = [QUESTIONS[i % len(QUESTIONS)] for i in range(20)]
    t0 = time.perf_counter()
    results = run_sessions(cs, [q for q, _ in asked])
    wall = time.perf_counter() - t0
    errors = [r.get("error") for r in results if r.get("error")]
    assert errors == []
    assert [r["source"] for r in results] == [e for _, e in asked]
    print(f"\n1 session: {one * 1000:.0f} ms; 20 sessions: wall {wall:.2f} s, peak {counting.peak} answers in flight")
    # All in flight at once, and no slower than the same twenty answers one after another
    # (2x margin: other processes share these two cores).
    assert counting.peak >= 10
    assert wall < 2 * 20 * one, (wall, one)


def test_a_slow_session_does_not_hold_up_the_others(served):
    counting, url = served
    cs = clients(url, 8)
    questions = [f"What is SyPE? {SLOW_MARK}"] + [q for q, _ in (QUESTIONS * 2)[:7]]
    results = run_sessions(cs, questions, delays=[0.0] + [0.3] * 7)  # the slow one is asked first
    assert [r.get("error") for r in results if r.get("error")] == []
    slow, fast = results[0], results[1:]
    assert slow["source"] == "000_12a0d7b1c5c902c5#15"
    assert [r["source"] for r in fast] == [e for _, e in (QUESTIONS * 2)[:7]]
    assert slow["end"] - slow["start"] >= SLOW_SECONDS
    assert all(r["end"] < slow["end"] for r in fast), "a session waited for the slow one"
