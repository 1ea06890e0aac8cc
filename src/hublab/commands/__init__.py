"""CLI command modules (data, graph, evaluate, retrieve, tune)."""
