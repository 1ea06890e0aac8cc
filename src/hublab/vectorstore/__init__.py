"""Vector stores."""

from hublab.vectorstore.base import SearchHit, VectorStore

__all__ = ["SearchHit", "VectorStore"]
