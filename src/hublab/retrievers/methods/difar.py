"""DiFaR, Direct Fact Retrieval (Baek et al.; thesis §7.4.2, framework spec §11.2).

Every triple of every paper subgraph under the indexing roots is embedded (by default as its canonical string, the
thesis reference implementation's text; ``triple_text`` and ``context`` choose another representation); the
question is embedded with the same model and the nearest ``n_results`` triples are the ranked context.
The answer is written by the pipeline's generation pipe, not here.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.dense_index import DenseIndex
from hublab.retrievers.components.results import empty
from hublab.retrievers.components.unit_text import (
    DEFAULT_CONTEXT,
    DEFAULT_TRIPLE_TEXT,
    TripleText,
    UnitContext,
    text_tag,
)
from hublab.retrievers.components.units import paper_triple_units, triple_units


class DiFaRRetriever(Retriever):
    """DiFaR (thesis §7.4.2).

    Args:
        indexing_root_entity_ids: entities whose papers are indexed (thesis: the research field;
            default: the graph's root entities from params.yaml ``graphs.research_field_id``).
        n_results: triples returned per question (thesis: ``n_results``, 150 in the final runs).
        distance_metric: ``cosine``, ``l2`` or ``ip`` (thesis: ``distance_metric``).
        max_depth: how far a paper's subgraph is followed.
        max_in_degree: nodes with more incoming edges (venues, fields) are not walked against direction.
        triple_text: how a triple is embedded: ``ids`` (the canonical ``(R1:label, predicate, R2:label)``, the
            thesis reference implementation's) or ``labels`` (``label | predicate | label``).
        context: what is added to a triple's text: ``none`` or ``paper`` (the title of the paper whose subgraph
            holds it).
    """

    thesis_name = "DiFaR"
    default_pipeline = "difar_local.yaml"

    def __init__(
        self,
        resources: Resources,
        *,
        indexing_root_entity_ids: list[str] | None = None,
        n_results: Annotated[int, Field(ge=1)] = 150,
        distance_metric: Literal["cosine", "l2", "ip"] = "cosine",
        max_depth: Annotated[int, Field(ge=1)] = 10,
        max_in_degree: Annotated[int, Field(ge=0)] = 25,
        triple_text: TripleText = DEFAULT_TRIPLE_TEXT,
        context: UnitContext = DEFAULT_CONTEXT,
    ) -> None:
        super().__init__(resources)
        self.root_ids = list(indexing_root_entity_ids or resources.root_entity_ids)
        self.n_results = int(n_results)
        self.distance_metric = distance_metric
        self.max_depth = max_depth
        self.max_in_degree = max_in_degree
        self.triple_text, self.context = triple_text, context
        self._index: DenseIndex | None = None
        self._missing_roots: list[str] = []

    def _dense(self) -> DenseIndex:
        if self._index is None:
            g = self.resources.graph
            self._missing_roots = [r for r in self.root_ids if g.entity(r) is None]
            roots = [r for r in self.root_ids if r not in self._missing_roots]
            text = {"triple_text": self.triple_text, "context": self.context}
            units = paper_triple_units(g, roots, max_depth=self.max_depth, max_in_degree=self.max_in_degree, **text)
            if not units and not roots:
                # No ORKG research-field root (e.g. a STaRK SKB): index every triple of the graph.
                units = triple_units(g.triples(), graph=g, **text)
            prefix = "_".join(p for p in ("difar", text_tag(self.triple_text, self.context)) if p)
            self._index = DenseIndex(self.resources, units, prefix=prefix, metric=self.distance_metric)
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
        hits = dense.search(question, self.n_results * 2)
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
            if len(contexts) >= self.n_results:
                break
        reason = None if contexts else "vector search returned no triples"
        return RetrievalResult(contexts=contexts, reason=reason, sources=list(sources.values()))
