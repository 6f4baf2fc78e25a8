"""The saved BM25 index (vectorstore.store.lexical.LexicalIndex.inspect): a damaged cache is found on load, not used."""

import json
import os

import numpy as np
import pytest

from vectorstore.store import LexicalIndex

CHUNKS = [(f"c{i}", f"p{i}", text) for i, text in enumerate([
    "Graph coloring with spectral message passing.", "Diffusion models denoise images step by step.",
    "Mixture-of-experts layers route tokens to experts.", "We study personality traits of language models.",
    "Video grounding with a temporally localized dataset.", "Certified machine unlearning with guarantees."])]


def _random_body(path):
    """Random bytes over an .npy file's data, its header kept (numpy still reads it)."""
    raw = bytearray(path.read_bytes())
    start = raw.index(b"\n") + 1  # the header ends with a newline
    raw[start:] = np.random.default_rng(7).bytes(len(raw) - start)
    path.write_bytes(bytes(raw))


DAMAGE = {
    "data: random bytes": lambda d: _random_body(d / "data.csc.index.npy"),
    "indptr: random bytes": lambda d: _random_body(d / "indptr.csc.index.npy"),
    "indices: random bytes": lambda d: _random_body(d / "indices.csc.index.npy"),
    "indices: cut short": lambda d: os.truncate(d / "indices.csc.index.npy", 100),
    "vocab: {}": lambda d: (d / "vocab.index.json").write_text("{}"),
    "vocab: two terms swapped": lambda d: (d / "vocab.index.json").write_text(json.dumps(_swapped(d))),
    "indptr: a shorter one": lambda d: np.save(d / "indptr.csc.index.npy", np.load(d / "indptr.csc.index.npy")[:-3]),
}


def _swapped(folder):
    vocab = json.loads((folder / "vocab.index.json").read_text())
    df = json.loads((folder.parent / "ids.json").read_text())["doc_freq"]
    rare, common = min(df, key=df.get), max(df, key=df.get)
    vocab[rare], vocab[common] = vocab[common], vocab[rare]
    return vocab


@pytest.mark.parametrize("damage", DAMAGE.values(), ids=DAMAGE.keys())
def test_a_damaged_bm25_cache_is_not_loaded_and_says_why(tmp_path, damage):
    """Seventh break-it run (#104, #105): random bytes over the saved BM25 arrays, or an emptied vocabulary,
    loaded as they were (the ids and the stamp were intact): papers silently missing from keyword search,
    or IndexError on every question; nothing rebuilt it, and doctor said ok."""
    folder = tmp_path / "bm25-abstracts"
    LexicalIndex.build(CHUNKS, "6:1:x").save(folder)
    loaded, why = LexicalIndex.inspect(folder)
    assert why is None and [loaded.paper_ids[i] for i, _ in loaded.search("diffusion images", 1)] == ["p1"]
    damage(folder / "bm25")
    loaded, why = LexicalIndex.inspect(folder)
    assert loaded is None and why and LexicalIndex.load(folder) is None


def test_a_missing_or_older_cache_is_no_damage(tmp_path):
    folder = tmp_path / "bm25-abstracts"
    assert LexicalIndex.inspect(folder) == (None, None)
    LexicalIndex.build(CHUNKS, "6:1:x").save(folder)
    meta = json.loads((folder / "ids.json").read_text())
    (folder / "ids.json").write_text(json.dumps(meta | {"format": meta["format"] - 1}))
    assert LexicalIndex.inspect(folder) == (None, None)
    (folder / "ids.json").write_text("[]")
    assert LexicalIndex.inspect(folder)[1] == "ids.json is not a keyword index's"


def _ids_reordered(folder):
    meta = json.loads((folder / "ids.json").read_text())
    order = [1, 0, *range(2, len(meta["chunk_ids"]))]
    meta["chunk_ids"] = [meta["chunk_ids"][i] for i in order]
    meta["paper_ids"] = [meta["paper_ids"][i] for i in order]
    (folder / "ids.json").write_text(json.dumps(meta))


def _rows_reordered(folder):
    """Two chunks' rows swapped in the matrix (indices), each still a chunk this index has."""
    path = folder / "bm25" / "indices.csc.index.npy"
    indices = np.load(path)
    swapped = np.where(indices == 0, 1, np.where(indices == 1, 0, indices)).astype(indices.dtype)
    np.save(path, swapped)


@pytest.mark.parametrize("damage", [_ids_reordered, _rows_reordered], ids=["ids put in another order",
                                                                          "rows put in another order"])
def test_a_reordered_bm25_cache_is_not_loaded(tmp_path, damage):
    """Second hostile round (#35, F6): ids (or rows) put in another order, each still one of the index's, passed
    every check and sent keyword hits to other chunks. A checksum binds the ids to the arrays, as the dense
    cache's does."""
    folder = tmp_path / "bm25-abstracts"
    LexicalIndex.build(CHUNKS, "6:1:x").save(folder)
    damage(folder)
    loaded, why = LexicalIndex.inspect(folder)
    assert loaded is None and why == ("its checksum does not match its ids and BM25 arrays (ids or rows put in "
                                      "another order?)")


def test_an_ids_file_far_larger_than_its_arrays_is_refused_unread(tmp_path):
    """Eighth hostile round: a 5 GB sparse ids.json was read whole (5.4 GB of memory) before any check."""
    folder = tmp_path / "bm25-abstracts"
    LexicalIndex.build(CHUNKS, "6:1:x").save(folder)
    with (folder / "ids.json").open("r+b") as f:
        f.truncate(8 * 2**30)  # sparse: nothing is written, and nothing may be read
    loaded, why = LexicalIndex.inspect(folder)
    assert loaded is None and why == "ids.json is 8,589,934,592 bytes, far more than its arrays can need"
