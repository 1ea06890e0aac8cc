"""HubLab: MLOps-tracked experimentation platform for LLM retrieval over research knowledge graphs."""

__version__ = "0.1.0"
