"""BM25 over triple strings (ORKG) or node documents (STaRK SKB)."""

from __future__ import annotations

from typing import Any

from hublab.retrievers.base import RetrievalResult
from hublab.retrievers.components.lexical_index import LexicalRetriever, tokenize
from hublab.retrievers.components.results import empty


class BM25Retriever(LexicalRetriever):
    """Okapi BM25 ranking (rank-bm25's ``BM25Okapi`` scores:
    :class:`~hublab.retrievers.components.lexical_index.BM25Index`); not in the thesis, a lexical reference point.

    Parameters: :class:`~hublab.retrievers.components.lexical_index.LexicalParams` (``units``, ``add_rel``,
    ``candidate_types``, ``n_results``, ``k1``, ``b``, ``triple_text``, ``context``).
    """

    default_pipeline = "bm25.yaml"
    compare_group = 1

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"units": len(self.bm25.units)}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if not tokenize(question):
            return empty("question has no searchable terms")
        if not self.units:
            return empty("no units to search")
        n = self.config.n_results
        k = n if self.resources.graph.answers_with_nodes else max(n, 50)
        return self._result(self.bm25.search(question, k), "BM25")
