"""The Embedder interface: texts → L2-normalised float32 vectors (so cosine = dot product)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np


class Embedder(ABC):
    name: str = "embedder"
    dim: int = 0

    @abstractmethod
    def embed(self, texts: list[str]) -> np.ndarray:
        """Shape (len(texts), dim), float32, L2-normalised rows."""

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
