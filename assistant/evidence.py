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

from assistant.relevance import names_in, question_names
from vectorstore.chunking import Chunker, sentence_spans
from vectorstore.embedding import Encoder
from vectorstore.sentences import embed_chunks, merge_paper, spans_by_chunk, unpack
from vectorstore.lexical import LexicalIndex, tokenize
from vectorstore.papers import Paper

_QUANTITY_CUE = re.compile(
    r"\b(how (much|many|fast|large|long|often|big)|what (share|fraction|percentage|proportion|latenc\w*|speed\w*|"
    r"gain|number)|by how|margin|speed-?up|latenc\w*|percent\w*|times faster)\b", re.I)
# Sentences that report findings; a detail asked about a paper is usually stated in one of them.
_RESULT_CUE = re.compile(
    r"\b(experiment\w*|result\w*|demonstrat\w*|show\w*|outperform\w*|achiev\w*|evaluat\w*|stud(y|ies)|"
    r"empirical\w*|find\w*|benchmark\w*|reveal\w*|confirm\w*|attain\w*)\b", re.I)
_NUMBER_WORDS = r"(?:two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|dozens?|hundreds?|thousands?|millions?|billions?)"
_FIGURE = re.compile(rf"\d+(?:\.\d+)?|\b{_NUMBER_WORDS}\b", re.I)
# A count ("three abilities", "5 tasks"), not a number inside a modifier or measure ("360-degree", "3-D", "90%", "1.5").
_COUNT = re.compile(rf"(?<![\w.-])(\d+|{_NUMBER_WORDS})(?![\w°%-]|\.\d)", re.I)
# Cross-references ("Sec. 5", "Table 2", "Eq. (3)") and bracketed citations are not quantities.
_XREF = re.compile(r"\b(?:sec(?:tion)?s?|fig(?:ure)?s?|eqs?|equations?|tab(?:le)?s?|appendix|app|thm|theorems?|"
                   r"lemmas?|alg(?:orithm)?s?|chapters?|ch)\.?\s*\(?\d+(?:\.\d+)*\)?|\[\d+(?:[,\u2013-]\s*\d+)*\]", re.I)

# A link or a code-availability pointer states no finding ("Code is at https://github.com/x/y.").
_URL = re.compile(r"\b(?:https?://|www\.)\S+|\b\S+\.(?:com|org|io|net)/\S*", re.I)
_NAMED = re.compile(r"[A-Za-z]*[A-Z][A-Za-z]*[A-Z0-9][\w-]*|\w*\d\w*")
# "What is SyPE?", "What does CABS stand for?", "How does U2A work?": the question asks what a named
# thing is (its words, once the names are taken out, are only these); the answer is the sentence
# that introduces the name, not a result sentence. "What is the baseline model in TMD-Bench?" asks a detail.
_DEFINITION_FRAME = re.compile(
    r"\W*(?:what(?:'s| is| are)(?: the| an?)?(?: (?:main|key|core) (?:idea|contribution|point) of(?: the)?)?|"
    r"what does(?: the)?|how do(?:es)?(?: the)?|(?:explain|describe|define)(?: the)?|tell me about(?: the)?)"
    r" \W*N(?:,? (?:and |or )?\W*N)*(?: (?:stand for|mean|do|work))?\W*", re.I)


def is_definition_question(question: str, names: list[str]) -> bool:
    """True when ``question`` asks what the named things are ("What is SyPE?", "What does CABS stand
    for?", "How does U2A work?", "What is the main contribution of OmniMoE?"), not a detail about them."""
    if not names:
        return False
    masked = re.sub("|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)), "N", question)
    return bool(_DEFINITION_FRAME.fullmatch(" ".join(masked.split())))


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
    return bool(_GENERIC_CLAIM.search(text)) and not _NAMED.search(text) and not _figures(text)


def _figures(text: str) -> set[str]:
    """Figures in ``text`` (numbers and number words), cross-references left out."""
    return {m.lower() for m in _FIGURE.findall(_XREF.sub(" ", text))}


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

    def __init__(self, encoder: Encoder, store=None, capacity: int = 4096):
        self.encoder = encoder
        self.store = store
        self.capacity = capacity
        self._chunker = Chunker(encoder.count_tokens, encoder.max_tokens)
        self._data: OrderedDict[str, tuple[list[Sentence], np.ndarray]] = OrderedDict()
        self._alone: OrderedDict[str, np.ndarray] = OrderedDict()
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

    def alone(self, paper: Paper) -> np.ndarray:
        """The paper's sentences encoded one by one, not in context: ``(n_sentences, dim)`` unit vectors
        (a contextual vector carries its chunk's gist; alone, a sentence says only what it says).
        Computed at question time (one encoder call per paper) and cached like :meth:`get`."""
        key = f"{paper.id}\x00{hash(paper.text)}"
        with self._lock:
            if key in self._alone:
                self._alone.move_to_end(key)
                return self._alone[key]
        texts = [paper.text[s:e] for s, e in sentence_spans(paper.text)]
        vecs = self.encoder.encode(texts) if texts else np.zeros((0, self.encoder.dim), np.float32)
        with self._lock:
            self._alone[key] = vecs
            while len(self._alone) > self.capacity:
                self._alone.popitem(last=False)
        return vecs

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


def term_weights(question: str, lexical: LexicalIndex | None) -> dict[str, float]:
    """Stemmed question terms → weight (idf, doubled for names/numbers such as 'PEER', '73ms')."""
    named = {t for t in tokenize(" ".join(_NAMED.findall(question)))}
    weights = {}
    for t in tokenize(question):
        w = lexical.idf(t) if lexical is not None else 1.0
        weights[t] = w * (2.0 if t in named else 1.0)
    return weights


def lexical_coverage(sentence: str, weights: dict[str, float]) -> float:
    """Weighted share of the question's terms present in ``sentence``, in [0, 1]."""
    total = sum(weights.values())
    if total <= 0:
        return 0.0
    present = set(tokenize(sentence))
    return sum(w for t, w in weights.items() if t in present) / total


def score_sentences(question: str, qvec: np.ndarray, sentences: list[Sentence], vecs: np.ndarray,
                    weights: dict[str, float], lexical_weight: float = 0.25, number_bonus: float = 0.3,
                    result_bonus: float = 0.1, position_weight: float = 0.2,
                    centrality_penalty: float = 0.5, brevity_penalty: float = 0.3,
                    min_terms: int = 6, name_bonus: float = 0.3) -> np.ndarray:
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
    Weights were set on the lookup questions of dev.jsonl (14 of 17 gold sentences first with the
    contextual sentence vectors stored at ingest; dense alone: 6).
    """
    n = len(sentences)
    if not n:
        return np.zeros(0, dtype=np.float32)
    names = question_names(question)
    definition = is_definition_question(question, names)
    # "What is the main contribution of OmniMoE?" says little beyond the name: its cosines to the
    # sentences are mostly noise (0.52 for a result sentence, 0.22 for "we propose OmniMoE, …").
    dense = (0.5 if definition else 1.0) * (vecs @ qvec)
    lex = np.array([lexical_coverage(s.text, weights) for s in sentences], dtype=np.float32)
    score = dense + lexical_weight * lex
    if _QUANTITY_CUE.search(question):
        # Only figures the question does not already state can answer it ("360-degree" is not an answer).
        known = _figures(question)
        score += np.array([number_bonus if _figures(s.text) - known else 0.0 for s in sentences], dtype=np.float32)
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
    counts = {c.lower() for c in _COUNT.findall(question)}
    if counts:
        score += np.array([number_bonus if counts & {c.lower() for c in _COUNT.findall(s.text)} else 0.0
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


def best_sentence(question: str, qvec: np.ndarray, sentences: list[Sentence], vecs: np.ndarray,
                  weights: dict[str, float]) -> tuple[Sentence | None, float]:
    """The sentence that best supports ``question`` and its hybrid score (None, 0.0 when no sentences)."""
    scores = score_sentences(question, qvec, sentences, vecs, weights)
    if scores.size == 0:
        return None, 0.0
    i = int(np.argmax(scores))
    return sentences[i], float(scores[i])
