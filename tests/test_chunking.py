import pytest

from vectorstore.chunks import Chunker, sentence_spans
from vectorstore.papers import Paper


def test_every_chunk_fits_and_is_an_exact_substring(encoder, papers):
    chunker = Chunker(encoder.count_tokens, encoder.max_tokens)
    total = 0
    for p in papers:
        chunks = chunker.split(p)
        assert chunks, p.id
        for c in chunks:
            assert p.text[c.start:c.end] == c.text
            assert encoder.count_tokens(c.text) <= encoder.max_tokens
        # the chunks cover the abstract from its first to its last character
        assert chunks[0].start == 0 and chunks[-1].end == len(p.text)
        total += len(chunks)
    assert total > len(papers)  # some abstracts exceed 254 word pieces and must be split


def test_long_abstract_is_split_with_overlap_and_no_truncation(encoder):
    sentence = "We propose a method that improves robustness of retrieval models under distribution shift. "
    text = (sentence * 40).strip()
    chunker = Chunker(encoder.count_tokens, 100, overlap_tokens=24)
    chunks = chunker.split(Paper(id="x#1", text=text))
    assert len(chunks) > 5
    assert all(encoder.count_tokens(c.text) <= 100 for c in chunks)
    assert any(b.start < a.end for a, b in zip(chunks, chunks[1:]))  # overlap
    assert chunks[-1].end == len(text)


def test_sentence_spans_keep_abbreviations():
    text = "We use e.g. BERT and GPT. Results improve by 3.5 points. Finally, we release code."
    sents = [text[s:e] for s, e in sentence_spans(text)]
    assert sents == ["We use e.g. BERT and GPT.", "Results improve by 3.5 points.", "Finally, we release code."]


@pytest.mark.parametrize("text", ["Sparse attention is fast. " * 300, "模型" * 3000 + "。", "a " * 8000,
                                  "We propose a new method for graph learning. " * 112])
def test_periodic_text_gets_offsets_that_tile_the_abstract(encoder, text):
    from vectorstore.chunks import Chunker
    from vectorstore.papers import Paper

    paper = Paper(id="rep#1", text=text.strip())
    chunks = Chunker(encoder.count_tokens, encoder.max_tokens).split(paper)
    assert len(chunks) > 1
    assert all(paper.text[c.start:c.end] == c.text for c in chunks)
    assert chunks[0].start == 0 and chunks[-1].end == len(paper.text)
    assert all(b.start <= a.end + 1 and b.start > a.start for a, b in zip(chunks, chunks[1:]))  # no gaps


def test_chinese_sentences_split_at_full_width_stops_and_labels_stay_short():
    from vectorstore.chunks import split_sentences
    from vectorstore.papers import derive_label

    text = "我们提出了一种新的方法。该方法在三个基准上取得了最好的结果！我们还发布了代码？"
    assert split_sentences(text) == ["我们提出了一种新的方法。", "该方法在三个基准上取得了最好的结果！", "我们还发布了代码？"]
    long = text * 5
    assert len(derive_label(long)) <= 49 and derive_label(long).endswith("…")


def test_glued_sentence_ends_split_but_abbreviations_links_and_initials_do_not():
    from vectorstore.chunks import split_sentences

    text = ("Intelligence relies on what we know.This capability is rare.In the U.S. Census, see e.g.The table "
            "of 3.5 points (K.Tanaka, 2020) and version v1.2 of Infer.NET at https://127.0.0.1/x/FactorGCN.PyTorch "
            "or D.Saad@x.org. Michael D. Revow agrees.")
    assert split_sentences(text) == [
        "Intelligence relies on what we know.", "This capability is rare.",
        "In the U.S. Census, see e.g.The table of 3.5 points (K.Tanaka, 2020) and version v1.2 of Infer.NET at "
        "https://127.0.0.1/x/FactorGCN.PyTorch or D.Saad@x.org.", "Michael D. Revow agrees."]


def test_a_link_sentence_after_a_capital_is_its_own_sentence():
    from vectorstore.chunks import split_sentences

    text = "Our method learns to drive in Grand Theft Auto V. Demo video and code are available at: https://127.0.0.1/pvp."
    assert split_sentences(text) == ["Our method learns to drive in Grand Theft Auto V.",
                                     "Demo video and code are available at: https://127.0.0.1/pvp."]
    assert len(split_sentences("Over a horizon T. We prove a bound.")) == 1  # a lone capital still reads as an initial
