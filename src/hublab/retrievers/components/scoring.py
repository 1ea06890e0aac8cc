"""Embedding-similarity scoring of arbitrary texts against a question (vectors cached by text)."""

from __future__ import annotations

import numpy as np

from hublab.embedding.base import Embedder
from hublab.errors import InputError
from hublab.scores import dot_scores


def require_embedder(embedder: Embedder | None, retriever: str, why: str) -> Embedder:
    if embedder is None:
        raise InputError(f"{retriever} needs an embedder ({why}); configure 'embedder' in the pipeline",
                         field="embedder")
    return embedder


class TextScorer:
    """Cosine similarity between texts and query vectors, with a per-retriever vector cache."""

    def __init__(self, embedder: Embedder, max_cache: int = 200_000) -> None:
        self.embedder = embedder
        self.max_cache = max_cache
        self._cache: dict[str, np.ndarray] = {}

    def vectors(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            if len(self._cache) + len(missing) > self.max_cache:
                self._cache.clear()
            self._cache.update(zip(missing, vecs, strict=True))
        if not texts:
            return np.zeros((0, self.embedder.dim or 1), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def query(self, texts: list[str]) -> np.ndarray:
        """Query vectors (not cached: questions rarely repeat)."""
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

    def scores(self, query_vecs: np.ndarray, texts: list[str]) -> np.ndarray:
        """Max cosine over the query vectors for each text (vectors are L2-normalised), rounded float64 so that
        orders taken from it are the same on every CPU (``hublab.scores``)."""
        if not texts:
            return np.zeros(0, dtype=np.float64)
        return dot_scores(self.vectors(texts), query_vecs).max(axis=1)
