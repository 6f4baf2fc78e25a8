"""The `paper-assistant` commands, thin over the library; an error is one line on stderr (exit 2; 1: partial ingest)."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Optional

import typer

from assistant.mcp_server import mcp_command

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Ask questions over conference paper abstracts, with citations.")

IndexOpt = Annotated[Optional[Path], typer.Option("--index", help="index directory [env: PAPER_ASSISTANT_INDEX]")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print the result as JSON")]
ExportOpt = Annotated[Optional[Path], typer.Option("--export", help="also write the cited papers to FILE.bib (BibTeX) or FILE.md")]
ForceOpt = Annotated[bool, typer.Option("--force", help="let --export overwrite an existing file")]
app.command("mcp")(mcp_command(lambda index: _settings(index)))  # the MCP server (assistant.mcp_server)


class _State:
    overrides: dict = {}


def _settings(index: Path | None = None, **extra):
    from assistant.settings import load_settings

    ov = dict(_State.overrides)
    if index is not None:
        ov["index"] = index
    for k, v in extra.items():
        if isinstance(v, dict):
            ov.setdefault(k, {}).update({a: b for a, b in v.items() if b is not None})
        elif v is not None:
            ov[k] = v
    return load_settings(**ov)


def _fail(message: str, code: int = 2) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(code)


@app.callback()
def main_options(
    model: Annotated[Optional[str], typer.Option("--model", help="LLM model name [env: OPENAI_MODEL]")] = None,
    base_url: Annotated[Optional[str], typer.Option("--base-url", help="OpenAI-compatible base URL [env: OPENAI_BASE_URL]")] = None,
    timeout: Annotated[Optional[float], typer.Option("--timeout", help="LLM timeout between streamed pieces, seconds")] = None,
    first_token_timeout: Annotated[Optional[float], typer.Option("--first-token-timeout", help="LLM timeout for a reply's first piece, seconds")] = None,
    chroma_host: Annotated[Optional[str], typer.Option("--chroma-host", help="use a Chroma server at this host")] = None,
    chroma_port: Annotated[Optional[int], typer.Option("--chroma-port", help="Chroma server port")] = None,
    embedding_model: Annotated[Optional[str], typer.Option("--embedding-model", help="sentence-transformers model name or path")] = None,
):
    _State.overrides = {}
    if any(v is not None for v in (model, base_url, timeout, first_token_timeout)):
        _State.overrides["llm"] = {"model": model, "base_url": base_url, "timeout": timeout, "first_token_timeout": first_token_timeout}
    if chroma_host or chroma_port:
        _State.overrides["store"] = {"host": chroma_host, "port": chroma_port}
    if embedding_model:
        _State.overrides["embedding"] = {"model": embedding_model}


@contextmanager
def _embedding_bar():
    """A progress bar for papers being embedded, on stderr when it is a terminal; yields the
    ``on_total`` / ``progress`` callbacks of :func:`vectorstore.ingest.ingest`."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    stderr = getattr(sys.stderr, "unsafe", sys.stderr)  # the bar's own cursor codes, not sanitised away
    with Progress(TextColumn("embedding"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                  console=Console(file=stderr), transient=True, disable=not stderr.isatty()) as bar:
        task = bar.add_task("papers", total=None)
        yield {"on_total": lambda n: bar.update(task, total=n), "progress": lambda n: bar.advance(task, n)}


@app.command()
def ingest(
    paths: Annotated[list[Path], typer.Argument(help="paper-list .txt files, .jsonl files or folders")],
    index: IndexOpt = None,
):
    """Add papers to the index (idempotent: unchanged papers are skipped, edited ones replaced)."""
    from assistant.service import get_index
    from vectorstore.ingest import ingest as run_ingest

    settings = _settings(index)
    idx = get_index(settings, create=True)
    with _embedding_bar() as callbacks:
        report = run_ingest(paths, idx, write_batch=settings.store.write_batch, **callbacks)
    for reason in report.skipped:
        typer.echo(f"skipped: {reason}", err=True)
    typer.echo(report.summary())
    if report.skipped:
        raise typer.Exit(1)


@app.command()
def remove(
    files: Annotated[list[str], typer.Argument(help="names of ingested paper files, e.g. papers.txt")],
    index: IndexOpt = None,
):
    """Remove every paper ingested from these files (say, after renaming one and ingesting it again)."""
    from assistant.service import get_index
    from vectorstore.ingest import remove_sources

    idx = get_index(_settings(index))
    for name, n in remove_sources(files, idx).items():
        typer.echo(f"{name}: {n} papers removed")
    papers, chunks = idx.store.counts()
    typer.echo(f"index holds {papers} papers in {chunks} chunks")


@app.command()
def ask(
    question: Annotated[str, typer.Argument(help="the question")],
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    k: Annotated[Optional[int], typer.Option("-k", min=1, max=100,
                                             help="papers to retrieve (default: the retrieval.k setting, 5)")] = None,
    venue: Annotated[Optional[str], typer.Option(help="only papers of this venue")] = None,
    year: Annotated[Optional[int], typer.Option(help="only papers of this year")] = None,
    source: Annotated[Optional[str], typer.Option(help="only papers from this file name")] = None,
    mode: Annotated[Optional[str], typer.Option(help="retrieval: hybrid | dense | bm25")] = None,
    abstracts: Annotated[bool, typer.Option("--abstracts", help="print each cited abstract")] = False,
    export: ExportOpt = None,
    force: ForceOpt = False,
    show_cut: Annotated[bool, typer.Option("--show-cut-reply", help="also print a cut LLM reply that failed the citation check")] = False,
):
    """Answer a question from the indexed abstracts, with numbered citations."""
    from assistant.render import answer_json, answer_text
    from assistant.retrieval import Filters
    from assistant.service import get_assistant

    _check_export(export, force)
    settings = _settings(index, retrieval={"k": k, "mode": mode})
    assistant = get_assistant(settings)
    filters = Filters(venue=venue, year=year, source=source)
    if as_json:
        ans = assistant.ask(question, filters=filters)
        typer.echo(answer_json(ans))
        _export_answer(export, ans, assistant)
        return
    final = None
    streamed = False
    # hold: LLM text waits for a supported citation (printed text cannot be taken back if the reply is cut)
    for piece in assistant.ask_stream(question, filters=filters, hold=True):
        if isinstance(piece, str):
            if assistant.llm is not None:
                typer.echo(piece, nl=False)  # click flushes each echo: the user sees tokens as they come
                streamed = True
        else:
            final = piece
    _export_answer(export, final, assistant)
    cut = "" if not final.cut_reply else (f"\n\nThe cut LLM reply (failed the citation check):\n{final.cut_reply}"
                                          if show_cut else "\n\n(The cut LLM reply is hidden; --show-cut-reply prints it.)")
    if not streamed:
        typer.echo(answer_text(final, show_abstract=abstracts) + cut)
        return
    # The streamed pieces are the final answer text; print only what the check adds after it.
    import re

    typer.echo("\n")
    footer = answer_text(final.model_copy(update={"answer": ""}), show_abstract=abstracts)
    if final.removed_citations:
        footer += "\n\nRemoved citations of sources that were not given: " + ", ".join(
            f"[{n}]" for n in final.removed_citations)
    typer.echo(re.sub(r"\n{3,}", "\n\n", footer).strip("\n") + cut)


@app.command()
def related(
    text: Annotated[Optional[str], typer.Argument(help="a draft abstract or paragraph")] = None,
    paper: Annotated[Optional[str], typer.Option("--paper", help="an indexed paper id, e.g. 000_x#3")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    k: Annotated[int, typer.Option("-k", min=1, max=100, help="papers to list")] = 10,
    explain: Annotated[int, typer.Option("--explain", min=0, help="with an LLM configured: a cited paragraph for the top N papers")] = 3,
    min_similarity: Annotated[Optional[float], typer.Option("--min-similarity", min=0.0, max=1.0, help="list only papers at least this similar (cosine; default: the calibrated bar; 0: all k)")] = None,
):
    """Rank indexed papers related to a text or a paper: what each shares with it and where it differs."""
    from assistant.related import related_work
    from assistant.render import related_json, related_text
    from assistant.service import get_assistant

    if (text is None) == (paper is None):
        _fail("give a text or --paper ID (one of them)")
    text = sys.stdin.read() if text == "-" else text
    a = get_assistant(_settings(index))
    items = related_work(a.retriever, a.sentences, text=text, paper_id=paper, k=k, bar=min_similarity)  # None: calibrated
    if a.llm is not None and explain and items:
        from assistant.related_llm import add_llm_summaries

        query = text if paper is None else a.index.store.get_papers([paper])[paper].text
        failed = add_llm_summaries(a.llm, a.settings.llm, a.settings.prompts_dir, query, items, n=explain)
        if failed:
            typer.echo(f"note: {failed}", err=True)
    typer.echo(related_json(items) if as_json else related_text(items))


def _check_export(path: Path | None, force: bool = False) -> None:
    """Before any work: the export's format, and no existing file overwritten unless ``force``."""
    if path is not None:
        from assistant.export import export_format

        try:
            export_format(path)
        except ValueError as exc:
            _fail(str(exc))
        if path.exists() and not force:
            _fail(f"{path} already exists: pass --force to overwrite it, or choose another file name")


def _write_export(path: Path | None, items, heading: str) -> None:
    """Write the export file and say so on stderr (stdout stays the result, e.g. JSON)."""
    if path is None:
        return
    from assistant.export import write_export

    write_export(path, items, heading)
    typer.echo(f"exported {len(items)} paper{'s' if len(items) != 1 else ''} to {path}", err=True)


def _export_answer(path: Path | None, ans, assistant) -> None:
    if path is not None and ans is not None:
        from assistant.export import items_from_answer

        _write_export(path, items_from_answer(ans, assistant.index.store), f"Sources for: {ans.question}")


@app.command("list")
def list_cmd(
    question: Annotated[str, typer.Argument(help="an 'all papers that…' question, e.g. \"Which papers study X?\"")],
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    venue: Annotated[Optional[str], typer.Option(help="only papers of this venue")] = None,
    year: Annotated[Optional[int], typer.Option(help="only papers of this year")] = None,
    source: Annotated[Optional[str], typer.Option(help="only papers from this file name")] = None,
    export: ExportOpt = None,
    force: ForceOpt = False,
):
    """List every indexed paper above the relevance bar, with the count and one evidence sentence each."""
    from assistant.export import items_from_list
    from assistant.listing import list_papers
    from assistant.render import list_json, list_text
    from assistant.retrieval import Filters
    from assistant.service import get_assistant

    _check_export(export, force)
    a = get_assistant(_settings(index))
    result = list_papers(a, question, filters=Filters(venue=venue, year=year, source=source))
    typer.echo(list_json(result) if as_json else list_text(result))
    _write_export(export, items_from_list(result), f"Papers for: {result.question}")


@app.command("map")
def map_cmd(
    out: Annotated[Path, typer.Option("--out", help="PNG file to write")] = Path("map.png"),
    index: IndexOpt = None,
    question: Annotated[Optional[str], typer.Option("--question", help="highlight the papers this question lists")] = None,
    clusters: Annotated[Optional[int], typer.Option("--clusters", min=1, help="number of clusters (default √papers)")] = None,
    as_json: JsonOpt = False,
):
    """Draw a 2-D map of all indexed papers (PCA), coloured by cluster with keywords, to a PNG."""
    import json as _json

    from assistant.paper_map import index_map, save_png
    from assistant.service import get_assistant

    if out.suffix.lower() != ".png":
        _fail(f"--out must be a .png file, not {out.name!r}")
    a = get_assistant(_settings(index))
    pmap = index_map(a.index.store, clusters)
    hits = []
    if question:
        from assistant.listing import list_papers

        hits = [p.id for p in list_papers(a, question).papers]
    save_png(pmap, out, highlight=hits)
    if as_json:
        typer.echo(_json.dumps(pmap.to_dict() | {"out": str(out), "highlighted": hits}, indent=2, ensure_ascii=False))
        return
    typer.echo(f"wrote {out}: {len(pmap.points)} papers in {len(pmap.clusters)} clusters"
               + (f", {len(hits)} highlighted" if question else ""))
    for c in pmap.clusters:
        typer.echo(f"  {c.id + 1}. {', '.join(c.keywords)} ({c.size} papers)")


@app.command("eval")
def evaluate_cmd(
    questions: Annotated[Optional[Path], typer.Option("--questions", help="questions in the dev.jsonl format")] = None,
    index: IndexOpt = None,
    as_json: JsonOpt = False,
    distractors: Annotated[Optional[Path], typer.Option("--distractors", help="JSONL collection mixed into a separate eval index")] = None,
    corpus: Annotated[Optional[list[Path]], typer.Option("--corpus", help="papers of the eval index (default: the bundled corpus)")] = None,
    csfcube: Annotated[Optional[Path], typer.Option("--csfcube", help="CSFCube folder: score related-work re-ranking instead")] = None,
    cv: Annotated[int, typer.Option("--cv", min=0, help="also cross-validate the learned models with N folds over this question file")] = 0,
):
    """Score retrieval (recall@k, MRR, nDCG@10), abstention and evidence on a question file."""
    from assistant.evaluate import eval_command

    with _embedding_bar() as callbacks:  # only an index built the first time embeds
        typer.echo(eval_command(_settings(index), questions, distractors, corpus, csfcube, cv, as_json, callbacks))


@app.command()
def train(corpus: Annotated[list[Path], typer.Option("--corpus", help="papers the questions are about (e.g. corpus2k.jsonl)")],
          questions: Annotated[Path, typer.Option("--questions", help="training questions (dev.jsonl format; never dev.jsonl)")],
          index: IndexOpt = None, out: Annotated[Optional[Path], typer.Option("--out", help="folder for the models")] = None):
    """Fit the evidence ranker and the relevance judge on training questions (deterministic)."""
    from assistant.train import train_report
    with _embedding_bar() as callbacks:
        typer.echo(train_report(_settings(index), corpus, questions, out, index is not None, callbacks))


@app.command()
def doctor(index: IndexOpt = None):
    """Check the index and the LLM endpoint, and say plainly what is wrong."""
    from assistant.doctor import run_doctor

    ok = True
    for good, line in run_doctor(_settings(index)):
        typer.echo(("ok    " if good else "FAIL  ") + line)
        ok &= good
    if not ok:
        raise typer.Exit(1)


@app.command()
def serve(
    index: IndexOpt = None,
    host: Annotated[Optional[str], typer.Option(help="bind address (default 127.0.0.1)")] = None,
    port: Annotated[Optional[int], typer.Option(help="port (default 7860)")] = None,
    auth: Annotated[Optional[str], typer.Option(help="user:pass, required off loopback")] = None,
    ingest_default: Annotated[bool, typer.Option("--ingest/--no-ingest", help="ingest the bundled corpus first if needed")] = True,
):
    """Start the chat UI (ingests the bundled corpus first when the index is missing or stale)."""
    import app as web

    settings = _settings(index, ui={"host": host, "port": port, "auth": auth})
    web.launch(settings, ingest_default=ingest_default)


def main() -> None:
    """Console entry point (assistant.console.run: terminal-safe output, one-line errors)."""
    from assistant.console import run

    run(app)
