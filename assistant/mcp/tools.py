"""The MCP tools' side of the library: typed records, the Assistant loaded once, and one plain
function per tool, each calling what the matching CLI command calls (``Assistant.prepare`` and
``Assistant.ask`` as ``ask`` does, :func:`assistant.research.related.related_work` and
:func:`assistant.faces.render.related_records` as ``related --json``, :func:`assistant.research.lists.list_papers`
as ``list --json``, the store's ``get_papers``). Transports and registration: :mod:`assistant.mcp.server`.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from assistant.settings import Settings

log = logging.getLogger("paper_assistant.mcp")

MAX_LISTED_IN_RESOURCE = 2000
"""Papers listed one by one in the index resource; beyond this it gives the counts only."""

VERDICTS = {"answered": "answered", "weak": "closest match", "none": "nothing found"}
"""The abstention rule's verdicts (:class:`assistant.types.Verdict`) as the tools report them."""

Verdict = Literal["answered", "closest match", "nothing found"]


# --- typed results -------------------------------------------------------------------------------
class SearchHit(BaseModel):
    rank: int
    paper_id: str
    label: str = Field(description="title if known, else a short derived name")
    score: float = Field(description="fused hybrid-retrieval score (reciprocal rank fusion); orders the list")
    similarity: float = Field(description="cosine similarity of the query to the paper's best chunk (MiniLM)")
    bm25: float
    sentence: str = Field(description="the abstract sentence that best matches the query")
    venue: str = ""
    year: int | None = None
    categories: list[str] = Field(default_factory=list, description="the paper's categories, e.g. arXiv's cs.LG")


class SearchResult(BaseModel):
    query: str
    verdict: Verdict = Field(description="whether the best match answers the query, by the abstention rule")
    count: int
    papers: list[SearchHit]
    note: str = Field("", description="what the answer path says of the query (e.g. that it does not read as English)")


class Citation(BaseModel):
    n: int = Field(description="the [n] marker in the answer")
    paper_id: str
    label: str
    sentence: str = Field(description="the abstract sentence that supports the citation")
    support: str | None = Field(None, description="'supported' | 'weak' for checked LLM claims; None if unchecked")


class AskResult(BaseModel):
    question: str
    answer: str = Field(description="answer text with [n] citation markers")
    verdict: Verdict
    citations: list[Citation]
    also_retrieved: list[str] = Field(description="ids of retrieved papers the answer does not cite")
    count: int | None = Field(None, description="papers found, for 'which papers…' questions")
    note: str = Field("", description="e.g. why the LLM answer fell back to the extractive one")
    caveat: str = Field("", description="set when the question asks for what abstracts rarely state (hyper-parameters, "
                                        "training details, proofs, table values, code): the answer is limited to "
                                        "abstracts; see the cited papers' full text")
    mode: str = Field(description="'extractive' or 'llm'")


class IndexedPaper(BaseModel):
    """A paper record as stored (abstract exactly as in its source file)."""

    id: str
    title: str = ""
    label: str = ""
    abstract: str
    authors: list[str] = Field(default_factory=list)
    venue: str = ""
    year: int | None = None
    url: str = ""
    source: str = Field("", description="file the paper was ingested from")
    categories: list[str] = Field(default_factory=list, description="subject categories, e.g. arXiv's cs.LG")


class _Open(BaseModel):
    """Records whose extra keys (added by the CLI's JSON later) pass through unchanged."""

    model_config = ConfigDict(extra="allow")


class RelatedHit(_Open):
    rank: int
    paper_id: str
    label: str
    score: float = Field(description="the relevance that orders the list (as similarity)")
    similarity: float = Field(description="the relevance: the embeddings' cosine and the TF-IDF cosine, weighted by "
                                          "calibration.related.dense_weight; the bar is on it")
    cosine: float = Field(0.0, description="cosine of the two texts' embeddings")
    lexical: float = Field(0.0, description="cosine of the two texts' TF-IDF term vectors")
    explanation: list[dict[str, Any]] = Field(description="shared points: (your sentence, its sentence, similarity)")
    differs: dict[str, Any] = Field(description="sentences of either side with no good match")
    summary: str = ""


class NearMiss(BaseModel):
    paper_id: str
    label: str
    similarity: float = Field(description="the relevance, as in papers")
    similarity_percent: int


class RelatedResult(BaseModel):
    query: str = Field(description="the paper id, or the start of the text")
    count: int
    papers: list[RelatedHit]
    below_bar: int = Field(0, description="papers ranked but left out as too dissimilar, where a bar applies")
    nearest_only: bool = Field(False, description="no paper clears the bar: `papers` are the nearest few, all below it")
    near_misses: list[NearMiss] = Field(default_factory=list, description="up to five papers just below the bar")
    note: str = Field("", description="non-empty when the text was longer than 8,000 characters: only its start was read")


class ListedHit(_Open):
    rank: int
    paper_id: str
    label: str
    score: float = Field(description="evidence relative to the best paper (1.0); listed from the bar up")
    sentence: str


class ListResult(_Open):
    question: str
    topic: str
    count: int
    papers: list[ListedHit]
    near_misses: list[ListedHit]
    note: str = Field(description="how the bar was set, and the near misses")
    weak: bool = Field(description="the best match is only a closest match: the list may not answer")


# --- the library, loaded once ---------------------------------------------------------------------
class Backend:
    """The Assistant over the configured index, built once (ingesting the bundled corpus first when
    ``ingest_default`` and the index is missing or stale, as ``serve`` does). Thread-safe."""

    def __init__(self, settings: Settings, ingest_default: bool = True):
        self.settings = settings
        self.ingest_default = ingest_default
        self._lock = threading.Lock()  # held while loading
        self._assistant = None
        self._warming = threading.Event()

    def warm_up(self) -> None:
        """Start loading in a background thread, once; never waits (the event loop calls it). An error
        is raised again by the tool that needs the Assistant."""
        if self._warming.is_set():
            return
        self._warming.set()
        threading.Thread(target=self._warm, name="paper-assistant-warm-up", daemon=True).start()

    def _warm(self) -> None:
        try:
            self.assistant()
        except BaseException:  # reported by the first tool call
            pass

    def assistant(self):
        with self._lock:
            if self._assistant is None:
                self._assistant = self._open()
            return self._assistant

    def _open(self):
        from assistant.answer import corpus_to_refresh, get_assistant, get_index

        if self.ingest_default:
            from vectorstore.ingest import ingest
            from vectorstore.store import IndexInUseError

            was_new = not self.settings.index.exists()
            index = get_index(self.settings, create=True)
            try:
                report = ingest(corpus_to_refresh(self.settings, index, was_new), index,
                                write_batch=self.settings.store.write_batch)
            except IndexInUseError as exc:
                if not index.store.counts()[0]:
                    raise
                log.warning("%s; serving the index as it is", exc)
            else:
                if report.added or report.updated or report.removed or report.skipped:
                    log.warning("ingested the corpus: %s", report.summary())
                for reason in report.skipped + [f"entry {line}" for line in report.entries.skipped[:20]]:
                    log.warning("skipped: %s", reason)
        return get_assistant(self.settings)


def _filters(venue: str | None, year: int | None, source: str | None, has_code: bool = False,
             category: str | None = None):
    from assistant.retrieval import Filters

    return Filters(venue=venue or None, year=year, source=source or None, has_code=has_code or None,
                   category=category or None)


# --- tool bodies (plain functions; the server registers them) ------------------------------------
Query = Annotated[str, Field(description="what to look for, in plain language", max_length=4000)]
K = Annotated[int, Field(ge=1, le=100, strict=True, description="how many papers to return")]  # strict: true is no 1
# Names and ids are short: a 100,000-character one came back whole in the error naming it (a third hostile round).
NAME_CHARS = 500
Venue = Annotated[str | None, Field(description="only papers of this venue (case-insensitive), e.g. 'ICML'",
                                    max_length=NAME_CHARS)]
Year = Annotated[int | None, Field(strict=True, description="only papers of this year, e.g. 2026")]
Source = Annotated[str | None, Field(description="only papers from this ingested file name, with or without extension",
                                     max_length=NAME_CHARS)]
HasCode = Annotated[bool, Field(description="only papers whose abstract links code or a project page")]
Category = Annotated[str | None, Field(description="only papers of this category (case-insensitive), e.g. arXiv's 'cs.LG'",
                                       max_length=NAME_CHARS)]


def search_papers(backend: Backend, query: str, k: int = 5, venue: str | None = None, year: int | None = None,
                  source: str | None = None, has_code: bool = False, category: str | None = None) -> SearchResult:
    """Ranked papers for ``query`` (hybrid retrieval, as ``ask`` retrieves), each with its best sentence."""
    from assistant.answer import require_papers

    a = backend.assistant()
    require_papers(a.index)
    prep = a.prepare(query, filters=_filters(venue, year, source, has_code, category), k=k)
    hits = []
    for i, p in enumerate(prep.papers[:k], 1):
        sent = prep.evidence.get(p.id, (None, 0.0))[0]
        hits.append(SearchHit(rank=i, paper_id=p.id, label=p.paper.display(), score=round(p.score, 6),
                              similarity=round(p.dense, 4), bm25=round(p.bm25, 4), sentence=sent.text if sent else "",
                              venue=p.paper.venue, year=p.paper.year, categories=p.paper.categories))
    return SearchResult(query=prep.question, verdict=VERDICTS[prep.verdict.value], count=len(hits), papers=hits,
                        note=prep.note)


def ask_question(backend: Backend, question: str, k: int | None = None, venue: str | None = None,
                 year: int | None = None, source: str | None = None, has_code: bool = False,
                 category: str | None = None) -> AskResult:
    """The cited answer ``paper-assistant ask --json`` gives. Raises EmptyIndexError on an index
    without papers."""
    from assistant.answer import require_papers
    from assistant.research import reply

    require_papers(backend.assistant().index)
    ans = reply(backend.assistant(), question, filters=_filters(venue, year, source, has_code, category), k=k)
    return AskResult(
        question=ans.question, answer=ans.answer, verdict=VERDICTS[ans.verdict.value],
        citations=[Citation(n=s.n, paper_id=s.paper_id, label=s.title or s.label, sentence=s.sentence,
                            support=s.support) for s in ans.sources],
        also_retrieved=[s.paper_id for s in ans.also_retrieved], count=ans.count, mode=ans.mode,
        note=" ".join(ans.note.replace(ans.caveat, "").split()) if ans.caveat else ans.note, caveat=ans.caveat)


def related_papers(backend: Backend, text: str | None = None, paper_id: str | None = None, k: int = 10,
                   explain: int = 0, min_similarity: float | None = None) -> RelatedResult:
    """What ``paper-assistant related --json`` gives: related papers with shared and differing points."""
    from assistant.research import related_work
    from assistant.faces import near_records, related_records

    from assistant.answer import require_papers

    paper_id = paper_id.strip() if paper_id else paper_id
    text = text if text and text.strip() else (None if paper_id else text)
    a = backend.assistant()
    require_papers(a.index)
    items = related_work(a.retriever, a.sentences, text=text, paper_id=paper_id or None, k=k, bar=min_similarity)
    if a.llm is not None and explain and items:
        from assistant.research import add_llm_summaries

        query = items.text if not paper_id else a.index.store.get_papers([paper_id])[paper_id].text
        failed = add_llm_summaries(a.llm, a.settings.llm, a.settings.prompts_dir, query, items, n=explain)
        if failed:
            log.warning("%s", failed)
    shown = paper_id or " ".join(text.split())[:200]
    records = related_records(items)
    return RelatedResult(query=shown, count=len(records), papers=[RelatedHit(**r) for r in records],
                         below_bar=items.below_bar, nearest_only=items.nearest_only,
                         near_misses=[NearMiss(**r) for r in near_records(items)], note=items.note)


def list_matching(backend: Backend, topic: str, venue: str | None = None, year: int | None = None,
                  source: str | None = None, has_code: bool = False, category: str | None = None) -> ListResult:
    """What ``paper-assistant list --json`` gives: every paper above the bar, with the count."""
    from assistant.research import list_papers
    from assistant.answer import require_papers

    require_papers(backend.assistant().index)
    result = list_papers(backend.assistant(), topic, filters=_filters(venue, year, source, has_code, category))
    return ListResult(**result.to_dict())


def paper_record(backend: Backend, paper_id: str) -> IndexedPaper:
    """The stored record of one paper. Raises UnknownPaperError naming the closest ids."""
    from assistant.research import unknown_paper

    store = backend.assistant().index.store
    pid = (paper_id or "").strip()
    found = store.get_papers([pid]) if pid else {}
    if pid not in found:
        raise unknown_paper(store, pid)
    p = found[pid]
    return IndexedPaper(id=p.id, title=p.title, label=p.label, abstract=p.text, authors=p.authors, venue=p.venue,
                        year=p.year, url=p.url, source=p.source, categories=p.categories)


def index_summary(backend: Backend) -> dict:
    """Counts of papers and chunks, papers per venue, year, source file and (when any paper has one) category,
    and the papers themselves (id, label, venue, year; up to MAX_LISTED_IN_RESOURCE)."""
    store = backend.assistant().index.store
    papers, _ = store.all_papers()
    n_papers, n_chunks = store.counts()

    def tally(values) -> dict:
        return {str(k): v for k, v in sorted(Counter(values).items(), key=lambda kv: str(kv[0]))}

    def in_file_order(p) -> tuple:  # "x#2" before "x#10"
        stem, _, n = p.id.rpartition("#")
        return (stem, int(n), "") if n.isdigit() else (p.id, 0, p.id)

    listed = sorted(papers, key=in_file_order)[:MAX_LISTED_IN_RESOURCE]
    return {"papers": n_papers, "chunks": n_chunks,
            "venues": tally(p.venue or "(none)" for p in papers),
            "years": tally(p.year if p.year is not None else "(none)" for p in papers),
            "sources": tally(p.source or "(none)" for p in papers),
            **({"categories": tally(c for p in papers for c in p.categories)} if any(p.categories for p in papers)
               else {}),
            "listed": [{"id": p.id, "label": p.display(), "venue": p.venue, "year": p.year} for p in listed],
            "truncated": len(papers) > len(listed)}
