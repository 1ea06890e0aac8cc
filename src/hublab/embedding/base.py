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

    @property
    def vectors_id(self) -> str:
        """What a text's vector depends on besides the text: embedding caches and index identities key on it.
        The model's name, plus how its vectors are computed where that changed them."""
        return self.name

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
