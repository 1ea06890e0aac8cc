"""BM25 + dense retrieval fused by reciprocal rank (STaRK's HybridRetriever uses the same fusion)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult
from hublab.retrievers.components.dense_index import DenseIndex
from hublab.retrievers.components.fusion import rrf
from hublab.retrievers.components.lexical_index import LexicalRetriever
from hublab.retrievers.components.results import empty
from hublab.retrievers.components.unit_text import text_tag


class HybridRetriever(LexicalRetriever):
    """Lexical and dense rankings over the same units, fused with RRF.

    Args:
        rrf_k: the RRF constant k (score = Σ 1/(k + rank)).
        candidates: depth of each ranking before fusion.
        distance_metric: ``cosine``, ``l2`` or ``ip`` for the dense ranking.
        fusion_weights: RRF weights ``[lexical, dense]`` (None = equal); the same weighted RRF as HubLink's
            LLM-free output ranking (``components.fusion.rrf``).
        **params: the lexical parameters (``units``, ``add_rel``, ``candidate_types``, ``n_results``, ``k1``,
            ``b``, ``triple_text``, ``context``): both rankings read the same unit texts.
    """

    default_pipeline = "hybrid.yaml"
    compare_group = 2

    def __init__(
        self,
        resources: Resources,
        *,
        rrf_k: Annotated[int, Field(ge=1)] = 60,
        candidates: Annotated[int, Field(ge=1)] = 100,
        distance_metric: Literal["cosine", "l2", "ip"] = "cosine",
        fusion_weights: Annotated[list[Annotated[float, Field(ge=0.0)]], Field(min_length=2, max_length=2)]
        | None = None,
        **params: Any,
    ) -> None:
        super().__init__(resources, **params)
        self.rrf_k = int(rrf_k)
        self.candidates = int(candidates)
        self.metric = distance_metric
        self.weights = list(fusion_weights) if fusion_weights else None
        self._dense: DenseIndex | None = None

    @property
    def dense(self) -> DenseIndex:
        if self._dense is None:
            prefix = "_".join(p for p in ("hybrid", text_tag(self.triple_text, self.context)) if p)
            self._dense = DenseIndex(self.resources, self.units, prefix=prefix, metric=self.metric)
        return self._dense

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"bm25_units": len(self.bm25.units), "dense": self.dense.build(progress=progress)}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if not self.units:
            return empty("no units to search")
        depth = max(self.candidates, self.n_results)
        rankings = [self.bm25.search(question, depth), self.dense.search(question, depth)]
        fused = [(unit, score) for (unit, _), score in rrf(rankings, key=lambda hit: hit[0].key, k=self.rrf_k,
                                                                weights=self.weights)]
        return self._result(fused, "hybrid search")
