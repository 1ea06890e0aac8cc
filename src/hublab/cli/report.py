"""CLI: ``hublab report compare`` — every LLM-free method default and tuned, with intervals and corrected tests
(the thesis comparison; with ``--graph`` the comparison on any graph, :mod:`hublab.cli.compare`)."""

from __future__ import annotations

from pathlib import Path

import typer

from hublab.cli.app import AS_JSON, HUB_TYPE, app

report_app = typer.Typer(help="Reports across runs.", no_args_is_help=True)
app.add_typer(report_app, name="report")


@report_app.command("compare")
def compare_cmd(
    graph: str | None = typer.Option(None, "--graph", help="Any graph: the same as `hublab compare --graph` (split, "
                                     "tune, score). Default: the thesis comparison on GV1 and the GV3 export."),
    dataset: str | None = typer.Option(None, "--dataset", help="With --graph (default: the graph's dataset)."),
    hub_type: list[str] | None = HUB_TYPE,
    n_trials: int = typer.Option(20, "--n-trials", min=1, help="With --graph: TPE trials per method and fold."),
    folds: int | None = typer.Option(None, "--folds", min=1, help="With --graph: k of the cross-validation."),
    pipelines: list[Path] | None = typer.Option(None, "--pipelines", help="YAML paths or names (hublab list), "
                                                "repeated or comma-separated. Default: all LLM-free pipelines."),
    limit: int | None = typer.Option(None, "--limit", help="Thesis comparison only: the first N questions."),
    out: Path | None = typer.Option(None, "--out", help="Output folder."),
    max_output_triples: int | None = typer.Option(None, "--max-output-triples", min=1,
                                                  help="Evaluate every method at this output bound (like-for-like)."),
    graphs: str = typer.Option("gv1,gv3_orkg", "--graphs", help="Thesis comparison: graphs (each with its own "
                               "dataset; GV1 also reports its questions outside the tuning set)."),
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow experiment (default compare-fair, or "
                                          "compare-GRAPH with --graph)."),
    fmt: str = typer.Option("md", "--format", help="What to print: md, latex or csv (all three are written)."),
    as_json: bool = AS_JSON,
) -> None:
    """Every LLM-free method, default and tuned with the same budget, with intervals and corrected tests: the
    thesis comparison (``reports/summary/methods.*``), or with --graph the comparison on any graph."""
    from hublab.errors import InputError, raise_all
    from hublab.preflight import check_names, output_dir_problem

    if fmt not in ("md", "latex", "csv"):
        raise typer.BadParameter(f"{fmt!r}: expected md, latex or csv", param_hint="--format")
    problems: list = []
    check_names(problems, experiment=experiment)
    if out is not None and (why := output_dir_problem(out)):  # before any run: not after an hour of them
        problems.append(InputError(why, file=str(out), field="--out"))
    raise_all(problems)
    if graph is None:
        if hub_type:
            raise typer.BadParameter("applies with --graph (the thesis's graphs have their hub types)",
                                     param_hint="--hub-type")
        _fair(pipelines, limit, out, max_output_triples, as_json, graphs, experiment, fmt)
        return
    if limit is not None:
        raise typer.BadParameter("applies to the thesis comparison; with --graph choose --n-trials and --folds",
                                 param_hint="--limit")
    from rich.console import Console

    from hublab.cli.app import interrupt_message
    from hublab.cli.compare import print_result, resolved_pipelines
    from hublab.config import settings as load_settings
    from hublab.tuning.graph_comparison import CompareRequest, compare_graph

    st = load_settings()
    req = CompareRequest(graph, dataset or graph, out_dir=out, pipelines=resolved_pipelines(st, pipelines),
                         hub_types=list(hub_type or []), n_trials=n_trials, folds=folds,
                         bound=max_output_triples or 20, experiment=experiment)
    con = Console(stderr=as_json)
    with interrupt_message("every finished trial and answered question is kept; rerun the same command to resume"):
        res = compare_graph(req, settings=st, say=lambda line: con.print(line, markup=False, highlight=False,
                                                                          soft_wrap=True))
    print_result(res, fmt, as_json, con)


def _fair(pipelines: list[Path] | None, limit: int | None, out: Path | None, bound: int | None, as_json: bool,
          graphs: str, experiment: str | None = None, fmt: str = "md") -> None:
    from rich.console import Console

    from hublab.config import settings as load_settings
    from hublab.experiment.comparison.default_vs_tuned import (
        BOUND,
        EXPERIMENT,
        csv_rows,
        entries,
        log_mlflow,
        run_comparison,
        write_all,
    )

    experiment = experiment or EXPERIMENT
    if fmt not in ("md", "latex", "csv"):
        raise typer.BadParameter(f"{fmt!r}: expected md, latex or csv", param_hint="--format")

    st = load_settings()
    bound = bound or BOUND
    chosen = tuple((g.strip(), g.strip()) for g in graphs.split(",") if g.strip())
    if not chosen:
        raise typer.BadParameter("name at least one graph", param_hint="--graphs")
    mine = [st.pipeline_file(p) for p in pipelines] if pipelines else None
    rows = run_comparison(st, entries(st.root, mine), graphs=chosen, bound=bound,
                          limit=limit, experiment=experiment)
    written = write_all(st, rows, out or (st.root / "reports" / "summary"), bound=bound, log=False)
    # the comparison run goes to the same experiment as its evaluation runs (write_all would log to compare-fair)
    files = [written["csv"], written["md"], written["tex"], *written["figures"]]
    logged = log_mlflow(st.root, rows, files, bound=bound, experiment=experiment)
    written["mlflow_parent"] = logged.parent
    if as_json:
        import json

        typer.echo(json.dumps({"rows": csv_rows(rows), "mlflow_comparison_run": written["mlflow_parent"]},
                              indent=1, default=str))
    else:
        con = Console()
        shown = {"md": written["md"], "latex": written["tex"], "csv": written["csv"]}[fmt]
        con.print(shown.read_text(encoding="utf-8"), markup=False, highlight=False, soft_wrap=True)
        con.print(f"wrote {written['csv']}, {written['md']}, {', '.join(str(p) for p in written['figures'])}; "
                  f"MLflow comparison run {written['mlflow_parent']} (experiment {experiment}; its headline columns: "
                  f"mlflow ui, then {logged.view})", markup=False, highlight=False)
    _exit_if_failed([r.status for r in rows], written["md"])


def _exit_if_failed(statuses: list[str], where: Path) -> None:
    """A FAILED run is marked in the written comparison, then the command exits 1 saying so (a PARTIAL one warns)."""
    from hublab.reports.tables import status_verdict

    line, failed = status_verdict(statuses, where)
    if line:
        typer.echo(line, err=True)
    if failed:
        raise typer.Exit(1)
