"""``vector``: brute-force cosine top-k over every triple string of the graph (numpy, no vector store)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

import numpy as np
from pydantic import Field

from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.components.scoring import require_embedder
from hublab.scores import dot_scores


@dataclass(frozen=True)
class VectorParams:
    """The ``vector`` method's parameters.

    Args:
        top_k: triples returned per question.
    """

    top_k: Annotated[int, Field(ge=1)] = 50


class VectorRetriever(Retriever):
    """Dense triple retrieval without a vector database; a smoke-test method for the runner; parameters:
    :class:`VectorParams`."""

    params_type = VectorParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        require_embedder(resources.embedder, "vector", "it ranks triples by embedding similarity")
        self._triples = None
        self._matrix: np.ndarray | None = None

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        self._triples = list(self.resources.graph.triples())
        texts = [t.render() for t in self._triples]
        self._matrix = self.resources.embedder.embed(texts) if texts else np.zeros((0, 1), np.float32)
        return {"triples": len(texts)}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if self._matrix is None:
            self.index(progress=False)
        if not self._triples:
            return RetrievalResult(reason="empty graph")
        q = self.resources.embedder.embed([question])[0]
        scores = dot_scores(self._matrix, q)[:, 0]  # portable: rounded float64 (hublab.scores)
        top = np.argsort(-scores, kind="stable")[: self.config.top_k]
        return RetrievalResult([Context(self._triples[i].render(), self._triples[i], float(scores[i])) for i in top])
