"""Hybrid retrieval: BM25 and dense chunk search fused with reciprocal rank fusion and grouped to papers
(``hybrid``), metadata filters (``filters``), and the index as a LangChain retriever (``langchain_adapter``).

Imports: ``question`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "hybrid": ("HybridRetriever", "ScoredPaper", "absent_variant", "reciprocal_rank_fusion"),
    "filters": ("FilterError", "Filters", "filtered_note", "filters_scope", "resolve_filters"),
})
