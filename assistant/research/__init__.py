"""What a researcher does beyond one answer: a conversation's turn, comparisons and syntheses included
(``conversation``, ``compare``), "all papers that…" lists (``lists``), related work (``related``,
``related_list``, ``facets``, ``related_llm``), the paper map (``paper_map``, ``map_labels``, ``map_types``) and export
(``export``).

Imports: ``answer`` and what is before it."""

from assistant import public_face

__getattr__, __dir__, __all__ = public_face(__name__, {
    "compare": ("COMPARE_NEEDS_LLM", "comparison_answer"),
    "conversation": ("SYNTHESIS_NEEDS_LLM", "reply", "reply_stream"),
    "export": ("export_format", "items_from_answer", "items_from_list", "output_problem", "write_export"),
    "lists": ("list_papers",),
    "paper_map": ("index_map", "is_cached", "map_figure", "save_png"),
    "facets": ("FACET_NAMES", "facet_scores"),
    "related": ("RelatedPaper", "related_work", "unknown_paper"),
    "related_list": ("shown_percent",),
    "related_score": ("relevance", "tfidf_cosines"),
    "related_llm": ("add_llm_summaries",),
})
