"""The evidence ranker's features: one row per sentence of an abstract for a question (:data:`SENTENCE_FEATURES`).

Read by the ranker (assistant.evidence.ranker, assistant.relevance.learned) at training (:mod:`assistant.learning.train`) and at answer
time, from what the index already stores: the contextual sentence vectors (vectorstore.chunks.sentences) and the
BM25 index's idf (through :class:`assistant.evidence.cues.Cues`). The regular expressions are *cues*: each is
one named feature the ranker weighs (or ignores); none decides anything on its own.

Shape: :func:`sentence_features` gives ``(n_sentences, len(SENTENCE_FEATURES))`` float32.
"""

from __future__ import annotations

import re

import numpy as np

from assistant.evidence.answer_types import SHARE, new_names, sentence_answer_types
from assistant.evidence.cues import Cues
from assistant.evidence.sentences import Sentence, is_generic_claim
from assistant.question import URL as _URL, counts, coverage, figures, names_in

# Sentences that report findings; a detail asked about a paper is usually stated in one of them.
_RESULT_CUE = re.compile(
    r"\b(experiment\w*|result\w*|demonstrat\w*|show\w*|outperform\w*|achiev\w*|evaluat\w*|stud(y|ies)|"
    r"empirical\w*|find\w*|benchmark\w*|reveal\w*|confirm\w*|attain\w*)\b", re.I)
# A sentence that introduces a name ("we propose OmniMoE", "CABS stands for").
_INTRODUCES = re.compile(r"\b(?:we (?:\w+ )?(?:propose|introduce|present|develop|design|build)|stands? for|called|named|"
                         r"termed|dubbed)\b", re.I)


SENTENCE_FEATURES = (
    "cos",              # cosine of the question to the sentence's contextual vector
    "cos_gap",          # cos − the paper's best cos (≤ 0)
    "coverage",         # idf-weighted share of the question's terms in the sentence
    "coverage_gap",     # coverage − the paper's best coverage (≤ 0)
    "content_coverage",  # the same without framing words
    "matched_idf",      # Σ idf of the question's terms in the sentence / max idf (a BM25 without length norm)
    "name",             # the sentence holds a name the question names
    "quantity_figure",  # the question asks a quantity and the sentence states a figure the question does not
    "count",            # the sentence repeats a count the question names ("which three …")
    "result",           # the sentence reports a finding
    "definition_name",  # a "what is X" question and the sentence holds X
    "definition_intro",  # … and introduces it ("we propose X")
    "definition_expand",  # … and spells it out ("multinomial logit (MNL)")
    "definition_cos",   # cos for a "what is X" question (whose cosines say little beyond the name)
    "definition_position",  # position, centrality, residual_cos and result for a "what is X" question: the
    "definition_centrality",  # detail cues of lookups, which a definition's answer need not follow
    "definition_residual",
    "definition_result",
    "position",         # index / (n − 1)
    "first",            # the abstract's first sentence
    "last",             # its last sentence
    "short",            # max(0, 1 − content terms / 6)
    "log_terms",        # ln(1 + content terms)
    "generic",          # a stock claim of success, or mostly a link
    "centrality",       # cosine of the sentence to the abstract's mean sentence vector
    "residual_cos",     # cosine of question and sentence with the abstract's mean direction taken out of both
    "residual_gap",     # residual_cos − the paper's best
    "rarest_match",     # the largest idf (/ max idf) among the question's terms in the sentence
    "ask_cos",          # cosine of the question's asking clause (Cues.ask) to the sentence
    "ask_cos_gap",      # ask_cos − the paper's best
    "ask_coverage",     # idf-weighted share of the asking clause's terms in the sentence
    "exclusive_coverage",  # share of the question's terms found in this sentence and no other of the abstract
    # Expected answer type (Question.answer_type) × what the sentence can answer (sentence_answer_types):
    "type_quantity",    # a quantity asked, and the sentence states a figure, share or speed-up the question does not
    "type_name",        # a named thing asked ("which datasets …"), and the sentence names something the question does not
    "type_reason",      # a reason asked, and the sentence has a causal connective
    "type_manner",      # a "how does …" asked, and the sentence states a means ("by", "via", "using")
    "type_condition",   # "when …?" asked, and the sentence states a condition
    "type_definition",  # what a named thing is asked, and the sentence introduces or spells out the name
    "percent_asked",    # a quantity asked or cued ("eleven times faster"), and the sentence holds a %, × or "times"
    "new_names",        # ln(1 + names in the sentence that the question does not hold)
    "new_names_asked",  # new_names when a named thing is asked
    "novelty",          # share of the sentence's terms the question does not hold
    "description_coverage",  # coverage of the question's terms outside its asking clause (the paper's description)
    "ask_only_coverage",  # coverage of the asking clause's terms that the description does not repeat
    "rest_coverage",    # coverage of the question's content terms outside its names (which every sentence of the paper is about)
    "ask_fuzzy",        # share of the asking clause's terms outside names matched by a 5-letter stem prefix ("assumption" ~ "assumed")
    "count_asked",      # "how many …?" asked, and the sentence states a count the question does not (a share answers "how much")
)
_TYPED = ("quantity", "name", "reason", "manner", "condition", "definition")


def sentence_features(cues: Cues, qvec: np.ndarray, sents: list[Sentence], vecs: np.ndarray) -> np.ndarray:
    """Features (:data:`SENTENCE_FEATURES`) of each sentence of one abstract for the question.

    ``sents``: the abstract's sentences in order (their terms are read, not tokenized again); ``vecs``: their
    unit vectors ``(n, dim)``; ``qvec`` the question's unit vector ``(dim,)``. Returns float32
    ``(n, len(SENTENCE_FEATURES))``. (Sentences
    encoded one by one, out of context, were tried as well: no gain in cross-validation, and 5 papers'
    sentences encoded per question cost about a second on a loaded 2-core machine.)
    """
    n = len(sents)
    out = np.zeros((n, len(SENTENCE_FEATURES)), dtype=np.float32)
    if not n:
        return out
    texts = [s.text for s in sents]
    cos = vecs @ qvec
    terms = [s.terms for s in sents]
    cov = np.array([coverage(s, cues.weights) for s in terms], dtype=np.float32)
    ccov = np.array([coverage(s, cues.content) for s in terms], dtype=np.float32)
    matched = np.array([sum(w for t, w in cues.weights.items() if t in s) for s in terms], dtype=np.float32)
    n_terms = np.array([s.n_terms for s in sents], dtype=np.float32)
    named = np.array([bool(cues.names) and names_in(cues.names, _URL.sub(" ", t)) for t in texts], dtype=np.float32)
    centroid = vecs.mean(axis=0)
    centroid = centroid / (np.linalg.norm(centroid) or 1.0)
    d = float(cues.definition)
    q_res = qvec - (qvec @ centroid) * centroid
    s_res = vecs - np.outer(vecs @ centroid, centroid)
    res = (s_res @ q_res) / (np.linalg.norm(s_res, axis=1) * (np.linalg.norm(q_res) or 1.0) + 1e-9)
    avec = qvec if cues.ask_vec is None else cues.ask_vec
    ask_cos = vecs @ avec
    seen: dict[str, int] = {}  # term → sentences holding it
    for st in terms:
        for t in st:
            seen[t] = seen.get(t, 0) + 1
    exclusive = np.array([coverage({t for t in st if seen[t] == 1}, cues.weights) for st in terms], dtype=np.float32)
    rarest = np.array([max((w for t, w in cues.weights.items() if t in s), default=0.0) for s in terms],
                      dtype=np.float32) / cues.max_idf
    cols = {
        "cos": cos,
        "cos_gap": cos - cos.max(),
        "coverage": cov,
        "coverage_gap": cov - cov.max(),
        "content_coverage": ccov,
        "matched_idf": matched / cues.max_idf,
        "name": named,
        "quantity_figure": [float(cues.quantity and bool(figures(t) - cues.known_figures)) for t in texts],
        "count": [float(bool(cues.counts & counts(t))) for t in texts],
        "result": [float(bool(_RESULT_CUE.search(t))) for t in texts],
        "definition_name": d * named,
        "definition_intro": d * named * np.array([bool(_INTRODUCES.search(t)) for t in texts], dtype=np.float32),
        "definition_expand": [d * float(any(e.search(t) for e in cues.expands)) for t in texts],
        "definition_cos": d * cos,
        "definition_position": d * np.arange(n, dtype=np.float32) / max(1, n - 1),
        "definition_centrality": d * (vecs @ centroid),
        "definition_residual": d * res,
        "definition_result": [d * float(bool(_RESULT_CUE.search(t))) for t in texts],
        "position": np.arange(n, dtype=np.float32) / max(1, n - 1),
        "first": np.arange(n) == 0,
        "last": np.arange(n) == n - 1,
        "short": np.clip(1.0 - n_terms / 6.0, 0.0, 1.0),
        "log_terms": np.log1p(n_terms),
        "generic": [float(is_generic_claim(s.text, s.n_terms)) for s in sents],
        "centrality": vecs @ centroid,
        "residual_cos": res,
        "residual_gap": res - res.max(),
        "rarest_match": rarest,
        "ask_cos": ask_cos,
        "ask_cos_gap": ask_cos - ask_cos.max(),
        "ask_coverage": [coverage(st, cues.ask_weights) for st in terms],
        "exclusive_coverage": exclusive,
    }
    cols.update(_answer_columns(cues, texts, terms))
    for j, name in enumerate(SENTENCE_FEATURES):
        out[:, j] = np.asarray(cols[name], dtype=np.float32)
    return out


def _answer_columns(cues: Cues, texts: list[str], terms: list[frozenset[str]]) -> dict[str, np.ndarray]:
    """The answer-type and description/asking-clause columns of :func:`sentence_features`."""
    q = cues.analysis
    asked = q.answer_type if q is not None else "other"
    kinds = [sentence_answer_types(t, q) if q is not None else frozenset() for t in texts]
    cols = {f"type_{t}": np.array([float(asked == t and t in k) for k in kinds], dtype=np.float32) for t in _TYPED}
    share = np.array([bool(SHARE.search(t)) for t in texts], dtype=np.float32)
    cols["percent_asked"] = share * (asked == "quantity" or cues.quantity)
    new = np.log1p([len(new_names(t, q)) if q is not None else 0 for t in texts]).astype(np.float32)
    cols["new_names"], cols["new_names_asked"] = new, new * (asked == "name")
    own = set(cues.weights)
    cols["novelty"] = np.array([len(st - own) / max(1, len(st)) for st in terms], dtype=np.float32)
    cols["description_coverage"] = np.array([coverage(st, cues.description) for st in terms], dtype=np.float32)
    cols["ask_only_coverage"] = np.array([coverage(st, cues.ask_only) for st in terms], dtype=np.float32)
    cols["rest_coverage"] = np.array([coverage(st, cues.rest) for st in terms], dtype=np.float32)
    cols["ask_fuzzy"] = np.array([coverage({t[:5] for t in st}, cues.ask_rest) for st in terms], dtype=np.float32)
    many = bool(re.match(r"^\W*how\s+many\b", cues.ask, re.I))
    asked_counts = cues.counts | cues.known_figures
    cols["count_asked"] = np.array([float(many and bool(counts(t) - asked_counts)) for t in texts], dtype=np.float32)
    return cols
