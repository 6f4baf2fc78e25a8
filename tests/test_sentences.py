"""Sentence vectors pooled from the chunks' forward pass, stored at ingest, read back at question time."""

import json

import numpy as np

from assistant.evidence.sentences import SentenceCache
from vectorstore.chunks import Chunker, assign_sentences, merge_paper, pack, sentence_spans, unpack
from vectorstore.papers import Paper


def test_encode_spans_gives_the_same_text_vectors_and_distinct_span_vectors(encoder, papers):
    # Whole abstracts that fit the model's window (longer ones are chunked before this is called).
    texts = [p.text for p in papers if encoder.count_tokens(p.text) <= encoder.max_tokens][:6]
    assert len(texts) == 6
    spans = [sentence_spans(t) for t in texts]
    vecs, span_vecs = encoder.encode_spans(texts, spans)
    assert np.abs(vecs - encoder.encode(texts)).max() < 1e-5
    assert [len(v) for v in span_vecs] == [len(s) for s in spans]
    for sv in span_vecs:
        assert np.allclose(np.linalg.norm(sv, axis=1), 1.0, atol=1e-5)
        # different sentences of one abstract get different vectors
        assert (sv @ sv.T)[~np.eye(len(sv), dtype=bool)].max() < 0.99


def test_every_sentence_goes_to_exactly_one_chunk(encoder, papers):
    chunker = Chunker(encoder.count_tokens, 60, overlap_tokens=15)  # small chunks: many, overlapping
    paper = max(papers, key=lambda p: len(p.text))
    chunks = chunker.split(paper)
    assert len(chunks) >= 3
    parts = assign_sentences(paper, chunks)
    flat = [s for part in parts for s in part]
    assert sorted(flat) == sentence_spans(paper.text)
    for chunk, part in zip(chunks, parts):
        for s, e in part:
            assert min(e, chunk.end) > max(s, chunk.start)  # each overlaps its chunk


def test_pack_round_trip_and_malformed_metadata():
    rng = np.random.default_rng(0)
    v = rng.normal(size=(5, 384)).astype(np.float32)
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    spans = [(0, 10), (11, 20), (21, 40), (41, 50), (51, 60)]
    got_spans, got = unpack(pack(spans, v), 384)
    assert got_spans == spans
    assert np.min(np.sum(got * v, axis=1)) > 0.999
    # A chunk whose sentences all went to its neighbours (overlap, or one long sentence split in three).
    empty_spans, empty = unpack(pack([], np.zeros((0, 384), np.float32)), 384)
    assert empty_spans == [] and empty.shape == (0, 384)
    assert unpack({}, 384) is None
    assert unpack({**pack(spans, v), "sentence_vecs": "bm90IHZlY3M="}, 384) is None
    assert unpack(pack(spans, v), 128) is None
    assert merge_paper(Paper(id="x#1", text="One. Two."), [(got_spans[:1], got[:1])], 384) is None


def test_stored_sentence_vectors_are_read_not_recomputed(index, papers):
    stored = SentenceCache(index.encoder, index.store)
    fresh = SentenceCache(index.encoder)  # no store: computes with the same chunking and pooling
    some = papers[:8]
    a, b = stored.get(some), fresh.get(some)
    assert stored.computed == 0 and fresh.computed == len(some)
    for p in some:
        sa, va = a[p.id]
        sb, vb = b[p.id]
        assert [s.text for s in sa] == [s.text for s in sb] == [p.text[s:e] for s, e in sentence_spans(p.text)]
        # int8 storage, and int8 dynamic quantization scales activations per batch, so the same
        # sentence embedded in another batch differs slightly.
        assert np.min(np.sum(va * vb, axis=1)) > 0.98


def test_an_index_without_sentence_vectors_still_answers_and_is_upgraded_by_ingest(tmp_path, encoder, papers):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    idx = open_index(tmp_path / "idx", encoder)
    src = tmp_path / "mini.txt"
    src.write_text("ICML 2026\n\n" + "\n\n".join(p.text for p in papers[:3]) + "\n")
    ingest([src], idx)
    # Simulate an index written before sentence vectors were stored (record format 1).
    ids = idx.store.chunks.get()["ids"]
    idx.store.chunks.update(ids=ids, metadatas=[{"sentence_spans": None, "sentence_vecs": None} for _ in ids])
    cache = SentenceCache(encoder, idx.store)
    mini = idx.store.get_papers(["mini#1", "mini#2", "mini#3"])
    assert len(cache.get(list(mini.values()))) == 3 and cache.computed == 3
    meta = idx.store.chunks.get(include=["metadatas"])["metadatas"]
    assert all("sentence_vecs" not in m for m in meta)
    # A paper record written by the older format carries the older hash: re-ingest re-embeds it.
    import vectorstore.ingest.run as ing

    hashes = idx.store.paper_hashes()
    ing_format = ing.RECORD_FORMAT
    try:
        ing.RECORD_FORMAT = ing_format - 1
        stale = {pid: ing.content_hash(p, encoder.name, encoder.max_tokens) for pid, p in mini.items()}
    finally:
        ing.RECORD_FORMAT = ing_format
    assert all(stale[pid] != hashes[pid][0] for pid in mini)
    report = ingest([src], idx)
    assert report.unchanged == 3  # same format: nothing to do ...
    idx.store.papers.update(ids=list(stale), metadatas=[{"hash": h} for h in stale.values()])
    report = ingest([src], idx)  # ... an older format's hash: re-embedded with sentence vectors
    assert report.updated == 3
    assert all("sentence_vecs" in m for m in idx.store.chunks.get(include=["metadatas"])["metadatas"])
    again = SentenceCache(encoder, idx.store)
    again.get(list(mini.values()))
    assert again.computed == 0


def test_a_sentence_longer_than_a_chunk_is_stored_once(tmp_path, encoder):
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    long_sentence = "We study " + ", ".join(f"the effect of factor {i} on model calibration" for i in range(40)) + "."
    src = tmp_path / "long.txt"
    src.write_text(f"ICML 2026\n\n{long_sentence} It works.\n")
    idx = open_index(tmp_path / "idx", encoder)
    report = ingest([src], idx, chunker=Chunker(encoder.count_tokens, 60, overlap_tokens=15))
    assert report.chunks_total >= 4
    metas = idx.store.chunks.get(include=["metadatas"])["metadatas"]
    stored = [unpack(m, encoder.dim)[0] for m in metas]
    assert sum(len(s) for s in stored) == 2 and sum(1 for s in stored if not s) >= 2
    cache = SentenceCache(encoder, idx.store)
    sents, vecs = cache.get(list(idx.store.get_papers(["long#1"]).values()))["long#1"]
    assert cache.computed == 0 and [s.text for s in sents] == [long_sentence, "It works."] and vecs.shape == (2, 384)


def test_filler_and_cross_references_are_not_quoted_as_the_answer(tmp_path, encoder):
    """Contextual vectors give filler its neighbours' meaning; "Sec. 5" is no quantity."""
    from assistant.answer.pipeline import Assistant
    from assistant.question.analysis import figures as _figures
    from assistant.settings import load_settings
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    assert _figures("We show more in Sec. 5, Table 2 and Eq. (3) [12, 14].") == set()
    assert _figures("five edit types; 73ms to 6.7ms") == {"five", "73", "6.7"}
    first = r"We show that $\ell_1$-regularized logistic regression recovers the support with $n = O(s \log p)$ samples."
    src = tmp_path / "l1.jsonl"
    src.write_text(json.dumps({"id": "l1reg", "abstract": f"{first} $\\lambda$ is tuned by cross-validation. "
                                                         "We show more in Sec. 5."}) + "\n")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([src], idx)
    paper = idx.store.get_papers(["l1reg"])["l1reg"]
    sents, vecs = SentenceCache(encoder, idx.store).get([paper])["l1reg"]
    q = "How many samples does l1-regularized logistic regression need to recover the support?"
    prep = Assistant(load_settings(index=tmp_path / "idx"), idx).prepare(q)
    assert prep.evidence["l1reg"][0].text == first


def test_an_index_split_by_an_older_sentence_splitter_is_re_split_by_ingest(tmp_path, encoder):
    """The splitter's version is part of the content hash: a paper stored with the older splitter's spans
    ("know.This" kept as one sentence) is answered correctly meanwhile and re-split by the next ingest."""
    import vectorstore.ingest.run as ing
    from vectorstore.index import open_index
    from vectorstore.ingest import ingest

    text = ("Agents must know what they do not know.This capability is assessed by joint predictions. "
            "We introduce the epinet, a small network added to a base model. It beats large ensembles.")
    src = tmp_path / "glued.jsonl"
    src.write_text(json.dumps({"id": "g", "abstract": text}) + "\n")
    idx = open_index(tmp_path / "idx", encoder)
    ingest([src], idx)
    new = sentence_spans(text)
    assert len(new) == 4 and text[new[1][0]:new[1][1]].startswith("This capability")
    # Make it look as an index written by splitter 1: the first two sentences stored as one, the old hash.
    old = [(new[0][0], new[1][1]), *new[2:]]
    ids = idx.store.chunks.get()["ids"]
    assert len(ids) == 1
    idx.store.chunks.update(ids=ids, metadatas=[pack(old, np.eye(len(old), encoder.dim, dtype=np.float32))])
    version = ing.SENTENCE_SPLITTER
    try:
        ing.SENTENCE_SPLITTER = 1
        stale = ing.content_hash(Paper(id="g", text=text), encoder.name, encoder.max_tokens)
    finally:
        ing.SENTENCE_SPLITTER = version
    assert stale != idx.store.paper_hashes()["g"][0]
    idx.store.papers.update(ids=["g"], metadatas=[{"hash": stale}])
    paper = idx.store.get_papers(["g"])["g"]
    cache = SentenceCache(encoder, idx.store)
    sents, vecs = cache.get([paper])["g"]
    assert cache.computed == 1 and len(sents) == 4 and vecs.shape == (4, encoder.dim)  # stale spans: recomputed
    assert ingest([src], idx).updated == 1
    stored = unpack(idx.store.chunks.get(include=["metadatas"])["metadatas"][0], encoder.dim)
    assert stored[0] == new
    again = SentenceCache(encoder, idx.store)
    assert [s.text for s in again.get([paper])["g"][0]] == [text[s:e] for s, e in new] and again.computed == 0
    assert ingest([src], idx).unchanged == 1
