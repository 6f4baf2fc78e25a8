"""Hybrid retrieval: BM25 and dense chunk search fused with reciprocal rank fusion and grouped to papers
(``hybrid``), filters, and the index as a LangChain retriever (``langchain_adapter``).

Imports: ``question`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "hybrid": ("Filters", "HybridRetriever", "ScoredPaper", "absent_variant", "filtered_note", "filters_scope",
        "reciprocal_rank_fusion", "resolve_filters"),
})
