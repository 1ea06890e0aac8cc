"""The Embedder interface: texts → L2-normalised float32 vectors (so cosine = dot product)."""

from __future__ import annotations

from abc import ABC, abstractmethod

import numpy as np

#: Every component of a stored embedding is a multiple of 2^-GRID_BITS (about 9.5e-7). Two CPUs compute the same
#: float64 unit vector up to ~1e-16 (different BLAS and ATen kernels); rounded straight to float32 (spacing ~4e-9
#: near 0.05), one component in ~10^7 lands on the other side of a rounding boundary, so GV1's ~4.5 million
#: components gave another index file on another CPU. On this grid a component changes only when it lies
#: within ~1e-16 of one of the grid's midpoints: about one in 10^10. Every grid value is exact in float32 (a unit
#: vector's components need at most 21 significant bits here), and rounding onto it is idempotent.
GRID_BITS = 20
_SCALE = float(2**GRID_BITS)


def on_grid(vectors) -> np.ndarray:
    """``vectors`` rounded to the portable grid (see :data:`GRID_BITS`), as float32."""
    v = np.asarray(vectors, dtype=np.float64)
    return (np.round(v * _SCALE) / _SCALE).astype(np.float32)


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

    @property
    def cache_id(self) -> str:
        """What an embedding cache keys a text's stored vector by (the model's output before any rounding the
        embedder applies on the way out): by default :attr:`vectors_id`."""
        return self.vectors_id

    def embed_one(self, text: str) -> np.ndarray:
        return self.embed([text])[0]
