"""Where chunks live: the Chroma client and the store's errors (``client``), the chunk store with its record
layout, reads and dense queries (``chunk_store``, ``records``, ``reads``, ``queries``), the exact-search matrix
(``dense_matrix``), the BM25 index beside it (``lexical``), the caches' all-or-nothing folders (``cachedir``)
the writer's lease kept in Chroma itself (``lease``) and the swap of a rebuilt index into place (``swap``).

Imports: ``papers``, ``chunks`` and ``integrity``."""

from vectorstore import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "lease": ("IndexInUseError", "LEASE_TTL", "WriterLease"),
    "lexical": ("LexicalIndex", "NAME", "corpus_names", "nfkc", "tokenize"),
    "client": ("DISK_FULL_BELOW", "DamagedVectorsError", "EmbeddingMismatchError", "IndexNotFoundError", "StoreError",
               "built_with", "make_client", "release_client", "where_clause"),
    "cachedir": ("cannot_write", "not_a_file"),
    "chunk_store": ("ChunkStore",),
    "records": ("PATH_KEY", "paper_from", "text_key"),
    "dense_matrix": ("DenseMatrix",),
    "swap": ("DONE", "OLD", "TMP", "finish_swap", "remove_tree"),
})
