"""The Retriever interface and the resources (graph, embedder, LLM, vector store) it is given.

Retrievers depend only on these interfaces, never on concrete backends, so the same HubLink code
runs over rdflib or a SPARQL endpoint, Milvus Lite or a cluster, OpenAI or llama.cpp or no LLM.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple
from hublab.llm.base import LLM
from hublab.vectorstore.base import VectorStore


@dataclass
class Context:
    """One retrieved context item. ``text`` is the canonical triple string for triple contexts."""

    text: str
    triple: Triple | None = None
    score: float | None = None
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass
class RetrievalResult:
    contexts: list[Context] = field(default_factory=list)
    answer: str | None = None
    reason: str | None = None  # why the result is empty/partial (unlinkable entity, LLM failure, ...)
    sources: list[dict[str, str]] = field(default_factory=list)  # e.g. [{"id": "R1", "title": ..., "doi": ...}]

    @property
    def context_strings(self) -> list[str]:
        return [c.text for c in self.contexts]


@dataclass
class Resources:
    """What a retriever may use. Any of them may be None if the pipeline does not configure it."""

    graph: KnowledgeGraph
    embedder: Embedder | None = None
    llm: LLM | None = None
    vector_store: VectorStore | None = None
    index_name: str = ""  # collection/namespace for this graph + retriever config
    cache_dir: str | None = None


class Retriever(ABC):
    """A KGQA retriever. Must return the triples it used (thesis §7.1.4), ranked best first."""

    name: str = "retriever"

    def __init__(self, resources: Resources, **params: Any) -> None:
        self.resources = resources
        self.params = params

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        """Build or update whatever index the retriever needs; return stats. Default: nothing."""
        return {}

    @abstractmethod
    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        """Never raises on bad input: returns an empty-but-valid result with ``reason`` set."""
