"""The typer application objects. Command modules in :mod:`hublab.commands` attach to these."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="hublab",
    help="HubLab: KGQA retrieval experiments over research knowledge graphs (ORKG), tracked in MLflow.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
data_app = typer.Typer(help="Build data: ORKG snapshot, graph variants GV1-GV4, KGQA datasets.", no_args_is_help=True)
graph_app = typer.Typer(help="Inspect and compare graphs.", no_args_is_help=True)
app.add_typer(data_app, name="data")
app.add_typer(graph_app, name="graph")
