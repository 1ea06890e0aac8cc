"""HubLink (thesis Ch. 4): hub-based retrieval over research knowledge graphs."""

from hublab.retrievers.methods.hublink.retriever import HubLinkRetriever

__all__ = ["HubLinkRetriever"]
