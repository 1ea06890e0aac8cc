"""VSS: STaRK's vector similarity search over node documents and/or triple strings.

``units: nodes`` embeds each candidate node's document (label + relations, STaRK ``get_doc_info(add_rel)``);
``units: triples`` embeds every triple string of the graph; ``both`` fuses the two rankings by reciprocal
rank. ``triple_text`` and ``context`` choose how a unit is written (ids or labels, with the owning paper's title
or not: :mod:`~hublab.retrievers.components.unit_text`). On an ORKG graph node hits are expanded to their
triples (triple-based metrics); on a STaRK SKB the contexts are the nodes themselves (``metadata["node_id"]``).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.dense_index import DenseIndex
from hublab.retrievers.components.results import assemble, empty
from hublab.retrievers.components.unit_text import (
    DEFAULT_CONTEXT,
    DEFAULT_TRIPLE_TEXT,
    TripleText,
    UnitContext,
    text_tag,
)
from hublab.retrievers.components.units import Unit, answer_types, node_units, triple_units


class VSSRetriever(Retriever):
    """STaRK VSS baseline (spec/stark_4step.md §1.6).

    Args:
        units: what is embedded: ``nodes`` (node documents), ``triples`` or ``both``.
        add_rel: node documents include the node's relations.
        candidate_types: node types to rank (default: the graph's candidate set).
        n_results: contexts returned per question.
        distance_metric: ``cosine``, ``l2`` or ``ip``.
        triple_text: how a triple unit is written: ``ids`` (the canonical string) or ``labels``.
        context: ``paper`` appends the title of the paper a unit (triple or node) belongs to; ``none`` nothing.
    """

    default_pipeline = "vss.yaml"
    compare_group = 1

    def __init__(
        self,
        resources: Resources,
        *,
        units: Literal["nodes", "triples", "both"] = "nodes",
        add_rel: bool = True,
        candidate_types: list[str] | None = None,
        n_results: Annotated[int, Field(ge=1)] = 20,
        distance_metric: Literal["cosine", "l2", "ip"] = "cosine",
        triple_text: TripleText = DEFAULT_TRIPLE_TEXT,
        context: UnitContext = DEFAULT_CONTEXT,
    ) -> None:
        super().__init__(resources)
        self.kind = units
        self.add_rel = add_rel
        self.types = answer_types(resources.graph, candidate_types)
        self.n_results = int(n_results)
        self.metric = distance_metric
        self.triple_text, self.context = triple_text, context
        self._indexes: dict[str, DenseIndex] | None = None

    def _units(self) -> dict[str, list[Unit]]:
        out: dict[str, list[Unit]] = {}
        if self.kind in ("nodes", "both"):
            out["nodes"] = node_units(self.resources.graph, types=self.types, add_rel=self.add_rel,
                                      context=self.context)
        if self.kind in ("triples", "both"):
            g = self.resources.graph
            out["triples"] = triple_units(g.triples(), graph=g, triple_text=self.triple_text, context=self.context)
        return out

    def indexes(self) -> dict[str, DenseIndex]:
        if self._indexes is None:
            self._indexes = {k: DenseIndex(self.resources, us, prefix=self._prefix(k), metric=self.metric)
                             for k, us in self._units().items()}
        return self._indexes

    def _prefix(self, kind: str) -> str:
        """``vss_<kind>`` for the default texts (the existing collections' names), plus the representation's tag
        otherwise (node documents have no triple text: only their context tags them)."""
        form = self.triple_text if kind == "triples" else DEFAULT_TRIPLE_TEXT
        return "_".join(p for p in (f"vss_{kind}", text_tag(form, self.context)) if p)

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {k: ix.build(progress=progress) for k, ix in self.indexes().items()}

    def rank(self, question: str, k: int) -> dict[str, list[tuple[Unit, float]]]:
        return {kind: ix.search(question, k) for kind, ix in self.indexes().items()}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if not any(ix.units for ix in self.indexes().values()):
            return empty("no units to search (empty graph or no nodes of the candidate types)")
        nodes_out = self.resources.graph.answers_with_nodes
        k = self.n_results if nodes_out else max(self.n_results, 50)
        contexts = assemble(self.resources.graph, self.rank(question, k), self.n_results, nodes_out=nodes_out)
        return RetrievalResult(contexts=contexts, reason=None if contexts else "vector search returned nothing")


