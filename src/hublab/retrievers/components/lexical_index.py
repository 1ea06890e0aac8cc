"""A BM25 index (rank-bm25) over retrieval units, and the base of the lexical methods (``bm25``, ``hybrid``).

Tokenisation drops :data:`~hublab.retrievers.components.question_text.STOPWORDS`: BM25's idf already
down-weights them, but question words dominate short triple texts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

import numpy as np
from pydantic import Field

from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.question_text import content_tokens
from hublab.retrievers.components.results import assemble
from hublab.retrievers.components.unit_text import DEFAULT_CONTEXT, DEFAULT_TRIPLE_TEXT, UnitTextParams
from hublab.retrievers.components.units import Unit, answer_types, node_units, triple_units

tokenize = content_tokens


def resolve_units(resources: Resources, kind: str, *, add_rel: bool, types: list[str] | None,
                  triple_text: str = DEFAULT_TRIPLE_TEXT, context: str = DEFAULT_CONTEXT) -> list[Unit]:
    """``auto`` = node documents on a graph that answers with nodes (STaRK SKB), triples on ORKG; written as
    ``triple_text`` and ``context`` say (:mod:`~hublab.retrievers.components.unit_text`)."""
    g = resources.graph
    if kind == "auto":
        kind = "nodes" if g.answers_with_nodes else "triples"
    if kind == "nodes":
        return node_units(g, types=types, add_rel=add_rel, context=context)
    return triple_units(g.triples(), graph=g, triple_text=triple_text, context=context)


#: rank-bm25's Okapi defaults (Robertson & Zaragoza's usual k1 in [1.2, 2.0], b = 0.75)
DEFAULT_K1, DEFAULT_B = 1.5, 0.75


class BM25Index:
    """Okapi BM25 over unit texts; ``k1`` (term-frequency saturation) and ``b`` (length normalisation) are the
    method's two real knobs."""

    def __init__(self, units: list[Unit], *, k1: float = DEFAULT_K1, b: float = DEFAULT_B) -> None:
        from rank_bm25 import BM25Okapi

        self.units = units
        corpus = [tokenize(u.text) or ["_"] for u in units]
        self.bm25 = BM25Okapi(corpus, k1=k1, b=b) if corpus else None
        self._postings: dict[str, tuple[np.ndarray, np.ndarray]] | None = None

    def _scores(self, tokens: list[str]) -> np.ndarray:
        """rank-bm25's ``get_scores`` computed over each token's postings only: the same per-document float
        operations in the same order (a document without the token adds exactly 0), so the same scores, without
        rank-bm25's Python loop over every document per query token (~0.15 s per question on GV1)."""
        bm = self.bm25
        assert bm is not None
        if self._postings is None:
            docs: dict[str, list[int]] = {}
            tfs: dict[str, list[int]] = {}
            for i, freqs in enumerate(bm.doc_freqs):
                for word, tf in freqs.items():
                    docs.setdefault(word, []).append(i)
                    tfs.setdefault(word, []).append(tf)
            self._postings = {w: (np.asarray(docs[w]), np.asarray(tfs[w], dtype=float)) for w in docs}
            self._doc_len = np.array(bm.doc_len)
        score = np.zeros(bm.corpus_size)
        for q in tokens:
            post = self._postings.get(q)
            if post is None:
                continue
            idx, tf = post
            dl = self._doc_len[idx]
            score[idx] += (bm.idf.get(q) or 0) * (tf * (bm.k1 + 1) / (tf + bm.k1 * (1 - bm.b + bm.b * dl / bm.avgdl)))
        return score

    def search(self, query: str, k: int) -> list[tuple[Unit, float]]:
        tokens = tokenize(query)
        if self.bm25 is None or not tokens:
            return []
        scores = self._scores(tokens)
        order = np.argsort(-scores, kind="stable")[:k]
        return [(self.units[int(i)], float(scores[i])) for i in order if scores[i] > 0]


@dataclass(frozen=True)
class LexicalParams(UnitTextParams):
    """The parameters of the lexical methods (``bm25``; ``hybrid`` adds its own), plus ``triple_text`` and ``context``
    (:class:`~hublab.retrievers.components.unit_text.UnitTextParams`).

    Args:
        units: ``auto`` (nodes on a STaRK SKB, triples on ORKG), ``nodes`` or ``triples``.
        add_rel: node documents include the node's relations (STaRK ``get_doc_info(add_rel)``).
        candidate_types: node types to rank (default: the graph's candidate set).
        n_results: contexts returned per question.
        k1: BM25 term-frequency saturation (rank-bm25 default 1.5).
        b: BM25 document-length normalisation, 0 (none) to 1 (full); default 0.75.
    """

    units: Literal["auto", "nodes", "triples"] = "auto"
    add_rel: bool = True
    candidate_types: list[str] | None = None
    n_results: Annotated[int, Field(ge=1)] = 20
    k1: Annotated[float, Field(ge=0.0)] = DEFAULT_K1
    b: Annotated[float, Field(ge=0.0, le=1.0)] = DEFAULT_B


class LexicalRetriever(Retriever):
    """Shared corpus and BM25 index of the lexical methods; parameters: :class:`LexicalParams`."""

    params_type = LexicalParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        self.types = answer_types(resources.graph, self.config.candidate_types)
        self._units: list[Unit] | None = None
        self._bm25: BM25Index | None = None

    @property
    def units(self) -> list[Unit]:
        if self._units is None:
            c = self.config
            self._units = resolve_units(self.resources, c.units, add_rel=c.add_rel, types=self.types,
                                        triple_text=c.triple_text, context=c.context)
        return self._units

    @property
    def bm25(self) -> BM25Index:
        if self._bm25 is None:
            self._bm25 = BM25Index(self.units, k1=float(self.config.k1), b=float(self.config.b))
        return self._bm25

    def _result(self, ranked: list[tuple[Unit, float]], what: str) -> RetrievalResult:
        group = "nodes" if ranked and ranked[0][0].triple is None else "triples"
        contexts = assemble(self.resources.graph, {group: ranked}, self.config.n_results,
                            nodes_out=self.resources.graph.answers_with_nodes)
        return RetrievalResult(contexts=contexts, reason=None if contexts else f"{what} matched nothing")


