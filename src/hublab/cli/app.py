"""The typer application objects. The command modules of :mod:`hublab.cli` attach to these."""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path
from typing import Any

import typer
import typer.core
from typer.core import TyperCommand

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


def _version(value: bool) -> None:
    if value:
        from hublab import __version__

        typer.echo(f"hublab {__version__}")
        raise typer.Exit()


@app.callback()
def _options(verbose: bool = typer.Option(False, "-v", "--verbose", help="INFO lines of HubLab and its libraries "
                                          "(MLflow, Optuna...) on stderr, and every warning; default: quiet."),
             version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                          help="Print HubLab's version and exit.")) -> None:
    """HubLab: KGQA retrieval experiments over research knowledge graphs (ORKG), tracked in MLflow."""
    if verbose:
        from hublab.env import set_verbosity

        set_verbosity(True)


def _type_column(self, ctx) -> str | None:
    """The help's type column: an option's explicit metavar (``IRI``, ``N``), else nothing: never typer's ``<str>``
    or ``<bool>`` placeholders, nor the option's name again in capitals (the column took a fifth of 80 columns)."""
    if getattr(self, "is_flag", False) or getattr(self, "is_bool_flag", False):
        return None
    return self.metavar  # an option's name says what it takes; a metavar only where it adds (IRI, N, FILE)


typer.core.TyperOption.display_type_rich = _type_column  # type: ignore[method-assign]
typer.core.TyperArgument.display_type_rich = lambda self, ctx: None  # type: ignore[method-assign] # its name shows


# Every command that builds a pipeline takes the same endpoint override: any OpenAI-compatible server
# (OpenAI, Ollama, vLLM, a llama.cpp server) replaces the pipeline's `backend: openai` endpoint and model.
LLM_BASE_URL = typer.Option(None, "--llm-base-url", envvar="HUBLAB_LLM_BASE_URL",
                            help="OpenAI-compatible endpoint for every `backend: openai` LLM of the pipeline.")
LLM_MODEL = typer.Option(None, "--llm-model", envvar="HUBLAB_LLM_MODEL", help="Model name at that endpoint.")
AS_JSON = typer.Option(False, "--json", help="Print the result as JSON.")
#: what --graph accepts, everywhere (hublab.graph.source)
GRAPH_HELP = ("gv1..gv4, gv3_orkg, a graph declared in params.yaml, an RDF file (.ttl, .nt, .rdf, .jsonld, .gz …) "
              "or a SPARQL endpoint URL.")
LABEL_PREDICATE = typer.Option(None, "--label-predicate", metavar="IRI", help="A predicate whose literals label "
                               "nodes (repeatable), ahead of params.yaml's.")
TYPE_PREDICATE = typer.Option(None, "--type-predicate", metavar="IRI", help="A predicate whose objects are "
                              "nodes' classes (repeatable), besides rdf:type.")


def call_settings(label_predicates: list[str] | None = None, type_predicates: list[str] | None = None):
    """The project's settings with this call's ``--label-predicate`` and ``--type-predicate`` options (see
    ``with_label_predicates``, ``with_type_predicates``); a predicate that is no IRI: InputError naming its option."""
    from hublab.config import settings
    from hublab.graph.source import with_label_predicates, with_type_predicates

    return with_type_predicates(with_label_predicates(settings(), label_predicates), type_predicates)


HUB_TYPE = typer.Option(None, "--hub-type", metavar="IRI", help="HubLink's hub type: a class whose instances are "
                        "hub roots (repeatable). Default: the graph's declared ones, else ORKG's Paper.")


class StrictCommand(TyperCommand):
    """A command that refuses an option given twice (``--limit 2 --limit 3``, ``--resume --no-resume``): click
    would silently keep the last one."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        from hublab.errors import InputError, raise_all

        owner: dict[str, str] = {}
        for p in self.params:  # typer vendors click: recognised by kind, not by class
            if getattr(p, "param_type_name", "") == "option" and not getattr(p, "multiple", False) \
                    and not getattr(p, "count", False):
                for opt in (*p.opts, *p.secondary_opts):
                    owner[opt] = p.name or opt
        seen: dict[str, list[str]] = {}
        for tok in args:
            if tok == "--":
                break
            opt = tok.split("=", 1)[0]
            if opt in owner:
                seen.setdefault(owner[opt], []).append(opt)
        raise_all([InputError(f"option given {len(opts)} times ({', '.join(opts)}): give it once", field=opts[0])
                   for opts in seen.values() if len(opts) > 1])
        return super().parse_args(ctx, args)


def use_llm_endpoint(base_url: str | None, model: str | None) -> None:
    """Hand the override to the LLM factory (docs/models.md), which applies it to every openai-backend LLM.
    A URL carrying credentials is refused (it would be logged as a parameter)."""
    from hublab.errors import InputError
    from hublab.redact import secret_value_problem

    for opt, value in (("--llm-base-url / $HUBLAB_LLM_BASE_URL", base_url), ("--llm-model / $HUBLAB_LLM_MODEL", model)):
        why = secret_value_problem(value or "")
        if why:
            raise InputError(f"{why} (value not shown)", field=opt)
    if base_url:
        os.environ["HUBLAB_LLM_BASE_URL"] = base_url
    if model:
        os.environ["HUBLAB_LLM_MODEL"] = model


def pipeline_arg(path: Path) -> Path:
    """A pipeline argument or option: a YAML path, a pipeline name as ``hublab list`` prints it, or an installed
    method's name (``hublab.method_pipelines``)."""
    from hublab.config import settings
    from hublab.method_pipelines import resolve_pipeline

    return resolve_pipeline(settings(), path)


@contextlib.contextmanager
def interrupt_message(how: str):
    """Ctrl-C, SIGTERM or SIGHUP (``hublab.signals``) inside a long command: one line saying what stopped it and how
    to go on, and the exit code a shell expects (128 + the signal), instead of click's bare "Aborted!"."""
    try:
        yield
    except KeyboardInterrupt as exc:
        from hublab.signals import describe

        what, code = describe(exc)
        print(f"interrupted ({what}): {how}", file=sys.stderr)
        raise typer.Exit(code) from None
