"""Evaluation: thesis-exact retrieval metrics, STaRK metrics, generation metrics, conformance checks."""
