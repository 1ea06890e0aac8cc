"""CLI: ``hublab report compare`` — every method on one graph in one table (MLflow + CSV + Markdown)."""

from __future__ import annotations

from pathlib import Path

import typer

from hublab.cli.app import AS_JSON, LLM_BASE_URL, LLM_MODEL, app, use_llm_endpoint

report_app = typer.Typer(help="Reports across runs.", no_args_is_help=True)
app.add_typer(report_app, name="report")


@report_app.command("compare")
def compare_cmd(
    graph: str | None = typer.Option(None, "--graph", help="One graph: the given pipelines untuned "
                                     "(`hublab compare` tunes them on any graph). Default: every method default "
                                     "and tuned, GV1 and the GV3 export, 20 triples/question, CIs, p-values."),
    dataset: str | None = typer.Option(None, "--dataset", help="With --graph (default: the graph's dataset)."),
    pipelines: list[Path] | None = typer.Option(None, "--pipelines", help="YAML paths or names (hublab list), "
                                                "repeated or comma-separated. Default: all LLM-free pipelines."),
    limit: int | None = typer.Option(None, "--limit"),
    out: Path | None = typer.Option(None, "--out", help="Default reports/compare_<graph>."),
    carbon: bool = typer.Option(True, "--carbon/--no-carbon"),
    max_output_triples: int | None = typer.Option(None, "--max-output-triples", min=1,
                                                  help="Evaluate every method at this output bound (like-for-like)."),
    graphs: str = typer.Option("gv1,gv3_orkg", "--graphs", help="Fair comparison: graphs (each with its own "
                               "dataset; GV1 also reports its questions outside the tuning set)."),
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow experiment of the evaluation runs and "
                                          "the comparison run (default compare-fair, or compare-GRAPH with --graph)."),
    fmt: str = typer.Option("md", "--format", help="What the fair comparison prints: md, latex (booktabs, for a "
                            "paper) or csv. All three are written under --out either way."),
    llm_base_url: str | None = LLM_BASE_URL,
    llm_model: str | None = LLM_MODEL,
    as_json: bool = AS_JSON,
) -> None:
    """Run (or resume) each pipeline on the dataset and write one comparison table with the thesis's numbers.

    Without --graph: the fair comparison of every LLM-free method, default and tuned
    (``reports/summary/methods.{csv,md,png,svg}``, MLflow experiment ``compare-fair``)."""
    from rich.console import Console

    from hublab.errors import InputError, raise_all
    from hublab.preflight import check_names, output_dir_problem

    problems: list = []
    check_names(problems, experiment=experiment)
    if out is not None and (why := output_dir_problem(out)):  # before any run: not after an hour of them
        problems.append(InputError(why, file=str(out), field="--out"))
    raise_all(problems)
    if graph is None:
        _fair(pipelines, limit, out, max_output_triples, as_json, graphs, experiment, fmt)
        return
    dataset = dataset or graph
    from hublab.config import settings as load_settings
    from hublab.experiment.comparison.single_graph import (
        compare_methods,
        log_comparison,
        markdown,
        thesis_reference,
        write_report,
    )
    from hublab.retrievers.registry import default_pipelines

    use_llm_endpoint(llm_base_url, llm_model)
    st = load_settings()
    chosen = ([st.pipeline_file(p.strip()) for arg in pipelines for p in str(arg).split(",") if p.strip()]
              if pipelines else default_pipelines(st.pipelines_dir().parent))
    from hublab.pipeline.resources import graph_source

    name = graph_source(graph, st).name  # a file's or endpoint's content-keyed name: a folder and experiment name
    experiment = experiment or f"compare-{name}"
    res = compare_methods(chosen, graph, dataset, settings=st, limit=limit, experiment=experiment,
                          include_llm=bool(pipelines), track_carbon=carbon,
                          max_output_triples=max_output_triples)
    out_dir = out or (st.root / "reports" / f"compare_{name}")
    csv_path, md_path = write_report(res, out_dir, graph, dataset)
    parent = log_comparison(st.root, experiment, graph, dataset, chosen, limit, [csv_path, md_path], res=res,
                            thesis=thesis_reference(st), max_output_triples=max_output_triples)
    from hublab.redact import scrub  # an endpoint URL's credentials

    if as_json:
        import json

        typer.echo(scrub(json.dumps({"graph": graph, "dataset": dataset, "mlflow_comparison_run": parent,
                                     "rows": res.rows, "skipped": [{"pipeline": p, "why": w} for p, w in res.skipped]},
                                    indent=1, default=str)))
    else:
        Console().print(scrub(markdown(res, graph, dataset)))
        Console().print(f"wrote {csv_path} and {md_path}; MLflow comparison run {parent} (experiment {experiment})")
    _exit_if_failed([str(r.get("status", "")) for r in res.rows], md_path)


def _fair(pipelines: list[Path] | None, limit: int | None, out: Path | None, bound: int | None, as_json: bool,
          graphs: str, experiment: str | None = None, fmt: str = "md") -> None:
    from rich.console import Console

    from hublab.cli.report_plan import fair_plan
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
    todo = entries(st.root, [st.pipeline_file(p) for p in pipelines] if pipelines else None)
    typer.echo(fair_plan(st, todo, chosen, limit), err=True)
    rows = run_comparison(st, todo, graphs=chosen, bound=bound, limit=limit, experiment=experiment)
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
