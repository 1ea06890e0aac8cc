"""CLI: ``hublab compare`` — the fair comparison of every LLM-free method on any graph (split, tune per fold on
the selection questions, score on the report questions, intervals and corrected tests)."""

from __future__ import annotations

from pathlib import Path

import typer

from hublab.cli.app import (
    AS_JSON,
    GRAPH_HELP,
    HUB_TYPE,
    LABEL_PREDICATE,
    TYPE_PREDICATE,
    app,
    call_settings,
    interrupt_message,
)


def resolved_pipelines(st, pipelines: list[Path] | None) -> list[Path]:
    """``--pipelines`` (names or paths, repeated or comma-separated) as files; every method's default pipeline
    (the project's, else the shipped ones) for none or ``all``."""
    from hublab.retrievers.registry import default_pipelines

    names = [p.strip() for arg in pipelines or [] for p in str(arg).split(",") if p.strip()]
    if not names or names == ["all"]:
        return default_pipelines(st.pipelines_dir().parent)
    return [st.pipeline_file(n) for n in names]


@app.command("compare")
def compare_cmd(
    graph: str = typer.Option(..., "--graph", help=GRAPH_HELP),
    dataset: str = typer.Option(..., "--dataset", help="Questions: a built-in dataset or a .csv/.jsonl file."),
    hub_type: list[str] | None = HUB_TYPE,
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
    n_trials: int = typer.Option(20, "--n-trials", min=1, help="TPE trials per method and fold (the same for all)."),
    folds: int | None = typer.Option(None, "--folds", min=1, help="k of the cross-validation; 1: one split. "
                                     "Default: 5 below 100 questions, else one split."),
    selection: str | None = typer.Option(None, "--selection", help="A fixed selection set (a dataset); every other "
                                         "question is reported."),
    stratify: str | None = typer.Option(None, "--stratify", help="Question-type column to stratify the folds by "
                                        "(default: retrieval_operation, use_case or answer_type when filled)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the split and of every study."),
    bound: int = typer.Option(20, "--max-output-triples", min=1, help="Output bound every method is scored at."),
    pipelines: list[Path] | None = typer.Option(None, "--pipelines", help="LLM-free pipelines (names or YAML "
                                                "paths, comma-separated; all: every method, the default)."),
    out: Path | None = typer.Option(None, "--out", help="Output folder (default: one named after the graph, under "
                                    "reports/compare)."),
    fmt: str = typer.Option("md", "--format", help="What to print: md, latex or csv (all three are written)."),
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow experiment (default compare-GRAPH)."),
    storage: str | None = typer.Option(None, "--storage", help="Optuna storage URL (default the project's)."),
    jobs: int = typer.Option(1, "--jobs", min=1, help="Studies at once, one process each."),
    fresh: bool = typer.Option(False, "--fresh", help="Restart the studies instead of resuming them."),
    shape_space: bool = typer.Option(True, "--shape-space/--no-shape-space", help="Also tune the parameters whose "
                                     "best value depends on the graph's shape."),
    as_json: bool = AS_JSON,
) -> None:
    """Which method wins on your graph, with which settings, and how sure: split the questions, tune every
    LLM-free method with the same budget on the selection questions, score default and tuned on the others."""
    from rich.console import Console

    from hublab.cli.tune_checks import check_tune_inputs
    from hublab.errors import raise_all
    from hublab.preflight import check_names
    from hublab.tuning.graph_comparison import compare_graph

    if fmt not in ("md", "latex", "csv"):
        raise typer.BadParameter(f"{fmt!r}: expected md, latex or csv", param_hint="--format")
    problems: list = []
    check_names(problems, experiment=experiment)
    check_tune_inputs(problems, storage=storage)
    raise_all(problems)
    from hublab.tuning.graph_comparison import CompareRequest

    st = call_settings(label_predicate, type_predicate)
    req = CompareRequest(graph, dataset, out_dir=out, pipelines=resolved_pipelines(st, pipelines),
                         hub_types=list(hub_type or []), n_trials=n_trials, seed=seed, folds=folds, stratify=stratify,
                         selection=selection, bound=bound, storage=storage, experiment=experiment, jobs=jobs,
                         fresh=fresh, shape_space=shape_space)
    con = Console(stderr=as_json)

    def say(line: str) -> None:
        con.print(line, markup=False, highlight=False, soft_wrap=True)

    with interrupt_message("every finished trial and answered question is kept; rerun the same command to resume"):
        res = compare_graph(req, settings=st, say=say)
    print_result(res, fmt, as_json, con)


def print_result(res, fmt: str, as_json: bool, con) -> None:
    """The table in the chosen format (or the rows as JSON) and where everything was written."""
    import json

    from hublab.tuning.graph_comparison import csv_rows

    if as_json:
        typer.echo(json.dumps({"rows": csv_rows(res.rows), "split": [f.to_dict() for f in res.split.folds],
                               "failed": res.failed, "files": {k: str(v) for k, v in res.files.items()},
                               "mlflow_comparison_run": res.mlflow_parent, "experiment": res.experiment},
                              indent=1, default=str))
    else:
        shown = {"md": res.files["md"], "latex": res.files["tex"], "csv": res.files["csv"]}[fmt]
        con.print(Path(shown).read_text(encoding="utf-8"), markup=False, highlight=False, soft_wrap=True)
        figures = ", ".join(str(p) for p in res.files["figures"])
        con.print(f"wrote {res.files['csv']}, {res.files['md']}, {res.files['tex']}, {figures} and "
                  f"{Path(res.files['csv']).parent / 'split.json'}; MLflow comparison run {res.mlflow_parent or '-'} "
                  f"(experiment {res.experiment})", markup=False, highlight=False, soft_wrap=True)
    if res.failed:
        con.print(f"{len(res.failed)} run(s) failed or stopped early (named in the table's caption)",
                  markup=False, highlight=False)
        raise typer.Exit(1)
