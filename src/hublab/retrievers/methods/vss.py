"""VSS: STaRK's vector similarity search over node documents and/or triple strings.

``units: nodes`` embeds each candidate node's document (label + relations, STaRK ``get_doc_info(add_rel)``);
``units: triples`` embeds every triple string of the graph; ``both`` fuses the two rankings by reciprocal
rank. ``triple_text`` and ``context`` choose how a unit is written (ids or labels, with the owning paper's title
or not: :mod:`~hublab.retrievers.components.unit_text`). On an ORKG graph node hits are expanded to their
triples (triple-based metrics); on a STaRK SKB the contexts are the nodes themselves (``metadata["node_id"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.dense_index import DenseIndex, DistanceMetric
from hublab.retrievers.components.results import assemble, empty
from hublab.retrievers.components.unit_text import DEFAULT_TRIPLE_TEXT, UnitTextParams, collection_prefix
from hublab.retrievers.components.units import Unit, answer_types, graph_node_units, graph_triple_units


@dataclass(frozen=True)
class VSSParams(UnitTextParams):
    """VSS's parameters, plus ``triple_text`` and ``context``
    (:class:`~hublab.retrievers.components.unit_text.UnitTextParams`; ``context: paper`` appends the title of the
    paper a unit, triple or node, belongs to).

    Args:
        units: what is embedded: ``nodes`` (node documents), ``triples`` or ``both``.
        add_rel: node documents include the node's relations.
        candidate_types: node types to rank (default: the graph's candidate set).
        n_results: contexts returned per question.
        distance_metric: ``cosine``, ``l2`` or ``ip``.
    """

    units: Literal["nodes", "triples", "both"] = "nodes"
    add_rel: bool = True
    candidate_types: list[str] | None = None
    n_results: Annotated[int, Field(ge=1)] = 20
    distance_metric: DistanceMetric = "cosine"


class VSSRetriever(Retriever):
    """STaRK VSS baseline (spec/stark_4step.md §1.6); parameters: :class:`VSSParams`."""

    default_pipeline = "vss.yaml"
    compare_group = 1
    params_type = VSSParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        self.types = answer_types(resources.graph, self.config.candidate_types)
        self._indexes: dict[str, DenseIndex] | None = None

    def _units(self) -> dict[str, Sequence[Unit]]:
        c = self.config
        out: dict[str, Sequence[Unit]] = {}
        g = self.resources.graph
        if c.units in ("nodes", "both"):
            out["nodes"] = graph_node_units(g, types=self.types, add_rel=c.add_rel, context=c.context)
        if c.units in ("triples", "both"):
            out["triples"] = graph_triple_units(g, triple_text=c.triple_text, context=c.context)
        return out

    def indexes(self) -> dict[str, DenseIndex]:
        if self._indexes is None:
            metric = self.config.distance_metric
            self._indexes = {k: DenseIndex(self.resources, us, prefix=self._prefix(k), metric=metric)
                             for k, us in self._units().items()}
        return self._indexes

    def _prefix(self, kind: str) -> str:
        """``vss_<kind>`` for the default texts (the existing collections' names), plus the representation's tag
        otherwise (node documents have no triple text: only their context tags them)."""
        form = self.config.triple_text if kind == "triples" else DEFAULT_TRIPLE_TEXT
        return collection_prefix(f"vss_{kind}", form, self.config.context)

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {k: ix.build(progress=progress) for k, ix in self.indexes().items()}

    def rank(self, question: str, k: int) -> dict[str, list[tuple[Unit, float]]]:
        return {kind: ix.search(question, k) for kind, ix in self.indexes().items()}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if not any(ix.units for ix in self.indexes().values()):
            return empty("no units to search (empty graph or no nodes of the candidate types)")
        nodes_out = self.resources.graph.answers_with_nodes
        n = self.config.n_results
        k = n if nodes_out else max(n, 50)
        contexts = assemble(self.resources.graph, self.rank(question, k), n, nodes_out=nodes_out)
        return RetrievalResult(contexts=contexts, reason=None if contexts else "vector search returned nothing")


