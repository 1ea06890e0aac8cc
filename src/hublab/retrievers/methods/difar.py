"""DiFaR, Direct Fact Retrieval (Baek et al.; thesis §7.4.2, framework spec §11.2).

Every triple of every paper subgraph under the indexing roots is embedded (by default as its canonical string, the
thesis reference implementation's text; ``triple_text`` and ``context`` choose another representation); the
question is embedded with the same model and the nearest ``n_results`` triples are the ranked context.
The answer is written by the pipeline's generation pipe, not here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.dense_index import DenseIndex, DistanceMetric
from hublab.retrievers.components.results import empty
from hublab.retrievers.components.unit_text import UnitTextParams, collection_prefix
from hublab.retrievers.components.units import graph_triple_units, paper_triple_units


@dataclass(frozen=True)
class DiFaRParams(UnitTextParams):
    """DiFaR's parameters, plus ``triple_text`` (how a triple is embedded; default the thesis reference
    implementation's ``ids``) and ``context`` (``paper``: the title of the paper whose subgraph holds the triple),
    from :class:`~hublab.retrievers.components.unit_text.UnitTextParams`.

    Args:
        indexing_root_entity_ids: entities whose papers are indexed (thesis: the research field;
            default: the graph's root entities from params.yaml ``graphs.research_field_id``).
        n_results: triples returned per question (thesis: ``n_results``, 150 in the final runs).
        distance_metric: ``cosine``, ``l2`` or ``ip`` (thesis: ``distance_metric``).
        max_depth: how far a paper's subgraph is followed.
        max_in_degree: nodes with more incoming edges (venues, fields) are not walked against direction.
    """

    indexing_root_entity_ids: list[str] | None = None
    n_results: Annotated[int, Field(ge=1)] = 150
    distance_metric: DistanceMetric = "cosine"
    max_depth: Annotated[int, Field(ge=1)] = 10
    max_in_degree: Annotated[int, Field(ge=0)] = 25


class DiFaRRetriever(Retriever):
    """DiFaR (thesis §7.4.2); parameters: :class:`DiFaRParams`."""

    thesis_name = "DiFaR"
    default_pipeline = "difar_local.yaml"
    params_type = DiFaRParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        self.root_ids = list(self.config.indexing_root_entity_ids or resources.root_entity_ids)
        self._index: DenseIndex | None = None
        self._missing_roots: list[str] = []

    def _dense(self) -> DenseIndex:
        if self._index is None:
            g = self.resources.graph
            self._missing_roots = [r for r in self.root_ids if g.entity(r) is None]
            roots = [r for r in self.root_ids if r not in self._missing_roots]
            c = self.config
            text = {"triple_text": c.triple_text, "context": c.context}
            units = paper_triple_units(g, roots, max_depth=c.max_depth, max_in_degree=c.max_in_degree, **text)
            if not units and not roots:
                # No ORKG research-field root (e.g. a STaRK SKB): index every triple of the graph.
                units = graph_triple_units(g, **text)
            prefix = collection_prefix("difar", c.triple_text, c.context)
            self._index = DenseIndex(self.resources, units, prefix=prefix, metric=c.distance_metric)
        return self._index

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        stats = self._dense().build(progress=progress)
        stats["missing_roots"] = self._missing_roots
        return stats

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        dense = self._dense()
        if not dense.units:
            return empty(f"nothing indexed: no papers under {self.root_ids}")
        # Over-fetch: the same triple may be indexed once per paper it belongs to.
        n_results = self.config.n_results
        hits = dense.search(question, n_results * 2)
        contexts = []
        seen: set[str] = set()
        sources: dict[str, dict[str, str]] = {}
        for unit, score in hits:
            rendered = unit.triple.render() if unit.triple is not None else unit.text
            if rendered in seen:  # the same triple under another paper
                continue
            seen.add(rendered)
            contexts.append(unit.to_context(score))
            pid = unit.meta.get("paper_id")
            if pid and pid not in sources:
                sources[pid] = {"id": pid, "title": str(unit.meta.get("paper_title", ""))}
            if len(contexts) >= n_results:
                break
        reason = None if contexts else "vector search returned no triples"
        return RetrievalResult(contexts=contexts, reason=reason, sources=list(sources.values()))
