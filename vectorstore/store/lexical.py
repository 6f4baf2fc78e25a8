"""BM25 over the same chunks as the dense index (each read with its paper's title), persisted beside the Chroma index.

Built with bm25s (Lù 2024, "BM25S: Orders of magnitude faster lexical search via eager sparse
scoring"), Lucene's BM25 variant, k1=1.5, b=0.75. Tokens: lower-cased words of 2+ characters
(hyphenated names are also kept whole, so "VGrounding-QA" matches as one term and as its parts),
English stop words removed, Snowball-stemmed. The index is rebuilt from the store whenever the
store's state stamp changes, so every ingest, update and delete keeps it in sync.
"""

from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from vectorstore.store.cachedir import not_a_file, replace_folder

FORMAT = 8
"""Version of the saved layout and the tokenizer (4: CJK bigrams; 5: chunks with titles; 6: the
corpus' names; 7: NFKC, so PDF ligatures such as "ﬁ" match "fi"; 8: a checksum, :func:`checksum`); a saved
index of another version is rebuilt."""

NAME = re.compile(r"(?<![A-Za-z0-9_-])(?:[A-Za-z]*[A-Z][A-Za-z]*[A-Z0-9][A-Za-z0-9_-]*|[A-Za-z]+\d[A-Za-z0-9_-]*)(?![A-Za-z0-9_-])")
"""A name-like token: an acronym, CamelCase or digit-bearing word ("SyPE", "OmniMoE", "U2A", "GPT-4")."""
_LOWER_WORD = re.compile(r"(?<![A-Za-z0-9_])[a-z][a-z0-9]*(?![A-Za-z0-9_])")  # "peer-to-peer" holds "peer"


def corpus_names(texts) -> dict[str, str]:
    """``{lower case: spelling}`` of the name-like tokens (:data:`NAME`) in ``texts``, each spelled as
    the texts spell it most often. A token whose lower-case form also occurs as a plain word is left
    out ("PEER" the baseline vs "peer" the word), so only unambiguous names are recognized in any case."""
    spellings: dict[str, Counter] = {}
    plain: set[str] = set()
    for text in map(nfkc, texts):
        for m in NAME.finditer(text):
            spellings.setdefault(m.group(0).lower(), Counter())[m.group(0)] += 1
        plain.update(m.group(0) for m in _LOWER_WORD.finditer(text))
    return {low: c.most_common(1)[0][0] for low, c in spellings.items() if low not in plain}

_WORD = re.compile(r"(?u)\b\w[\w\-]*\w\b|\b\w\w\b")
# CJK scripts write no spaces, so "什么是SyPE" must be cut where the script changes.
_SCRIPT_CHANGE = re.compile(r"(?<=[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef])(?=[A-Za-z0-9])|"
                            r"(?<=[A-Za-z0-9])(?=[\u3000-\u9fff\uac00-\ud7af\uff00-\uffef])")


_CJK_RUN = re.compile(r"^[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]+$")


def _cjk_bigrams(word: str) -> list[str]:
    """Overlapping character bigrams of a run of CJK characters (a word segmenter's cheap stand-in:
    "强化学习" → 强化 化学 学习), the usual way to index scripts without spaces."""
    return [word] if len(word) < 2 else [word[i : i + 2] for i in range(len(word) - 1)]


@lru_cache(maxsize=1)
def _stemmer():
    import Stemmer

    return Stemmer.Stemmer("english")


@lru_cache(maxsize=1)
def _stopwords() -> frozenset[str]:
    from bm25s.stopwords import STOPWORDS_EN

    return frozenset(STOPWORDS_EN)


def nfkc(text: str) -> str:
    """``text`` in Unicode NFKC: PDF ligatures ("eﬃcient") and full-width letters become plain ones.
    ASCII text (most abstracts and questions) is returned as it is, without a pass over it."""
    return text if text.isascii() else unicodedata.normalize("NFKC", text)


def tokenize(text: str) -> list[str]:
    """BM25 terms of ``text`` (read as :func:`nfkc`): stemmed, stop words dropped; a hyphenated word
    yields itself and its parts; a run of Chinese, Japanese or Korean characters yields its character bigrams."""
    stop = _stopwords()
    words = []
    for m in _WORD.finditer(_SCRIPT_CHANGE.sub(" ", nfkc(text).lower())):
        w = m.group(0)
        if _CJK_RUN.match(w):
            words.extend(_cjk_bigrams(w))
            continue
        if "-" in w:
            words.extend(p for p in w.split("-") if len(p) > 1)
        words.append(w)
    words = [w for w in words if w not in stop]
    return _stemmer().stemWords(words)


@dataclass
class LexicalIndex:
    """BM25 over chunks. ``chunk_ids[i]`` / ``paper_ids[i]`` name document ``i`` of the BM25 index."""

    retriever: object
    chunk_ids: list[str]
    paper_ids: list[str]
    stamp: str
    doc_freq: dict[str, int] = field(default_factory=dict)
    names: dict[str, str] = field(default_factory=dict)
    """The corpus' names by their lower-case form (:func:`corpus_names`): "omnimoe" → "OmniMoE"."""

    def idf(self, term: str) -> float:
        """BM25's idf, ``ln(1 + (N − df + 0.5) / (df + 0.5))``, of a stemmed term (unknown terms: df = 0)."""
        n = len(self.chunk_ids)
        df = self.doc_freq.get(term, 0)
        return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    @classmethod
    def build(cls, chunks: list[tuple[str, str, str]], stamp: str) -> "LexicalIndex":
        """Index ``chunks`` given as ``(chunk_id, paper_id, text)``."""
        import logging

        import bm25s

        # bm25s sets its logger to DEBUG: once a library has configured the root logger (the first ONNX export
        # does), "DEBUG:bm25s:Building index from tokens" reached stderr (a fourth hostile round).
        logging.getLogger("bm25s").setLevel(logging.WARNING)

        retriever = bm25s.BM25()
        corpus_tokens = [tokenize(t) or ["\x00empty"] for _, _, t in chunks]
        if corpus_tokens:
            retriever.index(corpus_tokens, show_progress=False)
        df = Counter(t for toks in corpus_tokens for t in set(toks))
        return cls(retriever, [c for c, _, _ in chunks], [p for _, p, _ in chunks], stamp, dict(df),
                   corpus_names(t for _, _, t in chunks))

    def save(self, folder: Path) -> None:
        """Write to ``folder`` atomically (a temp folder renamed into place), with its :func:`checksum`."""
        with replace_folder(folder) as tmp:
            if self.chunk_ids:
                self.retriever.save(str(tmp / "bm25"))
            (tmp / "ids.json").write_text(json.dumps({"format": FORMAT, "stamp": self.stamp,
                                                      "chunk_ids": self.chunk_ids, "paper_ids": self.paper_ids,
                                                      "doc_freq": self.doc_freq, "names": self.names,
                                                      "checksum": checksum(self)}))

    @classmethod
    def load(cls, folder: Path) -> "LexicalIndex | None":
        """The saved index, or None when missing, of an older format, unreadable or damaged (the caller
        rebuilds it): a damaged cache must cost a rebuild, never a failed question."""
        return cls.inspect(folder)[0]

    @classmethod
    def inspect(cls, folder: Path) -> "tuple[LexicalIndex | None, str | None]":
        """``(the saved index or None, why it is damaged or None)``. A missing folder or one of an older
        :data:`FORMAT` is no damage (rebuilt without a word); a file that cannot be read, or arrays that
        cannot be this index (:func:`_damage`), is."""
        import bm25s

        odd = not_a_file(folder)
        if odd:
            return None, "it is a file, not a folder" if odd == "." else f"{odd} is not a plain file"
        try:
            # Bounded by the arrays it indexes (2,000 papers: 0.47 MB beside 0.84 MB): a 5 GB sparse ids.json was
            # read whole, 5.4 GB of memory, before any check (an eighth hostile round).
            size, arrays = (folder / "ids.json").stat().st_size, folder / "bm25" / "data.csc.index.npy"
            if size > 4 * (arrays.stat().st_size if arrays.is_file() else 0) + 2**20:
                return None, f"ids.json is {size:,} bytes, far more than its arrays can need"
            meta = json.loads((folder / "ids.json").read_text())
        except FileNotFoundError:
            return None, None
        except PermissionError:
            return None, "ids.json cannot be read (permission denied)"
        except Exception as exc:  # noqa: BLE001 - not JSON, not UTF-8, unreadable
            return None, f"ids.json cannot be read ({type(exc).__name__})"
        if isinstance(meta, dict) and meta.get("format") != FORMAT and isinstance(meta.get("format"), int):
            return None, None  # written by another version: rebuild
        try:
            ids, pids, stamp = meta["chunk_ids"], meta["paper_ids"], meta["stamp"]
            doc_freq, names = meta.get("doc_freq", {}), meta.get("names", {})
        except Exception:  # noqa: BLE001 - [] or null or a dict without the keys
            return None, "ids.json is not a keyword index's"
        if not (_strings(ids) and _strings(pids) and len(ids) == len(pids) and isinstance(stamp, str)
                and isinstance(doc_freq, dict) and isinstance(names, dict)):
            return None, "ids.json is not a keyword index's"
        try:
            retriever = bm25s.BM25.load(str(folder / "bm25")) if ids else bm25s.BM25()
            why = _damage(retriever, len(ids), doc_freq) if ids else None
        except Exception as exc:  # noqa: BLE001 - whatever a damaged file raises (bm25s, numpy, scipy)
            why = f"its BM25 files cannot be read ({type(exc).__name__})"
        if why:
            return None, why
        loaded = cls(retriever, ids, pids, stamp, doc_freq, names)
        if meta.get("checksum") != checksum(loaded):
            # Each piece can be sound and the whole wrong: ids put in another order (each still a chunk's)
            # sent every keyword hit to another chunk, and doctor said ok (a hostile round, #35 F6).
            return None, "its checksum does not match its ids and BM25 arrays (ids or rows put in another order?)"
        return loaded, None

    def scores(self, query: str | Sequence[str]) -> np.ndarray:
        """BM25 score of every chunk for ``query`` (a text, or its :func:`tokenize` terms when the caller has
        them): float array of shape ``(len(chunk_ids),)``."""
        if not self.chunk_ids:
            return np.zeros(0, dtype=np.float32)
        vocab = self.retriever.vocab_dict
        terms = [t for t in (tokenize(query) if isinstance(query, str) else query) if t in vocab]
        if not terms:
            return np.zeros(len(self.chunk_ids), dtype=np.float32)
        return np.asarray(self.retriever.get_scores(terms), dtype=np.float32)

    def search(self, query: str | Sequence[str], n: int, allowed: set[str] | None = None) -> list[tuple[int, float]]:
        """Top ``n`` chunks as ``[(doc index, score > 0)]``, best first, for ``query`` (a text or its terms, as
        :meth:`scores`); ``allowed`` filters by paper id."""
        s = self.scores(query)
        if s.size == 0:
            return []
        if allowed is not None:
            mask = np.fromiter((p in allowed for p in self.paper_ids), bool, len(self.paper_ids))
            s = np.where(mask, s, 0.0)
        n = min(n, s.size)
        top = np.argpartition(-s, n - 1)[:n]
        top = top[np.argsort(-s[top], kind="stable")]
        return [(int(i), float(s[i])) for i in top if s[i] > 0]


def checksum(index: LexicalIndex) -> str:
    """BLAKE2b (128 bits) of ``index``'s chunk and paper ids in order, its vocabulary (term → column) and its
    BM25 arrays (``data``, ``indices``, ``indptr``): an id moved, a row moved or a weight changed gives another
    checksum (the dense cache's, :func:`vectorstore.store.dense_matrix.checksum`, for the keyword index).
    About 20 ms at 40,000 chunks."""
    import hashlib

    h = hashlib.blake2b(digest_size=16)
    h.update(json.dumps([index.chunk_ids, index.paper_ids], ensure_ascii=False).encode())
    if index.chunk_ids:
        vocab = sorted(index.retriever.vocab_dict.items())
        h.update(json.dumps(vocab, ensure_ascii=False).encode())
        for key in ("data", "indices", "indptr"):
            h.update(np.ascontiguousarray(index.retriever.scores[key]).tobytes())
    return h.hexdigest()


def _damage(retriever, n_docs: int, doc_freq: dict) -> str | None:
    """Why the loaded bm25s index ``retriever`` cannot be the one saved for ``n_docs`` chunks whose terms
    occur in ``doc_freq[term]`` of them, or None. bm25s reads its arrays as they are: random bytes over
    them (past the .npy header) or an emptied vocabulary hid papers or raised IndexError at question time.
    Its sparse matrix has a column per term (``indptr``: ``terms + 1`` non-decreasing offsets from 0 to
    the entry count), one entry per chunk holding the term (``indices``: chunk rows below ``n_docs``;
    ``data``: the term's BM25 weight there, positive and at most ``(k1 + 1) * idf``); the vocabulary maps
    each term of ``doc_freq`` (and bm25s' own empty token, after them) to its column, and a column holds
    as many entries as chunks have its term."""
    sc = retriever.scores
    data, indices, indptr = (np.asarray(sc[k]) for k in ("data", "indices", "indptr"))
    if int(sc["num_docs"]) != n_docs:
        return f"its BM25 files count {int(sc['num_docs'])} chunks, its ids {n_docs}"
    if not (indptr.ndim == data.ndim == indices.ndim == 1 and indptr.size >= 1 and data.size == indices.size
            and indptr.dtype.kind in "iu" and indices.dtype.kind in "iu" and data.dtype.kind == "f"):
        return "its BM25 arrays have the wrong shapes or types"
    steps = np.diff(indptr)
    if indptr[0] != 0 or indptr[-1] != data.size or (steps < 0).any():
        return "its BM25 column offsets (indptr) are not in order"
    if data.size and (indices.min() < 0 or indices.max() >= n_docs):
        return "its BM25 rows (indices) name chunks it does not have"
    top = (float(retriever.k1) + 1.0) * math.log(2.0 + 2.0 * n_docs)
    if not (np.isfinite(data).all() and (data > 0).all() and (data <= top).all()):
        return "its BM25 weights (data) hold values no BM25 index has"
    vocab = {t: i for t, i in retriever.vocab_dict.items() if t != ""}
    if len(vocab) != steps.size or set(vocab) != set(doc_freq):
        return f"its vocabulary holds {len(vocab)} terms, its matrix {steps.size}, its ids {len(doc_freq)}"
    cols = np.fromiter(vocab.values(), dtype=np.int64, count=len(vocab))
    want = np.fromiter((doc_freq[t] for t in vocab), dtype=np.int64, count=len(vocab))
    if cols.size and (cols.min() < 0 or cols.max() >= steps.size or np.unique(cols).size != cols.size
                      or (steps[cols] != want).any()):
        return "its vocabulary does not match its matrix"
    return None


def _strings(xs) -> bool:
    """True for a list of strings (a cache file's id lists)."""
    return isinstance(xs, list) and all(isinstance(x, str) for x in xs)
