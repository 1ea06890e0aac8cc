"""Evaluation: thesis-exact retrieval metrics, STaRK metrics, generation metrics, conformance checks."""

#: the submodules, one per kind of metric; importing the package loads none of them
__all__ = ["conformance", "generation", "names", "ragas_metrics", "retrieval", "significance", "stark", "thesis_tables"]
