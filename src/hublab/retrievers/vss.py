"""VSS: STaRK's vector similarity search over node documents and/or triple strings.

``units: nodes`` embeds each candidate node's document (label + relations, STaRK ``get_doc_info(add_rel)``);
``units: triples`` embeds every triple string of the graph; ``both`` merges the two rankings by score.
On an ORKG graph node hits are expanded to their triples (triple-based metrics); on a STaRK SKB the
contexts are the nodes themselves (``metadata["node_id"]``).
"""

from __future__ import annotations

from typing import Any

from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.dense import DenseIndex
from hublab.retrievers.registry import register
from hublab.retrievers.units import Unit, empty, is_skb, node_result_contexts, node_units, triple_units

UNIT_KINDS = ("nodes", "triples", "both")


def candidate_types_of(resources: Resources, explicit: list[str] | None) -> list[str] | None:
    if explicit:
        return list(explicit)
    return list(getattr(resources.graph, "candidate_types", None) or []) or None


def build_units(resources: Resources, kind: str, *, add_rel: bool, types: list[str] | None) -> dict[str, list[Unit]]:
    if kind not in UNIT_KINDS:
        raise ValueError(f"units must be one of {UNIT_KINDS}, got {kind!r}")
    out: dict[str, list[Unit]] = {}
    if kind in ("nodes", "both"):
        out["nodes"] = node_units(resources.graph, types=types, add_rel=add_rel)
    if kind in ("triples", "both"):
        out["triples"] = triple_units(resources.graph.triples())
    return out


def assemble(
    resources: Resources, ranked: dict[str, list[tuple[Unit, float]]], n_results: int, *, nodes_out: bool
) -> list[Context]:
    """Turn per-kind rankings into contexts: nodes (SKB) or triples (ORKG, node hits expanded)."""
    graph = resources.graph
    if nodes_out:
        merged = sorted(ranked.get("nodes", []), key=lambda x: -x[1])
        return node_result_contexts(graph, merged, n_results, expand_triples=False)
    node_ctx = node_result_contexts(graph, ranked.get("nodes", []), n_results, expand_triples=True)
    triple_ctx = [u.to_context(s) for u, s in ranked.get("triples", [])]
    if node_ctx and triple_ctx:
        # Node and triple similarities are not comparable (and expanded triples share their node's score):
        # fuse the two rankings by reciprocal rank instead.
        fused: dict[str, float] = {}
        first: dict[str, Context] = {}
        for ranking in (triple_ctx, node_ctx):
            for rank, c in enumerate(ranking, start=1):
                first.setdefault(c.text, c)
                fused[c.text] = fused.get(c.text, 0.0) + 1.0 / (60 + rank)
        merged_ctx = [first[t] for t in sorted(fused, key=lambda t: -fused[t])]
    else:
        merged_ctx = node_ctx or triple_ctx
    out: list[Context] = []
    seen: set[str] = set()
    for c in merged_ctx:
        if c.text in seen:
            continue
        seen.add(c.text)
        out.append(c)
        if len(out) >= n_results:
            break
    return out


@register("vss")
class VSSRetriever(Retriever):
    def __init__(
        self,
        resources: Resources,
        *,
        units: str = "nodes",
        add_rel: bool = True,
        candidate_types: list[str] | None = None,
        n_results: int = 20,
        distance_metric: str = "cosine",
        **params: Any,
    ) -> None:
        super().__init__(resources, **params)
        if params:
            raise ValueError(f"unknown VSS parameters: {sorted(params)}")
        self.kind = units
        self.add_rel = add_rel
        self.types = candidate_types_of(resources, candidate_types)
        self.n_results = int(n_results)
        self.metric = distance_metric
        self._indexes: dict[str, DenseIndex] | None = None

    def indexes(self) -> dict[str, DenseIndex]:
        if self._indexes is None:
            groups = build_units(self.resources, self.kind, add_rel=self.add_rel, types=self.types)
            self._indexes = {
                k: DenseIndex(self.resources, us, prefix=f"vss_{k}", metric=self.metric) for k, us in groups.items()
            }
        return self._indexes

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {k: ix.build() for k, ix in self.indexes().items()}

    def rank(self, question: str, k: int) -> dict[str, list[tuple[Unit, float]]]:
        return {kind: ix.search(question, k) for kind, ix in self.indexes().items()}

    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        if not question or not question.strip():
            return empty("empty question")
        if not any(ix.units for ix in self.indexes().values()):
            return empty("no units to search (empty graph or no nodes of the candidate types)")
        nodes_out = is_skb(self.resources.graph)
        k = self.n_results if nodes_out else max(self.n_results, 50)
        contexts = assemble(self.resources, self.rank(question, k), self.n_results, nodes_out=nodes_out)
        return RetrievalResult(contexts=contexts, reason=None if contexts else "vector search returned nothing")
