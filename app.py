"""The Gradio page: Chat (streamed, cited answers with a sources panel) and Related work.

A thin face over :mod:`assistant`: it renders CitedAnswer and RelatedPaper records and nothing else.
Binds 127.0.0.1 by default; any other address requires ``--auth user:pass``. Analytics are off,
so starting the page makes no outbound connection.
"""

from __future__ import annotations

import html
import ipaddress
import os
import re
import sys

os.environ.setdefault("GRADIO_ANALYTICS_ENABLED", "False")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import gradio as gr  # noqa: E402

from assistant.answer import Assistant, CitedAnswer, Source  # noqa: E402
from assistant.relevance import VERDICT_TEXT, Verdict  # noqa: E402
from assistant.settings import Settings  # noqa: E402

MAX_HISTORY_TURNS = 6

CSS = """
.pa-source { border: 1px solid var(--border-color-primary); border-radius: 8px; padding: 6px 10px; margin: 6px 0; }
.pa-source summary { cursor: pointer; font-weight: 600; }
.pa-source mark { background: #ffe58a; color: inherit; padding: 0 2px; }
.pa-weak { color: #b45309; font-weight: 500; }
.pa-verdict { font-style: italic; color: #92400e; }
.pa-also { color: var(--body-text-color-subdued); font-size: 0.9em; }
"""


def highlight(abstract: str, start: int, end: int) -> str:
    """The abstract as HTML with ``[start, end)`` wrapped in <mark> (escaped, offsets in characters)."""
    if 0 <= start < end <= len(abstract):
        return (html.escape(abstract[:start]) + '<mark class="pa-cited">' + html.escape(abstract[start:end])
                + "</mark>" + html.escape(abstract[end:]))
    return html.escape(abstract)


def source_html(s: Source, open_: bool = False) -> str:
    weak = ' <span class="pa-weak">⚠ weak support</span>' if s.support == "weak" else ""
    return (f'<details class="pa-source" id="pa-src-{s.n}"{" open" if open_ else ""}>'
            f'<summary>[{s.n}] {html.escape(s.title or s.label)} <code>{html.escape(s.paper_id)}</code>{weak}</summary>'
            f'<p>{highlight(s.abstract, s.sentence_start, s.sentence_end)}</p></details>')


def sources_html(ans: CitedAnswer | None) -> str:
    """The sources panel: each cited paper (click to open its abstract, cited sentence highlighted)."""
    if ans is None:
        return '<div class="pa-sources"><p>Sources of the latest answer appear here.</p></div>'
    parts = ['<div class="pa-sources">']
    if ans.note:
        parts.append(f'<p class="pa-weak">{html.escape(ans.note)}</p>')
    if ans.verdict != Verdict.answered:
        parts.append(f'<p class="pa-verdict">{html.escape(VERDICT_TEXT[ans.verdict])}</p>')
    if ans.count is not None:
        parts.append(f"<p><b>{ans.count}</b> paper{'s' if ans.count != 1 else ''} found.</p>")
    parts += [source_html(s, open_=(i == 0)) for i, s in enumerate(ans.sources)]
    if ans.also_retrieved:
        parts.append('<p class="pa-also">Also retrieved (not cited): '
                     + "; ".join(f"{html.escape(s.title or s.label)} <code>{html.escape(s.paper_id)}</code>"
                                 for s in ans.also_retrieved) + "</p>")
    parts.append("</div>")
    return "".join(parts)


def answer_markdown(ans: CitedAnswer) -> str:
    """The chat bubble: answer text, supporting quotes per citation, and flags."""
    out = []
    if ans.note:
        out.append(f"> ⚠ {ans.note}\n")
    out.append(ans.answer)
    if ans.verdict == Verdict.weak and VERDICT_TEXT[Verdict.weak] not in ans.answer:
        out.append(f"\n_{VERDICT_TEXT[Verdict.weak]}_")
    if ans.sources and ans.mode == "llm":
        out.append("\n" + "\n".join(
            f"- [{s.n}] {s.title or s.label}: “{s.sentence}”" + (" ⚠ weak support" if s.support == "weak" else "")
            for s in ans.sources))
    return "\n".join(out)


def build_app(settings: Settings, assistant: Assistant) -> gr.Blocks:
    """The Blocks app over ``assistant`` (not launched)."""
    papers, _ = assistant.index.store.all_papers()
    choices = sorted((f"{p.display()} — {p.id}", p.id) for p in papers)

    def chat(message: str, history: list, turns: list):
        turns = list(turns or [])
        history = list(history or [])
        message = message or ""
        history.append({"role": "user", "content": message})
        try:
            stream = assistant.ask_stream(message, history=turns[-MAX_HISTORY_TURNS:])
            text = ""
            history.append({"role": "assistant", "content": ""})
            final = None
            for piece in stream:
                if isinstance(piece, str):
                    text += piece
                    history[-1]["content"] = text
                    yield "", history, turns, gr.update()
                else:
                    final = piece
            history[-1]["content"] = answer_markdown(final)
            turns.append((final.standalone_question or final.question, final))
            yield "", history, turns[-MAX_HISTORY_TURNS:], sources_html(final)
        except (ValueError, KeyError) as exc:  # QuestionError and friends: one clear line
            if history and history[-1]["role"] == "assistant":
                history.pop()
            history.append({"role": "assistant", "content": f"⚠ {exc}"})
            yield message, history, turns, gr.update()

    def ask_api(question: str) -> dict:
        return assistant.ask(question).model_dump(mode="json")

    def related(text: str, paper_id: str | None):
        from assistant.related import related_work
        from assistant.render import related_records

        try:
            items = related_work(assistant.retriever, assistant.sentences,
                                 text=None if paper_id else text, paper_id=paper_id or None, k=10)
        except (ValueError, KeyError) as exc:
            return f"⚠ {exc}"
        rows = ["| # | paper | score | why (your sentence → its sentence) |", "|---|---|---|---|"]
        for r in related_records(items):
            why = "<br>".join(f"“{html.escape(p['query_sentence'][:120])}” → “{html.escape(p['paper_sentence'][:160])}” ({p['similarity']:.2f})"
                              for p in r["explanation"])
            rows.append(f"| {r['rank']} | **{html.escape(r['label'])}** `{r['paper_id']}` | {r['score']:.4f} | {why} |")
        return "\n".join(rows)

    with gr.Blocks(title="Paper Assistant") as demo:
        gr.Markdown(f"## Paper Assistant\nAsk about the {len(papers)} indexed abstracts. Every answer cites its sources; "
                    f"{'an LLM (' + html.escape(settings.llm.model or '') + ') writes answers' if assistant.llm else 'answers are extracted from the abstracts (no LLM configured)'}.")
        with gr.Tab("Chat"):
            with gr.Row():
                with gr.Column(scale=3):
                    chatbot = gr.Chatbot(label="Chat", height=480, elem_id="pa-chat")
                    with gr.Row():
                        box = gr.Textbox(placeholder="Ask a question about the papers…", show_label=False,
                                         scale=5, elem_id="pa-question", max_length=4000)
                        send = gr.Button("Ask", variant="primary", scale=1, elem_id="pa-ask")
                    clear = gr.Button("New chat", size="sm")
                with gr.Column(scale=2):
                    gr.Markdown("### Sources")
                    panel = gr.HTML(sources_html(None), elem_id="pa-sources")
            turns = gr.State([])
            send.click(chat, [box, chatbot, turns], [box, chatbot, turns, panel], api_name="chat")
            box.submit(chat, [box, chatbot, turns], [box, chatbot, turns, panel], api_name=False)
            clear.click(lambda: ([], [], sources_html(None)), None, [chatbot, turns, panel], api_name=False)
            api_out = gr.JSON(visible=False)
            api_in = gr.Textbox(visible=False)
            api_btn = gr.Button(visible=False)
            api_btn.click(ask_api, api_in, api_out, api_name="ask")
        with gr.Tab("Related work"):
            gr.Markdown("Paste a draft abstract, or pick an indexed paper.")
            rel_text = gr.Textbox(lines=6, label="Your abstract or paragraph", elem_id="pa-related-text")
            rel_pick = gr.Dropdown(choices=choices, value=None, label="…or an indexed paper", elem_id="pa-related-pick")
            rel_btn = gr.Button("Find related work", variant="primary", elem_id="pa-related-go")
            rel_out = gr.Markdown(elem_id="pa-related-out")
            rel_btn.click(related, [rel_text, rel_pick], rel_out, api_name="related")
    return demo


def is_loopback(host: str) -> bool:
    if host in ("localhost",):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def parse_auth(auth: str | None) -> tuple[str, str] | None:
    """``"user:pass"`` → ("user", "pass"); raises ValueError on another shape."""
    if not auth:
        return None
    if ":" not in auth or auth.startswith(":") or auth.endswith(":"):
        raise ValueError("auth must look like user:password")
    user, _, pw = auth.partition(":")
    return user, pw


def prepare_assistant(settings: Settings, ingest_default: bool = True) -> Assistant:
    """Ingest the configured corpus if the index is missing or stale, then open the Assistant."""
    from assistant.service import get_assistant, get_index
    from vectorstore.ingest import ingest

    if ingest_default:
        index = get_index(settings, create=True)
        report = ingest(settings.corpus, index)
        if report.added or report.updated or report.removed:
            print(f"ingested the corpus: {report.summary()}", file=sys.stderr)
    return get_assistant(settings)


def launch(settings: Settings, ingest_default: bool = True, block: bool = True):
    """Ingest if needed, build and launch the app. Raises ValueError for an exposed bind without auth."""
    host = settings.ui.host
    auth = parse_auth(settings.ui.auth)
    if not is_loopback(host) and not auth:
        raise ValueError(f"refusing to bind {host} without authentication: pass --auth user:pass "
                         "(or PAPER_ASSISTANT_UI__AUTH)")
    assistant = prepare_assistant(settings, ingest_default)
    demo = build_app(settings, assistant)
    demo.queue(default_concurrency_limit=20)
    print(f"Paper Assistant on http://{host}:{settings.ui.port}" + (" (login required)" if auth else ""), file=sys.stderr)
    return demo.launch(server_name=host, server_port=settings.ui.port, auth=auth, share=False,
                       show_error=True, prevent_thread_lock=not block, theme=gr.themes.Soft(), css=CSS,
                       footer_links=[])


if __name__ == "__main__":
    from assistant.cli import main

    sys.argv[1:1] = ["serve"]
    main()
