"""Text embedders."""

from hublab.embedding.base import Embedder

__all__ = ["Embedder"]
