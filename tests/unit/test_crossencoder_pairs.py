"""Training pairs built by program (assistant.learning.crossencoder_pairs), on hand-made papers."""

from __future__ import annotations

from assistant.learning.crossencoder_pairs import contribution_pairs, described_pairs, detail_pairs, frequent_phrases
from vectorstore.papers import Paper


def paper(pid: str, text: str, title: str = "") -> Paper:
    return Paper(id=pid, text=text, title=title)


def test_a_detail_question_is_only_asked_where_the_abstract_lacks_every_word_of_it():
    papers = {"a": paper("a", "We train with a batch size of 64 and a learning rate of 0.1 on 8 GPUs.",
                         "FastNet: quick training"),
              "b": paper("b", "A study of something without a coined name.", "A study of things")}
    pairs = detail_pairs(papers)
    assert [p.paper_id for p in pairs] == ["a"]  # "A study of things" names no method
    q = pairs[0].query
    assert "FastNet" in q and pairs[0].label == 0
    assert not any(w in q.lower() for w in ("batch", "learning rate", "gpus"))  # those the abstract gives


def test_proposing_a_benchmark_is_not_evaluating_on_one():
    papers = {"p": paper("p", "We introduce a new benchmark for video reasoning."),
              "u": paper("u", "Our method is state of the art on three benchmarks.")}
    labels = {(p.paper_id, p.label) for p in contribution_pairs(papers) if "benchmark" in p.query}
    assert labels == {("p", 1), ("u", 0)}


def test_frequent_title_phrases_skip_stop_words_at_either_end():
    papers = {str(i): paper(str(i), "x", f"Graph neural networks for task {i}") for i in range(10)}
    phrases = frequent_phrases(papers, 5, min_papers=8)
    assert "graph neural networks" in phrases and "neural networks" in phrases
    assert not any(p.split()[-1] in {"for", "of"} or p.split()[0] in {"for", "of"} for p in phrases)
    assert frequent_phrases(papers, 5, min_papers=11) == []


class _Retriever:
    """Returns every paper but the first in id order: the hard negatives of any query."""

    def __init__(self, ids):
        self.ids = ids

    def search(self, query, k):
        return [type("Hit", (), {"id": i})() for i in self.ids[:k]]


def test_a_paper_is_described_without_its_name_numbers_or_its_own_rare_words():
    text = ("Graph models struggle with long-range dependencies in molecules. We propose HyperMol, which "
            "routes messages through zyxquorn hubs and improves accuracy by 12.5% on molecular property "
            "prediction. Experiments confirm it.")
    common = ("Graph models struggle with long-range dependencies in molecules, which routes messages through hubs "
              "and improves accuracy by a lot on molecular property prediction.")  # every word but a's own
    papers = {"a": paper("a", text), "b": paper("b", common), "c": paper("c", common)}
    assistant = type("A", (), {"retriever": _Retriever(["a", "b", "c"])})()
    pairs = described_pairs(assistant, papers, exclude=set(), limit=3, negatives=2)
    assert [(p.paper_id, p.label) for p in pairs] == [("a", 1), ("b", 0), ("c", 0)]
    q = pairs[0].query
    assert "proposes" in q and "routes messages through" in q
    assert not any(w in q for w in ("HyperMol", "12.5%", "zyxquorn", "We "))  # name, number, a word of one abstract
    assert described_pairs(assistant, papers, exclude={"a"}, limit=3) == []  # a held-out paper is never described
