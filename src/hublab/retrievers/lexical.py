"""BM25 (rank-bm25) over triple strings or node documents, and a BM25 + dense hybrid fused with
reciprocal-rank fusion (RRF, k=60 by default; STaRK's HybridRetriever uses the same fusion).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.dense import DenseIndex
from hublab.retrievers.registry import register
from hublab.retrievers.units import Unit, empty, is_skb, node_units, triple_units
from hublab.retrievers.vss import assemble, candidate_types_of

_TOKEN_RE = re.compile(r"\w+", re.UNICODE)
# A small English stop list: BM25 idf already down-weights them, but question words dominate short texts.
_STOP = frozenset(
    "a an and are as at be been by did do does for from has have in is it its of on or the this that to was "
    "were what which who whom whose with how many much when where why".split()
)


def tokenize(text: str) -> list[str]:
    return [t for t in _TOKEN_RE.findall(text.lower()) if t not in _STOP]


def resolve_units(resources: Resources, kind: str, *, add_rel: bool, types: list[str] | None) -> list[Unit]:
    """``auto`` = node documents on a STaRK SKB, triple strings on an ORKG graph."""
    if kind == "auto":
        kind = "nodes" if is_skb(resources.graph) else "triples"
    if kind == "nodes":
        return node_units(resources.graph, types=types, add_rel=add_rel)
    if kind == "triples":
        return triple_units(resources.graph.triples())
    raise ValueError(f"units must be auto, nodes or triples, got {kind!r}")


class BM25Index:
    def __init__(self, units: list[Unit]) -> None:
        from rank_bm25 import BM25Okapi

        self.units = units
        corpus = [tokenize(u.text) or ["_"] for u in units]
        self.bm25 = BM25Okapi(corpus) if corpus else None

    def search(self, query: str, k: int) -> list[tuple[Unit, float]]:
        tokens = tokenize(query)
        if self.bm25 is None or not tokens:
            return []
        scores = np.asarray(self.bm25.get_scores(tokens))
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.units[int(i)], float(scores[i])) for i in order if scores[i] > 0]


def rrf(rankings: list[list[tuple[Unit, float]]], k: int = 60) -> list[tuple[Unit, float]]:
    """Reciprocal-rank fusion: score(u) = Σ 1 / (k + rank(u)), ranks 1-based; ties keep first-seen order."""
    scores: dict[str, float] = {}
    by_key: dict[str, Unit] = {}
    for ranking in rankings:
        for rank, (u, _) in enumerate(ranking, start=1):
            by_key.setdefault(u.key, u)
            scores[u.key] = scores.get(u.key, 0.0) + 1.0 / (k + rank)
    order = sorted(scores, key=lambda key: -scores[key])
    return [(by_key[key], scores[key]) for key in order]


class _LexicalBase(Retriever):
    def __init__(
        self,
        resources: Resources,
        *,
        units: str = "auto",
        add_rel: bool = True,
        candidate_types: list[str] | None = None,
        n_results: int = 20,
        **params: Any,
    ) -> None:
        super().__init__(resources, **params)
        self.kind = units
        self.add_rel = add_rel
        self.types = candidate_types_of(resources, candidate_types)
        self.n_results = int(n_results)
        self._units: list[Unit] | None = None
        self._bm25: BM25Index | None = None

    @property
    def units(self) -> list[Unit]:
        if self._units is None:
            self._units = resolve_units(self.resources, self.kind, add_rel=self.add_rel, types=self.types)
        return self._units

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            self._bm25 = BM25Index(self.units)
        return self._bm25

    def _result(self, ranked: list[tuple[Unit, float]], what: str) -> RetrievalResult:
        nodes_out = is_skb(self.resources.graph)
        group = "nodes" if ranked and ranked[0][0].triple is None else "triples"
        contexts = assemble(self.resources, {group: ranked}, self.n_results, nodes_out=nodes_out)
        return RetrievalResult(contexts=contexts, reason=None if contexts else f"{what} matched nothing")


@register("bm25")
class BM25Retriever(_LexicalBase):
    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        if self.params:
            raise ValueError(f"unknown BM25 parameters: {sorted(self.params)}")

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"units": len(self.bm25.units)}

    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        if not question or not tokenize(question):
            return empty("question has no searchable terms")
        if not self.units:
            return empty("no units to search")
        k = self.n_results if is_skb(self.resources.graph) else max(self.n_results, 50)
        return self._result(self.bm25.search(question, k), "BM25")


@register("hybrid")
class HybridRetriever(_LexicalBase):
    def __init__(
        self,
        resources: Resources,
        *,
        rrf_k: int = 60,
        candidates: int = 100,
        distance_metric: str = "cosine",
        **params: Any,
    ) -> None:
        super().__init__(resources, **params)
        if self.params:
            raise ValueError(f"unknown hybrid parameters: {sorted(self.params)}")
        self.rrf_k = int(rrf_k)
        self.candidates = int(candidates)
        self.metric = distance_metric
        self._dense: DenseIndex | None = None

    @property
    def dense(self) -> DenseIndex:
        if self._dense is None:
            self._dense = DenseIndex(self.resources, self.units, prefix="hybrid", metric=self.metric)
        return self._dense

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return {"bm25_units": len(self.bm25.units), "dense": self.dense.build()}

    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        if not question or not question.strip():
            return empty("empty question")
        if not self.units:
            return empty("no units to search")
        depth = max(self.candidates, self.n_results)
        fused = rrf([self.bm25.search(question, depth), self.dense.search(question, depth)], self.rrf_k)
        return self._result(fused, "hybrid search")
