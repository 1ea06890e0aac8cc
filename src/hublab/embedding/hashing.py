"""A token-hashing bag-of-words embedder: no model cost, for benchmarks and tests that measure what is *not*
embedding (graph walks, store inserts, search). Tokens are hashed with CRC-32, not Python's ``hash`` (salted
per process), so the same texts give the same vectors in every process."""

from __future__ import annotations

import zlib

import numpy as np

from hublab.embedding.base import Embedder


class HashingEmbedder(Embedder):
    def __init__(self, dim: int = 384) -> None:
        self.dim = dim
        self.name = f"hash{dim}"

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            for w in t.lower().split():
                out[i, zlib.crc32(w.encode()) % self.dim] += 1.0
        return out / np.maximum(np.linalg.norm(out, axis=1, keepdims=True), 1e-12)
