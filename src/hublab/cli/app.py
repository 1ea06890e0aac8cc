"""The typer application objects. Command modules in :mod:`hublab.commands` attach to these."""

from __future__ import annotations

import os

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


# Every command that builds a pipeline takes the same endpoint override: any OpenAI-compatible server
# (OpenAI, Ollama, vLLM, a llama.cpp server) replaces the pipeline's `backend: openai` endpoint and model.
LLM_BASE_URL = typer.Option(None, "--llm-base-url", envvar="HUBLAB_LLM_BASE_URL",
                            help="OpenAI-compatible endpoint for every `backend: openai` LLM of the pipeline.")
LLM_MODEL = typer.Option(None, "--llm-model", envvar="HUBLAB_LLM_MODEL", help="Model name at that endpoint.")
AS_JSON = typer.Option(False, "--json", help="Print the result as JSON.")


def use_llm_endpoint(base_url: str | None, model: str | None) -> None:
    """Hand the override to the LLM factory (docs/models.md), which applies it to every openai-backend LLM."""
    if base_url:
        os.environ["HUBLAB_LLM_BASE_URL"] = base_url
    if model:
        os.environ["HUBLAB_LLM_MODEL"] = model
