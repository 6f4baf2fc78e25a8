"""Grounding: which sentence of an abstract supports a question or a claim.

Hybrid sentence scoring: dense cosine (question ↔ sentence, MiniLM) plus an idf-weighted lexical
coverage of the question's terms, with extra weight for terms that carry numbers or names
(capitals/digits) and a small bonus for sentences with figures when the question asks for a quantity.
Sentence embeddings are contextual (pooled from the chunk's forward pass, see
vectorstore.sentences): read from the index, where ingest stored them, and computed only for papers
stored without them; either way cached in-process.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from assistant.relevance import RelevanceEvidence, content_weights
from assistant.settings import SentenceCalibration
from assistant.question import Question, counts, figures, has_name_or_number, names_in
from vectorstore.chunking import Chunker, sentence_spans
from vectorstore.embedding import Encoder
from vectorstore.sentences import embed_chunks, merge_paper, spans_by_chunk, unpack
from vectorstore.lexical import LexicalIndex, tokenize
from vectorstore.papers import Paper

# Sentences that report findings; a detail asked about a paper is usually stated in one of them.
_RESULT_CUE = re.compile(
    r"\b(experiment\w*|result\w*|demonstrat\w*|show\w*|outperform\w*|achiev\w*|evaluat\w*|stud(y|ies)|"
    r"empirical\w*|find\w*|benchmark\w*|reveal\w*|confirm\w*|attain\w*)\b", re.I)
# A link or a code-availability pointer states no finding ("Code is at https://github.com/x/y.").
_URL = re.compile(r"\b(?:https?://|www\.)\S+|\b\S+\.(?:com|org|io|net)/\S*", re.I)


_INTRODUCES = re.compile(r"\b(?:we (?:\w+ )?(?:propose|introduce|present|develop|design|build)|stands? for|called|named|"
                         r"termed|dubbed)\b", re.I)
# A claim every abstract makes ("We validate the proposed method through extensive experiments, with
# results confirming its effectiveness."): filler, unless it names or quantifies something.
_GENERIC_CLAIM = re.compile(
    r"\b(?:extensive|comprehensive|thorough) (?:experiments|evaluations?|experimental results)\b|"
    r"\b(?:demonstrat|show|confirm|validat|verif)\w* (?:the |its |their )?(?:effectiveness|efficacy|superiority)\b", re.I)


def is_generic_claim(text: str) -> bool:
    """True for filler: a sentence that only claims success in stock words (no name, acronym or
    figure), or one that is mostly a link ("Our code is available at https://…")."""
    if _URL.search(text) and len(tokenize(_URL.sub(" ", text))) <= 6:
        return True
    return bool(_GENERIC_CLAIM.search(text)) and not has_name_or_number(text) and not figures(text)


@dataclass(frozen=True)
class Sentence:
    """One sentence of a paper: its text and character span in the abstract."""

    paper_id: str
    text: str
    start: int
    end: int


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


_DEFAULTS = SentenceCalibration()


def term_weights(terms, lexical: LexicalIndex | None, named=frozenset(),
                 name_weight: float = _DEFAULTS.name_term_weight) -> dict[str, float]:
    """Stemmed terms (a Question's ``terms``) → weight: idf, times ``name_weight`` for the terms in
    ``named`` (a Question's ``name_terms``: names and numbers such as 'PEER', '73ms')."""
    weights = {}
    for t in terms:
        w = lexical.idf(t) if lexical is not None else 1.0
        weights[t] = w * (name_weight if t in named else 1.0)
    return weights


def question_weights(question: Question, lexical: LexicalIndex | None,
                     name_weight: float = _DEFAULTS.name_term_weight) -> dict[str, float]:
    """:func:`term_weights` of a question's own terms."""
    return term_weights(question.terms, lexical, question.name_terms, name_weight)


def lexical_coverage(sentence: str, weights: dict[str, float]) -> float:
    """Weighted share of the question's terms present in ``sentence``, in [0, 1]."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    present = set(tokenize(sentence))
    return sum(w for t, w in weights.items() if t in present) / total


def score_sentences(question: Question, qvec: np.ndarray, sentences: list[Sentence], vecs: np.ndarray,
                    weights: dict[str, float], cal: SentenceCalibration | None = None) -> np.ndarray:
    """Hybrid support score of each sentence for ``question``: shape ``(len(sentences),)``.

    ``cos(q, s) + lexical_weight·coverage(s) + number_bonus·[quantity question ∧ s has a figure]
    + number_bonus·[s repeats a count the question names ("which three …")]
    + result_bonus·[s reports a finding] + position_weight·relative position
    − centrality_penalty·cos(s, abstract centroid)
    − brevity_penalty·(max(0, 1 − content terms(s) / min_terms) + [s is a stock claim of success])``.
    The result, position and centrality terms encode that a question naming a paper by its gist asks
    about a detail, and details sit in later, less central, result-reporting sentences rather than the
    opening summary. A question that names something (an acronym, a CamelCase or digit-bearing token)
    adds ``name_bonus`` to the sentences that contain a name it names; one that asks what a named thing
    is ("What is SyPE?", "How does U2A work?") instead of a detail halves the cosine, drops the result,
    position and centrality terms and adds ``name_bonus`` again to the sentences that introduce a name
    it names ("we propose OmniMoE", "CABS stands for") and twice that to those that spell it out
    ("multinomial logit (MNL)").
    The weights are ``cal`` (``Settings.calibration.sentences``; defaults when None). They were set on the
    lookup questions of dev.jsonl (14 of 17 gold sentences first with the
    contextual sentence vectors stored at ingest; dense alone: 6).
    """
    n = len(sentences)
    if not n:
        return np.zeros(0, dtype=np.float32)
    cal = cal or _DEFAULTS
    lexical_weight, number_bonus, result_bonus = cal.lexical_weight, cal.number_bonus, cal.result_bonus
    position_weight, centrality_penalty, brevity_penalty = cal.position_weight, cal.centrality_penalty, cal.brevity_penalty
    min_terms, name_bonus = cal.min_terms, cal.name_bonus
    names = question.names
    definition = question.definition
    # "What is the main contribution of OmniMoE?" says little beyond the name: its cosines to the
    # sentences are mostly noise (0.52 for a result sentence, 0.22 for "we propose OmniMoE, …").
    dense = (cal.definition_dense_scale if definition else 1.0) * (vecs @ qvec)
    lex = np.array([lexical_coverage(s.text, weights) for s in sentences], dtype=np.float32)
    score = dense + lexical_weight * lex
    if question.quantity:
        # Only figures the question does not already state can answer it ("360-degree" is not an answer).
        score += np.array([number_bonus if figures(s.text) - question.figures else 0.0 for s in sentences],
                          dtype=np.float32)
    # A name inside a link ("vla-leaderboard-01.vercel.app") does not mention it.
    named = np.array([bool(names) and names_in(names, _URL.sub(" ", s.text)) for s in sentences], dtype=bool)
    if definition:
        # "we propose OmniMoE, …" answers "What is OmniMoE?" whatever the cosines say, and the
        # spelled-out name ("multinomial logit (MNL)") does best of all.
        score += name_bonus * named
        expands = [re.compile(rf"\w[\w\s-]{{3,}}\(\s*{re.escape(n)}s?\s*\)", re.I) for n in names]
        score += name_bonus * (named & np.array([bool(_INTRODUCES.search(s.text)) for s in sentences], dtype=bool))
        score += 2 * name_bonus * np.array([any(e.search(s.text) for e in expands) for s in sentences], dtype=bool)
    else:
        score += np.array([result_bonus if _RESULT_CUE.search(s.text) else 0.0 for s in sentences], dtype=np.float32)
    # "Which three abilities…": a sentence enumerating the same count is likely the answer.
    if question.counts:
        score += np.array([number_bonus if question.counts & counts(s.text) else 0.0
                           for s in sentences], dtype=np.float32)
    if not definition:
        score += position_weight * (np.arange(n, dtype=np.float32) / max(1, n - 1))
    # A contextual sentence vector carries its chunk's meaning, so filler ("We show more in Sec. 5.")
    # scores like its neighbours; a sentence with few content terms cannot hold much of an answer.
    terms = np.array([len(tokenize(_URL.sub(" ", s.text))) for s in sentences], dtype=np.float32)
    score -= brevity_penalty * np.clip(1.0 - terms / min_terms, 0.0, 1.0)
    score -= brevity_penalty * np.array([is_generic_claim(s.text) for s in sentences], dtype=np.float32)
    if definition:
        return score
    centroid = vecs.mean(axis=0)
    centroid /= np.linalg.norm(centroid) or 1.0
    return score - centrality_penalty * (vecs @ centroid)


def best_sentence(question: Question, qvec: np.ndarray, sentences: list[Sentence], vecs: np.ndarray,
                  weights: dict[str, float], cal: SentenceCalibration | None = None) -> tuple[Sentence | None, float]:
    """The sentence that best supports ``question`` and its hybrid score (None, 0.0 when no sentences)."""
    scores = score_sentences(question, qvec, sentences, vecs, weights, cal)
    if scores.size == 0:
        return None, 0.0
    i = int(np.argmax(scores))
    return sentences[i], float(scores[i])


def score_papers(question: Question, qvec: np.ndarray, papers: list, sentences: dict, lexical: LexicalIndex | None,
                 cal: SentenceCalibration | None = None, topic_margin: float = 0.10,
                 relevance_vec: np.ndarray | None = None, topical: bool = False,
                 shown: dict[str, set[str]] | None = None) -> tuple[dict, dict[str, RelevanceEvidence]]:
    """Best supporting sentence and relevance evidence for each paper (``papers``: ScoredPaper records,
    ``sentences``: :meth:`SentenceCache.get` of their papers).

    ``relevance_vec`` (default ``qvec``) is what the ``sentence`` evidence of the judge is measured
    against, and the question's topic the text its ``coverage`` counts. With ``topical`` (a list
    question, ``relevance_vec`` its topic) the quoted sentence is chosen among those within
    ``topic_margin`` of the paper's best cosine to the topic: the quote should show the paper is on the
    topic, and the detail cues of score_sentences alone picked result or filler sentences ("We
    validate the proposed method through extensive experiments…"). ``shown`` (paper id → sentences
    quoted before) are quoted again only if a paper has no other sentence.
    Returns ``({id: (sentence, score)}, {id: RelevanceEvidence})``.
    """
    cal = cal or _DEFAULTS
    rvec = qvec if relevance_vec is None else relevance_vec
    weights = question_weights(question, lexical, cal.name_term_weight)
    content = content_weights(weights if question.topic == question.text
                              else term_weights(question.topic_terms, lexical, question.name_terms, cal.name_term_weight))
    names = question.names
    evidence, relevance = {}, {}
    for p in papers:
        sents, vecs = sentences[p.id]
        if not sents:
            evidence[p.id] = (None, 0.0)
            relevance[p.id] = RelevanceEvidence(p.dense, 0.0, p.bm25, False)
            continue
        scores = score_sentences(question, qvec, sents, vecs, weights, cal)
        on_topic = vecs @ rvec
        if topical:
            scores = np.where(on_topic >= on_topic.max() - topic_margin, scores, -np.inf)
        if shown and p.id in shown and len(sents) > 1:
            scores = np.where([x.text in shown[p.id] for x in sents], -np.inf, scores)
        i = int(np.argmax(scores))
        evidence[p.id] = (sents[i], float(scores[i]))
        dense = p.dense if p.dense else float(np.max(vecs @ qvec))
        text = p.paper.searchable()
        relevance[p.id] = RelevanceEvidence(dense, float(np.max(on_topic)), p.bm25,
                                            bool(names) and names_in(names, text), lexical_coverage(text, content))
    return evidence, relevance
