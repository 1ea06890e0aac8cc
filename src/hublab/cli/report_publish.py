"""CLI: ``hublab report publish`` — the committed comparison into the project's MLflow store (the quick start's
last step), so the MLflow UI shows it without ``dvc repro compare``."""

from __future__ import annotations

import json

import typer

from hublab.cli.app import AS_JSON
from hublab.cli.report import report_app
from hublab.config import settings as load_settings
from hublab.errors import raise_all
from hublab.preflight import check_names


@report_app.command("publish")
def publish_cmd(
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow experiment of the comparison run "
                                          "(default compare-fair, where `hublab report compare` logs it)."),
    as_json: bool = AS_JSON,
) -> None:
    """Log reports/summary/methods.csv (every LLM-free method, default and tuned, with intervals and the thesis's
    number) as the MLflow comparison run, marked "from the committed reports", unless the store has one."""
    # local: the comparison machinery (numpy, pandas, the retrievers: ~0.4 s) loads when the command runs
    from hublab.experiment.comparison.committed import publish_committed
    from hublab.experiment.comparison.default_vs_tuned import EXPERIMENT

    experiment = experiment or EXPERIMENT
    problems: list = []
    check_names(problems, experiment=experiment)
    raise_all(problems)
    st = load_settings()
    logged = publish_committed(st, experiment=experiment)
    if as_json:
        typer.echo(json.dumps({"published": logged is not None, "experiment": experiment,
                               "parent_run": logged.parent if logged else None,
                               "view": logged.view if logged else None}, indent=1))
        return
    if logged is None:
        typer.echo(f"MLflow experiment {experiment} has a comparison run already (computed here, or published "
                   "before): nothing logged; `dvc repro compare` recomputes it")
        return
    typer.echo(f"logged the committed comparison to MLflow experiment {experiment} (run {logged.parent}); "
               f"the headline columns: `mlflow ui --backend-store-uri sqlite:///mlruns/mlflow.db`, then "
               f"http://127.0.0.1:5000/{logged.view}")
