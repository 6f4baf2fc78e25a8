"""PDF ligatures in the keyword (BM25) index: "eﬃcient" in an abstract did not match "efficient" in a
question, nor "ﬁne-tuning" "fine-tuning" (no NFKC normalization in the tokenizer)."""

from __future__ import annotations

import json

import pytest

from vectorstore.store import LexicalIndex, tokenize


@pytest.mark.parametrize("pdf, plain", [
    ("eﬃcient", "efficient"), ("ﬁne-tuning", "fine-tuning"), ("ﬂow matching", "flow matching"),
    ("diﬀusion", "diffusion"), ("Ｔｒａｎｓｆｏｒｍｅｒ", "Transformer"), ("oﬄine", "offline"),
])
def test_ligatures_and_full_width_letters_give_the_plain_terms(pdf, plain):
    assert tokenize(pdf) == tokenize(plain) and tokenize(plain)


def test_ascii_text_is_returned_as_it_is():
    from vectorstore.store import nfkc

    text = "An efficient fine-tuning method."
    assert nfkc(text) is text


def test_a_question_finds_the_abstract_written_with_ligatures(tmp_path):
    idx = LexicalIndex.build([("c1", "p1", "An eﬃcient ﬁne-tuning recipe for ﬂow models."),
                              ("c2", "p2", "Graph coloring with spectral message passing.")], "1:1:x")
    assert [i for i, _ in idx.search("efficient flow", 5)] == [0]


def test_a_keyword_index_saved_by_the_previous_tokenizer_is_rebuilt(tmp_path):
    idx = LexicalIndex.build([("c1", "p1", "An eﬃcient recipe.")], "1:1:x")
    idx.save(tmp_path / "bm25")
    assert LexicalIndex.load(tmp_path / "bm25") is not None
    meta = json.loads((tmp_path / "bm25" / "ids.json").read_text())
    meta["format"] = 6  # written before ligatures were normalized: its terms hold "eﬃcient"
    (tmp_path / "bm25" / "ids.json").write_text(json.dumps(meta))
    assert LexicalIndex.load(tmp_path / "bm25") is None
