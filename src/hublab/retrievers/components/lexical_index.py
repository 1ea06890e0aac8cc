"""A BM25 index (rank-bm25) over retrieval units, and the base of the lexical methods (``bm25``, ``hybrid``).

Tokenisation drops :data:`~hublab.retrievers.components.question_text.STOPWORDS`: BM25's idf already
down-weights them, but question words dominate short triple texts.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.question_text import content_tokens
from hublab.retrievers.components.results import assemble
from hublab.retrievers.components.units import Unit, answer_types, node_units, triple_units

tokenize = content_tokens


def resolve_units(resources: Resources, kind: str, *, add_rel: bool, types: list[str] | None) -> list[Unit]:
    """``auto`` = node documents on a graph that answers with nodes (STaRK SKB), triple strings on ORKG."""
    if kind == "auto":
        kind = "nodes" if resources.graph.answers_with_nodes else "triples"
    if kind == "nodes":
        return node_units(resources.graph, types=types, add_rel=add_rel)
    return triple_units(resources.graph.triples())


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


class LexicalRetriever(Retriever):
    """Shared corpus and BM25 index of the lexical methods.

    Args:
        units: ``auto`` (nodes on a STaRK SKB, triples on ORKG), ``nodes`` or ``triples``.
        add_rel: node documents include the node's relations (STaRK ``get_doc_info(add_rel)``).
        candidate_types: node types to rank (default: the graph's candidate set).
        n_results: contexts returned per question.
    """

    def __init__(
        self,
        resources: Resources,
        *,
        units: Literal["auto", "nodes", "triples"] = "auto",
        add_rel: bool = True,
        candidate_types: list[str] | None = None,
        n_results: Annotated[int, Field(ge=1)] = 20,
    ) -> None:
        super().__init__(resources)
        self.kind = units
        self.add_rel = add_rel
        self.types = answer_types(resources.graph, candidate_types)
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
        group = "nodes" if ranked and ranked[0][0].triple is None else "triples"
        contexts = assemble(self.resources.graph, {group: ranked}, self.n_results,
                            nodes_out=self.resources.graph.answers_with_nodes)
        return RetrievalResult(contexts=contexts, reason=None if contexts else f"{what} matched nothing")


