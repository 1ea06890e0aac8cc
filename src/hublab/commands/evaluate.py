"""CLI commands: evaluate."""

from hublab.cliapp import app, data_app, graph_app  # noqa: F401
