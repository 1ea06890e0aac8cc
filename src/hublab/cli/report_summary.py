"""CLI: ``hublab report summary`` — every evaluation of params.yaml next to the thesis's number."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hublab.cli.app import AS_JSON
from hublab.cli.report import report_app
from hublab.config import settings as load_settings
from hublab.errors import InputError


@report_app.command("summary")
def summary_cmd(
    out: Path | None = typer.Option(None, "--out", help="Also write methods.md and methods.csv (the DVC `compare` "
                                    "stage's table and plot data) into this directory."),
    as_json: bool = AS_JSON,
) -> None:
    """Headline metrics of every evaluation in params.yaml (DVC evaluate stage) next to the thesis's numbers for
    the same method and graph variant."""
    from hublab.experiment.comparison.evaluations import evaluation_rows, markdown, write_report
    from hublab.preflight import output_dir_problem

    if out is not None and (why := output_dir_problem(out)):  # before anything is read
        raise InputError(why, file=str(out), field="--out")
    st = load_settings()
    _require_thesis_results(st)
    rows = evaluation_rows(st)
    if out is not None:
        write_report(st, out)
    if as_json:
        typer.echo(json.dumps(rows, indent=1))
        return
    typer.echo(markdown(rows) if rows else "no evaluation results yet: run `dvc repro evaluate`")


def _require_thesis_results(st) -> None:
    """The summary puts the thesis's number beside each evaluation: without the reference data every thesis row
    would silently go missing, so it stops first, naming the path it looked at."""
    where = st.path("thesis_results")
    if not where.is_dir():
        why = "is not a folder" if where.exists() else "does not exist"
        raise InputError(f"the thesis reference data is missing: {where} {why} (params.yaml "
                         "paths.thesis_results; check the reference data out next to this repo as ../shared)")
