"""The index as a LangChain retriever, for composing it into other LangChain chains.

Kept apart from :mod:`assistant.retrieval.hybrid`: LangChain's retriever machinery (tracers, LangSmith) takes
about half a second to import, and no command of this project needs it.
"""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from assistant.retrieval.hybrid import HybridRetriever


class PaperRetriever(BaseRetriever):
    """The LangChain entry point to retrieval: a ``BaseRetriever`` giving one Document per retrieved
    paper (abstract text; metadata: paper id, label, fused/dense/BM25 scores, venue, year, source), for
    composing the index into other LangChain chains: ``PaperRetriever(retriever=assistant.retriever).invoke(q)``."""

    model_config = ConfigDict(arbitrary_types_allowed=True)
    retriever: HybridRetriever
    k: int = 5
    mode: str = "hybrid"

    def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> list[Document]:
        return [
            Document(page_content=sp.paper.text, id=sp.id,
                     metadata={"paper_id": sp.id, "label": sp.paper.label, "score": sp.score,
                               "dense": sp.dense, "bm25": sp.bm25, "venue": sp.paper.venue,
                               "year": sp.paper.year, "source": sp.paper.source})
            for sp in self.retriever.search(query, k=self.k, mode=self.mode)
        ]
