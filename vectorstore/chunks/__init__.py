"""Chunks of an abstract: sentence spans and token-bounded chunks, each an exact substring with offsets
(``splitting``), and the sentence embeddings computed with a paper's chunks and stored with them (``sentences``).

Imports: ``papers`` and ``encoding``."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "splitting": ("Chunk", "Chunker", "ChunkingConfig", "SENTENCE_SPLITTER", "sentence_spans", "split_sentences"),
    "sentences": ("SPANS_KEY", "VECS_KEY", "assign_sentences", "embed_chunks", "merge_paper", "pack", "spans_by_chunk", "unpack"),
})
