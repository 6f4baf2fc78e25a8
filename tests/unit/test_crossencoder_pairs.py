"""Training pairs built by program (assistant.crossencoder_pairs), on hand-made papers."""

from __future__ import annotations

from assistant.crossencoder_pairs import contribution_pairs, detail_pairs, frequent_phrases
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
