"""Retrievers: one interface (:class:`Retriever`), one registry (:mod:`hublab.retrievers.registry`)."""

from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever

__all__ = ["Context", "Resources", "RetrievalResult", "Retriever"]
