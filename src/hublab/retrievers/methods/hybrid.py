"""BM25 + dense retrieval fused by reciprocal rank (STaRK's HybridRetriever uses the same fusion)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from hublab.retrievers.base import RetrievalResult
from hublab.retrievers.components.dense_index import DenseIndex, DistanceMetric
from hublab.retrievers.components.fusion import rrf
from hublab.retrievers.components.lexical_index import LexicalParams, LexicalRetriever
from hublab.retrievers.components.results import empty
from hublab.retrievers.components.unit_text import collection_prefix


@dataclass(frozen=True)
class HybridParams(LexicalParams):
    """Hybrid's parameters: its own below, plus the lexical ones
    (:class:`~hublab.retrievers.components.lexical_index.LexicalParams`: ``units``, ``add_rel``,
    ``candidate_types``, ``n_results``, ``k1``, ``b``, ``triple_text``, ``context``; both rankings read the same
    unit texts).

    Args:
        rrf_k: the RRF constant k (score = Σ 1/(k + rank)).
        candidates: depth of each ranking before fusion.
        distance_metric: ``cosine``, ``l2`` or ``ip`` for the dense ranking.
        fusion_weights: RRF weights ``[lexical, dense]`` (None = equal); the same weighted RRF as HubLink's
            LLM-free output ranking (``components.fusion.rrf``).
    """

    rrf_k: Annotated[int, Field(ge=1)] = 60
    candidates: Annotated[int, Field(ge=1)] = 100
    distance_metric: DistanceMetric = "cosine"
    fusion_weights: Annotated[list[Annotated[float, Field(ge=0.0)]], Field(min_length=2, max_length=2)] | None = None


class HybridRetriever(LexicalRetriever):
    """Lexical and dense rankings over the same units, fused with RRF; parameters: :class:`HybridParams`."""

    default_pipeline = "hybrid.yaml"
    compare_group = 2
    params_type = HybridParams
    _dense: DenseIndex | None = None

    @property
    def dense(self) -> DenseIndex:
        if self._dense is None:
            c = self.config
            prefix = collection_prefix("hybrid", c.triple_text, c.context)
            self._dense = DenseIndex(self.resources, self.units, prefix=prefix, metric=c.distance_metric)
        return self._dense

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"bm25_units": len(self.bm25.units), "dense": self.dense.build(progress=progress)}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if not self.units:
            return empty("no units to search")
        c = self.config
        depth = max(c.candidates, c.n_results)
        rankings = [self.bm25.search(question, depth), self.dense.search(question, depth)]
        fused = [(unit, score) for (unit, _), score in rrf(rankings, key=lambda hit: hit[0].key, k=c.rrf_k,
                                                                weights=c.fusion_weights or None)]
        return self._result(fused, "hybrid search")
