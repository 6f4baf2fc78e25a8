"""Training pairs for the relevance cross-encoder, built by program from data the project has.

Each pair is ``(query, paper id, label, weight, kind)``: does this paper's abstract answer the query?
The kinds, all over the training corpus (``eval/train/corpus2k.jsonl``), never over the dev questions:

- ``title``: a paper's title as a topic query for its own abstract (1), and the hybrid retriever's
  next best papers for it as hard negatives (0): weak labels, InPars/GPL-style. Papers of the
  calibration questions (their gold and near misses) are left out, so no title leaks into calibration.
- ``written``: the hand-written questions (gold papers 1; near misses, the retriever's other papers
  and every paper retrieved for an unanswerable question 0).
- ``synthetic``: the "What is X?" and quantity questions of :mod:`assistant.learning.synthetic` (gold 1,
  the retriever's others 0).
- ``detail``: a named method asked about a detail its abstract does not give ("What batch size does
  X use?", checked by program: no word of the detail occurs in the abstract): 0 for its own paper.
- ``contribution``: "Which papers propose a new benchmark / dataset?": 1 for papers that say they
  introduce one, 0 for papers that only evaluate on benchmarks or datasets.
- ``topic``: broad topics made from the corpus' frequent title phrases ("reinforcement learning"):
  1 for papers whose title holds the phrase, 0 for retrieved papers whose title and abstract lack it.
- ``absent``: titles of other papers (``ml_abstracts_23k.jsonl``) with a word no training abstract
  holds, asked as "Which papers study …?": 0 for every paper the retriever returns.

Deterministic: papers and questions in id order, a fixed seed for every sample.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Pair:
    query: str
    paper_id: str
    label: int
    weight: float
    kind: str


DETAILS = (
    ("What batch size does {n} use?", ("batch",)),
    ("What learning rate was {n} trained with?", ("learning rate", "step size")),
    ("What image resolution does {n} evaluate at?", ("resolution", "pixel", "256", "512", "1024")),
    ("How many GPUs were used to train {n}?", ("gpu", "tpu", "hardware")),
    ("How long does it take to train {n}?", ("hour", "day", "wall-clock", "training time", "minutes")),
    ("Which optimizer is {n} trained with?", ("optimiz", "adam", "sgd", "gradient descent")),
    ("What dropout rate does {n} use?", ("dropout",)),
    ("How many parameters does {n} have?", ("parameter", "million", "billion")),
    ("What is the carbon footprint of training {n}?", ("carbon", "energy", "emission", "co2")),
    ("Which programming language is {n} implemented in?", ("python", "pytorch", "c++", "jax", "implement", "code")),
    ("What random seed was used in the {n} experiments?", ("seed",)),
    ("How many layers does the {n} network have?", ("layer", "depth")),
    ("Which university are the authors of {n} from?", ("universit", "institut", "lab")),
    ("What license is {n} released under?", ("licen",)),
    ("How many denoising steps does {n} skip?", ("denois", "step", "diffusion")),
    ("What weight decay does {n} use?", ("weight decay", "regulari")),
)
"""Detail questions an abstract rarely answers, with the word stems whose absence proves it does not."""

CONTRIBUTION_QUESTIONS = {
    "benchmark": ("Which papers propose a new benchmark?", "Is there work that introduces a new benchmark?",
                  "papers that release a benchmark", "Which papers contribute a new evaluation benchmark?"),
    "dataset": ("Which papers introduce a new dataset?", "Is there a paper that releases a new dataset?",
                "papers that collect and release a dataset", "Which papers propose a new dataset?"),
}
_PROPOSES = {
    w: re.compile(r"\b(?:we|We|this paper|This paper)\s+(?:\w+\s+){0,2}(?:introduce|propose|present|release|construct|"
                  r"build|create|collect|curate|contribute|develop)s?\s+(?:a|an|the)?\s*(?:[\w-]+\s+){0,4}?" + w + r"s?\b")
    for w in CONTRIBUTION_QUESTIONS}
TOPIC_FRAMES = ("Which papers study {t}?", "{t}", "papers about {t}", "Is there work on {t}?")
_WORD = re.compile(r"[a-z][a-z-]+")
_STOP = set("a an the of for and in on with to from by via using towards toward under over is are as at "
            "its their into without through learning".split())


def _retrieved(assistant, query: str, k: int) -> list[str]:
    return [p.id for p in assistant.retriever.search(query, k=k)]


def _hard_negatives(assistant, query: str, exclude: set[str], n: int, k: int = 8) -> list[str]:
    return [pid for pid in _retrieved(assistant, query, k) if pid not in exclude][:n]


def title_pairs(assistant, papers: dict, exclude: set[str], negatives: int = 2, seed: int = 0,
                limit: int | None = None) -> list[Pair]:
    """``title`` pairs for every titled paper not in ``exclude`` (see the module docstring)."""
    rng = random.Random(seed)
    ids = [pid for pid in sorted(papers) if papers[pid].title and pid not in exclude]
    if limit is not None and len(ids) > limit:
        ids = sorted(rng.sample(ids, limit))
    out = []
    for pid in ids:
        title = papers[pid].title.strip()
        out.append(Pair(title, pid, 1, 1.0, "title"))
        out += [Pair(title, o, 0, 1.0, "title") for o in _hard_negatives(assistant, title, {pid}, negatives)]
    return out


def question_pairs(assistant, questions: list[dict], kind: str, negatives: int = 3, weight: float = 1.0) -> list[Pair]:
    """``written`` / ``synthetic`` pairs: gold 1; near misses and the retriever's other papers 0."""
    out = []
    for q in questions:
        gold = set(q.get("gold") or [])
        out += [Pair(q["question"], g, 1, weight, kind) for g in sorted(gold)]
        near = [n for n in q.get("near") or [] if n not in gold]
        out += [Pair(q["question"], n, 0, weight, kind) for n in near]
        want = negatives + (2 if not gold else 0)  # an unanswerable question: every retrieved paper is a negative
        out += [Pair(q["question"], o, 0, weight, kind)
                for o in _hard_negatives(assistant, q["question"], gold | set(near), want)]
    return out


def _name_of(paper) -> str | None:
    """A paper's own name when its title gives one ("OmniMoE: …"), else its derived label if it is a name."""
    head = paper.title.split(":")[0].strip() if ":" in paper.title else ""
    # A coined name: one word with a capital or digit after its first letter ("Mem2Mem", "BAN", "OmniMoE").
    if head and len(head.split()) <= 3 and any(re.fullmatch(r"[A-Za-z][\w-]*[A-Z0-9][\w-]*", w) for w in head.split()):
        return head
    return None


def detail_pairs(papers: dict, limit: int = 400, seed: int = 0) -> list[Pair]:
    """``detail`` negatives: a named paper asked a detail none of whose stems its abstract holds."""
    rng = random.Random(seed)
    out = []
    for pid in sorted(papers):
        p = papers[pid]
        name = _name_of(p)
        if not name:
            continue
        low = (p.title + " " + p.text).lower()
        frames = [f for f, stems in DETAILS if not any(s in low for s in stems)]
        if frames:
            out.append(Pair(rng.choice(frames).format(n=name), pid, 0, 1.0, "detail"))
    rng.shuffle(out)
    return sorted(out[:limit], key=lambda x: x.paper_id)


def contribution_pairs(papers: dict, per_question: int = 12, seed: int = 0) -> list[Pair]:
    """``contribution`` pairs: proposers of a benchmark/dataset 1, papers that only use one 0."""
    rng = random.Random(seed)
    out = []
    for word, frames in CONTRIBUTION_QUESTIONS.items():
        pro = [pid for pid in sorted(papers) if _PROPOSES[word].search(papers[pid].text)]
        use = [pid for pid in sorted(papers) if pid not in pro and re.search(rf"\b{word}s?\b", papers[pid].text, re.I)]
        for frame in frames:
            for pid in rng.sample(pro, min(per_question, len(pro))):
                out.append(Pair(frame, pid, 1, 1.0, "contribution"))
            for pid in rng.sample(use, min(per_question, len(use))):
                out.append(Pair(frame, pid, 0, 1.0, "contribution"))
    return out


def frequent_phrases(papers: dict, n: int = 40, min_papers: int = 8) -> list[str]:
    """The ``n`` most frequent two- and three-word title phrases (no stop word at either end)."""
    counts: Counter[str] = Counter()
    for p in papers.values():
        words = _WORD.findall(p.title.lower())
        grams = {" ".join(words[i:i + k]) for k in (2, 3) for i in range(len(words) - k + 1)}
        counts.update(g for g in grams if g.split()[0] not in _STOP and g.split()[-1] not in _STOP)
    return [g for g, c in counts.most_common(4 * n) if c >= min_papers][:n]


def topic_pairs(assistant, papers: dict, n_topics: int = 40, per_side: int = 5, seed: int = 0) -> list[Pair]:
    """``topic`` pairs (see the module docstring)."""
    rng = random.Random(seed)
    out = []
    for i, phrase in enumerate(frequent_phrases(papers, n_topics)):
        frame = TOPIC_FRAMES[i % len(TOPIC_FRAMES)]
        query = frame.format(t=phrase)
        pos = [pid for pid in sorted(papers) if phrase in papers[pid].title.lower()]
        retrieved = _retrieved(assistant, phrase, 30)
        neg = [pid for pid in retrieved
               if phrase not in (papers[pid].title + " " + papers[pid].text).lower()][:per_side]
        out += [Pair(query, pid, 1, 1.0, "topic") for pid in rng.sample(pos, min(per_side, len(pos)))]
        out += [Pair(query, pid, 0, 1.0, "topic") for pid in neg]
    return out


def absent_pairs(assistant, papers: dict, others: Path | None, limit: int = 250, negatives: int = 2,
                 seed: int = 0) -> list[Pair]:
    """``absent`` negatives: titles of ``others`` (a JSONL of papers) holding a word no paper of
    ``papers`` holds, asked as topics; every paper retrieved for them is a negative."""
    if others is None or not Path(others).is_file():
        return []
    vocab = set()
    for p in papers.values():
        vocab.update(_WORD.findall((p.title + " " + p.text).lower()))
    rng = random.Random(seed)
    titles = []
    with open(others, encoding="utf-8") as fh:
        for line in fh:
            try:
                t = (json.loads(line).get("title") or "").strip()
            except ValueError:
                continue
            words = [w for w in _WORD.findall(t.lower()) if len(w) >= 6 and w not in _STOP]
            if 3 <= len(t.split()) <= 14 and any(w not in vocab for w in words):
                titles.append(t)
    titles = sorted(set(titles))
    out = []
    for t in rng.sample(titles, min(limit, len(titles))):
        query = rng.choice(TOPIC_FRAMES[:1] + TOPIC_FRAMES[2:]).format(t=t[0].lower() + t[1:])
        out += [Pair(query, pid, 0, 1.0, "absent") for pid in _retrieved(assistant, query, negatives)]
    return out


DESCRIBED_FRAMES = ("Is there work that {d}?", "Which paper {d}?", "{d}", "looking for a paper that {d}",
                    "Is there a method that {d}?")
_LEAD = re.compile(r"^(?:(?:in|In) this (?:paper|work),?\s*)?(?:we|We)\s+(?:(?:also|then|further|first|here)\s+)?"
                   r"(?P<verb>propose|introduce|present|develop|design|study|investigate|extend|prove|show|analy[sz]e|derive|"
                   r"provide|describe|formulate|establish|consider|address|tackle|demonstrate|leverage|build|construct|"
                   r"identify|explore|offer|characteri[sz]e|focus|learn|train|apply|use|combine|generali[sz]e)s?\b")
_CODED = re.compile(r"[A-Za-z]*[A-Z0-9][a-z]*[A-Z0-9][\w-]*|\S*\d\S*")
"""Coined names, acronyms and numbers ("OmniMoE", "BERT", "2.5x"): what a researcher who half-remembers a paper does not recall."""


def _third_person(verb: str) -> str:
    if verb.endswith("s"):
        return verb
    return verb[:-1] + "ies" if verb.endswith("y") else verb + ("es" if verb.endswith(("sh", "ch", "x")) else "s")


def _unnamed(sentence: str, rare: set[str]) -> str:
    """``sentence`` without coined names, acronyms, numbers and words rarer than the corpus' (its own
    terms), and without a parenthesis left empty."""
    words = [w for w in sentence.rstrip(".").split()
             if not _CODED.fullmatch(w.strip("(),;:")) and w.strip("(),;:").lower() not in rare]
    return re.sub(r"\(\s*\)|\s+(?=[,;:)])", "", " ".join(words)).strip(" ,;:")


def described_pairs(assistant, papers: dict, exclude: set[str], limit: int = 1200, negatives: int = 2,
                    seed: int = 0) -> list[Pair]:
    """``described`` pairs: a paper described the way the written concept questions ask, without its
    name, made by program from its own abstract (weak labels in the InPars/doc2query spirit): a sentence
    that says what "we" do, as "Is there work that introduces …?", half the time after the abstract's
    opening sentence as context; coined names, acronyms, numbers and words found in at most two
    abstracts left out. 1 for its paper; the retriever's next best papers for it 0."""
    from vectorstore.chunks import split_sentences

    df = Counter(w for p in papers.values() for w in set(_WORD.findall(p.text.lower())))
    rare = {w for w, n in df.items() if n <= 2}
    rng = random.Random(seed)
    ids = [pid for pid in sorted(papers) if pid not in exclude]
    out = []
    for pid in sorted(rng.sample(ids, min(limit, len(ids)))):
        sents = split_sentences(papers[pid].text)
        ours = [s for s in sents[1:] if _LEAD.match(s) and len(s.split()) <= 45]
        if not ours:
            continue
        m = _LEAD.match(said := rng.choice(ours))
        d = _unnamed(_third_person(m["verb"]) + said[m.end():], rare)
        if len(d.split()) < 6:
            continue
        query = rng.choice(DESCRIBED_FRAMES).format(d=d)
        context = _unnamed(sents[0], rare)
        if rng.random() < 0.5 and 6 <= len(context.split()) <= 30 and not _LEAD.match(sents[0]):
            query = f"{context}. {query}"
        out.append(Pair(query, pid, 1, 1.0, "described"))
        out += [Pair(query, o, 0, 1.0, "described") for o in _hard_negatives(assistant, query, {pid}, negatives)]
    return out
