"""Each text is analysed once: one question through the answer path (the bundled index, each judge) enters each
step once and tokenizes the question once and each candidate sentence at most once; asked again, none of the
sentences is tokenized again (the sentence cache keeps their terms)."""

import collections
import logging
import re
import sys

import pytest

import vectorstore.store.lexical

LOOKUP = ("Which work makes an extremely fine-grained sparse-expert layer roughly eleven times faster at inference "
          "than an earlier fine-grained design, and what latencies does it report?")
LIST = "Which papers use reinforcement learning to train language models?"
JUDGES = {"rules": {}, "learned": {"abstention": {"learned": "v2"}}, "cross-encoder": {"relevance": {"model": "v2"}}}


def _assistant(settings, index, judge: str):
    """A new Assistant (empty sentence cache) with ``judge`` switched on in the calibration."""
    from assistant.answer.pipeline import Assistant

    cal = settings.calibration
    for part, values in JUDGES[judge].items():
        cal = cal.model_copy(update={part: getattr(cal, part).model_copy(update=values)})
    return Assistant(settings.model_copy(update={"calibration": cal}), index)


def _count_tokenize(monkeypatch) -> collections.Counter:
    """The texts :func:`vectorstore.store.lexical.tokenize` is called on, counted through every loaded module that
    imported it (call after the answer path is loaded, so none imports the counter itself)."""
    calls = collections.Counter()
    tokenize = vectorstore.store.lexical.tokenize

    def counted(text):
        calls[text] += 1
        return tokenize(text)

    for name, module in list(sys.modules.items()):
        if name.split(".")[0] in ("assistant", "vectorstore") and getattr(module, "tokenize", None) is tokenize:
            monkeypatch.setattr(module, "tokenize", counted)
    return calls


@pytest.mark.parametrize("judge", list(JUDGES))
@pytest.mark.parametrize("question", [LOOKUP, LIST], ids=["lookup", "list"])
def test_one_question_enters_each_step_once_and_tokenizes_each_text_once(settings, index, judge, question,
                                                                         monkeypatch, caplog):
    from assistant.question import text_terms

    _assistant(settings, index, judge).ask("What is SyPE?")  # every module of the answer path loaded
    assistant = _assistant(settings, index, judge)
    text = assistant.analyze(question).text
    text_terms.cache_clear()
    calls = _count_tokenize(monkeypatch)
    with caplog.at_level(logging.DEBUG, logger="assistant.answer.pipeline"):
        prep = assistant.prepare(question)
        assistant.answer_prepared(prep)
    steps = [re.match(r"step (\w+)", r.getMessage()).group(1) for r in caplog.records
             if r.name == "assistant.answer.pipeline"]
    assert [s for s, n in collections.Counter(steps).items() if n > 1] == []
    assert {"analyze", "retrieve", "score_evidence", "decide", "finalize"} <= set(steps)
    assert calls[text] == 1
    assert [t for t, n in calls.items() if n > 1 and t in text] == []  # nor any part of it (its asking clause …)
    cache = assistant.sentences.get([p.paper for p in prep.papers])
    sentences = collections.Counter(s.text for p in prep.papers for s in cache[p.id][0])
    assert sum(sentences.values()) > 3 * len(prep.papers) > 0
    assert [s for s, n in sentences.items() if calls[s] > n] == []  # a sentence two papers share is two sentences
    assert [p.id for p in prep.papers if calls[p.paper.searchable()] > 1] == []

    calls.clear()
    again = assistant.prepare(question)
    assistant.answer_prepared(again)
    assert [p.id for p in again.papers] == [p.id for p in prep.papers]
    assert calls[text] == 1
    assert [s for s in sentences if calls[s]] == []
