"""Grounding: the sentences of an abstract, their vectors, and what the judge reads about a paper.

Which sentence is quoted is the learned evidence ranker's choice (assistant.relevance.learned, over
assistant.evidence.features.SENTENCE_FEATURES; the cues below are some of its features). This module gives
it the sentences and their embeddings, and the rules judge its :func:`relevance_evidence`.
Sentence embeddings are contextual (pooled from the chunk's forward pass, see
vectorstore.chunks.sentences): read from the index, where ingest stored them, and computed only for papers
stored without them; either way cached in-process.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from assistant.evidence.cues import Cues
from assistant.evidence.types import RelevanceEvidence
from assistant.question import URL as _URL, figures, has_name_or_number, lexical_coverage, names_in
from vectorstore.chunks import Chunker, embed_chunks, merge_paper, sentence_spans, spans_by_chunk, unpack
from vectorstore.encoding import Encoder
from vectorstore.store import tokenize
from vectorstore.papers import Paper


# A claim every abstract makes ("We validate the proposed method through extensive experiments, with
# results confirming its effectiveness."): filler, unless it names or quantifies something.
_GENERIC_CLAIM = re.compile(
    r"\b(?:extensive|comprehensive|thorough) (?:experiments|evaluations?|experimental results)\b|"
    r"\b(?:demonstrat|show|confirm|validat|verif)\w* (?:the |its |their )?(?:effectiveness|efficacy|superiority)\b", re.I)


def is_generic_claim(text: str, n_terms: int | None = None) -> bool:
    """True for filler: a sentence that only claims success in stock words (no name, acronym or
    figure), or one that is mostly a link ("Our code is available at https://…"). ``n_terms``: its
    terms without links (:attr:`Sentence.n_terms`), when known."""
    if _URL.search(text) and (len(tokenize(_URL.sub(" ", text))) if n_terms is None else n_terms) <= 6:
        return True
    return bool(_GENERIC_CLAIM.search(text)) and not has_name_or_number(text) and not figures(text)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a paper: its text and character span in the abstract, and its terms, tokenized once
    when first read (the :class:`SentenceCache` keeps the sentence, so once per paper while it is cached)."""

    paper_id: str
    text: str
    start: int
    end: int

    @cached_property
    def tokens(self) -> tuple[str, ...]:
        """Its BM25 terms (:func:`vectorstore.store.lexical.tokenize`), in order, repeats kept."""
        return tuple(tokenize(self.text))

    @cached_property
    def terms(self) -> frozenset[str]:
        """Its distinct terms: what the coverage features read."""
        return frozenset(self.tokens)

    @cached_property
    def n_terms(self) -> int:
        """How many terms it holds without its links (a sentence that is mostly a link holds few)."""
        return len(tokenize(_URL.sub(" ", self.text))) if _URL.search(self.text) else len(self.tokens)


class SentenceCache:
    """Sentences and their embeddings per paper (LRU, ``capacity`` papers). Thread-safe.

    ``store`` (a ChunkStore, optional) supplies the vectors ingest stored; papers it lacks (or all,
    without a store) are embedded here with the same chunking and pooling as ingest.
    """

    def __init__(self, encoder: Encoder, store=None, capacity: int = 4096, chunker: Chunker | None = None):
        self.encoder = encoder
        self.store = store
        self.capacity = capacity
        self._chunker = chunker or Chunker.for_encoder(encoder)  # the index's chunker (Index.chunker)
        self._data: OrderedDict[str, tuple[list[Sentence], np.ndarray]] = OrderedDict()
        self._lock = threading.Lock()
        self.computed = 0  # papers whose sentence vectors had to be computed (not found in the store)

    def get(self, papers: list[Paper]) -> dict[str, tuple[list[Sentence], np.ndarray]]:
        """``{paper id: (sentences, embeddings of shape (n_sentences, dim))}`` for ``papers``."""
        out, missing = {}, []
        with self._lock:
            for p in papers:
                key = f"{p.id}\x00{hash(p.text)}"
                if key in self._data:
                    self._data.move_to_end(key)
                    out[p.id] = self._data[key]
                else:
                    missing.append((key, p))
        if missing:
            found = self._from_store([p for _, p in missing])
            todo = [p for _, p in missing if p.id not in found]
            if todo:
                found.update(self._compute(todo))
            with self._lock:
                for key, p in missing:
                    sents = [Sentence(p.id, p.text[s:e], s, e) for s, e in sentence_spans(p.text)]
                    entry = (sents, found[p.id])
                    self._data[key] = entry
                    out[p.id] = entry
                while len(self._data) > self.capacity:
                    self._data.popitem(last=False)
        return out

    def embed_text(self, text: str) -> tuple[list[Sentence], np.ndarray]:
        """Sentences of a text that is not indexed (a pasted draft) and their vectors, made exactly as
        ingest makes a paper's, so a sentence the text shares with an abstract gets that abstract's
        vector (a sentence encoded alone would not: MiniLM vectors here are pooled in context).
        Not cached. Shapes as :meth:`get`."""
        query = Paper(id="\x00text", text=text)
        vecs = self._compute([query])[query.id]
        self.computed -= 1  # not an indexed paper missing its vectors
        return [Sentence(query.id, text[s:e], s, e) for s, e in sentence_spans(text)], vecs

    def _from_store(self, papers: list[Paper]) -> dict[str, np.ndarray]:
        if self.store is None:
            return {}
        try:
            metas = self.store.chunk_metadata_by_paper([p.id for p in papers])
        except Exception:  # the store is a cache here; a failed read just means computing
            return {}
        out = {}
        for p in papers:
            parts = [u for m in metas.get(p.id, []) if (u := unpack(m, self.encoder.dim)) is not None]
            vecs = merge_paper(p, parts, self.encoder.dim) if parts else None
            if vecs is not None:
                out[p.id] = vecs
        return out

    def _compute(self, papers: list[Paper]) -> dict[str, np.ndarray]:
        chunks = [c for p in papers for c in self._chunker.split(p)]
        by_id = {p.id: p for p in papers}
        spans = spans_by_chunk(chunks, by_id)
        _, span_vecs = embed_chunks(chunks, spans, self.encoder)
        parts: dict[str, list] = {}
        for c, sv in zip(chunks, span_vecs):
            parts.setdefault(c.paper_id, []).append((spans[c.id], sv))
        self.computed += len(papers)
        out = {}
        for p in papers:
            vecs = merge_paper(p, parts.get(p.id, []), self.encoder.dim)
            if vecs is None:  # cannot happen with one splitter on both sides; keep answers working
                vecs = self.encoder.encode([p.text[s:e] for s, e in sentence_spans(p.text)])
            out[p.id] = vecs
        return out


def relevance_evidence(cues: Cues, qvec: np.ndarray, papers: list, sentences: dict,
                       relevance_vec: np.ndarray | None = None) -> dict[str, RelevanceEvidence]:
    """What the calibrated rules judge (assistant.relevance.judge.AbstentionRule) reads about each paper
    (``papers``: ScoredPaper records, ``sentences``: :meth:`SentenceCache.get` of their papers): its
    dense score, its best sentence cosine to ``relevance_vec`` (default ``qvec``; a list question's
    topic), BM25, whether it holds a name the question names, and the idf-weighted coverage of the
    question's (topic's) content terms (``cues.rule_content``). Returns ``{id: RelevanceEvidence}``. The quoted
    sentence is the evidence ranker's (assistant.answer.pipeline.Assistant.learned_sentences)."""
    rvec = qvec if relevance_vec is None else relevance_vec
    names = cues.names
    relevance = {}
    for p in papers:
        sents, vecs = sentences[p.id]
        if not sents:
            relevance[p.id] = RelevanceEvidence(p.dense, 0.0, p.bm25, False)
            continue
        dense = p.dense if p.dense else float(np.max(vecs @ qvec))
        text = p.paper.searchable()
        relevance[p.id] = RelevanceEvidence(dense, float(np.max(vecs @ rvec)), p.bm25, bool(names) and names_in(names, text),
                                            lexical_coverage(text, cues.rule_content))
    return relevance
