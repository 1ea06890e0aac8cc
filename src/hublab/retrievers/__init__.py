"""Retrievers: one interface (:class:`Retriever`), one registry (:mod:`hublab.retrievers.registry`).

What a method of its own (a plugin) needs is public here: the interface and its result types, and
:func:`content_tokens`, the question words the built-in lexical methods match on."""

from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.components.question_text import content_tokens

__all__ = ["Context", "Resources", "RetrievalResult", "Retriever", "content_tokens"]
