"""Knowledge graph layer: ORKG triple model, the KnowledgeGraph interface and its backends."""

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple, parse_triple_string

__all__ = ["Knowledge", "KnowledgeGraph", "Triple", "parse_triple_string"]
