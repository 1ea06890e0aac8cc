"""CLI: ``hublab tune`` (OFAT / TPE / NSGA-II studies with Optuna, tracked in MLflow).

Thin: options → :class:`hublab.tuning.orchestrate.TuneRequest` → :func:`~hublab.tuning.orchestrate.run_tune`
→ print. Several workers may run the same command on one study at the same time (docs/tuning.md)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from hublab.cli.app import (
    GRAPH_HELP,
    HUB_TYPE,
    LABEL_PREDICATE,
    TYPE_PREDICATE,
    app,
    call_settings,
    interrupt_message,
    pipeline_arg,
)
from hublab.cli.tune_checks import check_tune_inputs

if TYPE_CHECKING:
    from hublab.config import Settings


@app.command("tune")
def tune_cmd(
    pipeline: Path = typer.Argument(..., help="Base pipeline YAML, or its name (hublab list); its search_space "
                                    "section lists the factors."),
    study: str = typer.Option(..., "--study", help="Study name (resumes, or joins, if it exists in the storage)."),
    mode: str = typer.Option("ofat", "--mode", help="ofat | tpe | nsga2"),
    dataset: str = typer.Option("reduced_gv1", "--dataset", help="Dataset name (thesis: reduced_gv1)."),
    graph: str | None = typer.Option(None, "--graph", help="Graph (default: the dataset's graph). " + GRAPH_HELP),
    hub_type: list[str] | None = HUB_TYPE,
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
    storage: str | None = typer.Option(None, "--storage", help="Optuna RDB URL (default sqlite:///mlruns/optuna.db)."),
    n_trials: int | None = typer.Option(
        None, "--n-trials",
        help="tpe/nsga2: trials in the whole study (a rerun tops up). ofat: at most N of the grid's trials in this "
             "invocation (rerun to continue); default the whole grid."),
    objectives: str = typer.Option("recall_triples", "--objectives",
                                   help="Comma list; nsga2 e.g. recall_triples,hit_at_10_triples,runtime"),
    thesis_params: Path | None = typer.Option(None, "--thesis-params",
                                              help="Factors from a thesis ofat_*_tuning_parameters*.json instead."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N questions per trial."),
    seed: int = typer.Option(0, "--seed"),
    carbon: bool = typer.Option(True, "--carbon/--no-carbon"),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Default outputs/studies/NAME."),
    heartbeat: int = typer.Option(30, "--heartbeat", help="Seconds between a running trial's heartbeats."),
    grace: int = typer.Option(120, "--grace", help="Seconds without heartbeat after which a trial's worker counts as "
                                                   "dead: its trial is failed and retried once."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Progress bar over the study's trials."),
    index_dir: Path | None = typer.Option(
        None, "--index-dir", help="This worker's index folder (default paths.indices). A Milvus Lite index opens in "
                                  "one process only: a second worker on the same machine needs its own (a copy)."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete the study first and start it again (e.g. after the base "
                                                       "pipeline changed). No other worker may be running it."),
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow experiment of the study's parent and "
                                          "trial runs (default tune-STUDY; the parent stays where it was created)."),
    pruner: str = typer.Option("wilcoxon", "--pruner", help="tpe: wilcoxon (stop a trial once a paired test over "
                               "the questions answered so far says it is worse than the best), median, or none."),
    max_s: float | None = typer.Option(None, "--max-s-per-question", min=0.0,
                                       help="Constraint: a trial slower than this (mean s/question) is infeasible."),
    max_cost: float | None = typer.Option(None, "--max-cost-per-question", min=0.0,
                                          help="Constraint: a trial dearer than this (LLM USD/question) is "
                                               "infeasible."),
) -> None:
    """Run, resume or join a parameter study; print the thesis-shaped OFAT table or the Pareto front."""
    from rich.console import Console

    from hublab.errors import raise_all
    from hublab.preflight import check_names
    from hublab.tuning.orchestrate import TuneRequest
    from hublab.tuning.orchestrate import run_tune as _run_tune

    st = call_settings(label_predicate, type_predicate)
    problems: list = []
    check_names(problems, study=study, experiment=experiment)  # MLflow experiment names (folders), lock files
    raise_all(problems)  # a name is checked first: it may be a path that escapes the project
    chosen = [o.strip() for o in objectives.split(",") if o.strip()]
    pipeline = pipeline_arg(pipeline)  # a path, or a name as `hublab list` prints it
    check_tune_inputs(problems, pipeline=pipeline, objectives=chosen, storage=storage)
    raise_all(problems)
    overrides = hub_type_overrides(pipeline, graph, dataset, hub_type or [], st)
    with interrupt_message("the study keeps its finished trials (the running one ends FAILED, its MLflow run "
                           "KILLED); rerun the same command to resume"):
        outcome = _run_tune(TuneRequest(
            pipeline=pipeline, study=study, mode=mode, dataset=dataset, graph=graph, storage=storage,
            n_trials=n_trials, objectives=chosen, thesis_params=thesis_params, limit=limit, seed=seed, carbon=carbon,
            output_dir=output_dir, heartbeat_interval=heartbeat, grace_period=grace, progress=progress,
            index_dir=index_dir, fresh=fresh, experiment=experiment, base_overrides=overrides,
            hub_types=list(hub_type or []),
            prune=pruner != "none", pruner="wilcoxon" if pruner == "none" else pruner,
            limits={k: v for k, v in (("s_per_question", max_s), ("cost_per_question", max_cost)) if v is not None}),
            settings=st)
    con = Console()
    for line in outcome.summary():
        con.print(line, markup=False, highlight=False)


def hub_type_overrides(pipeline: Path, graph: str | None, dataset: str, given: list[str],
                       st: Settings) -> dict[str, list[str]]:
    """``--hub-type`` (or the graph's declared hub types) as the study's base override of HubLink's ``hub_types``,
    decided as ``hublab run`` decides it (``preflight.hub_types_for``), on the graph as ``st`` reads it."""
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.resources import graph_source
    from hublab.preflight import hub_types_for

    cfg = load_pipeline(st.pipeline_file(pipeline))
    wanted = hub_types_for(cfg.retriever_type, given, graph_source(graph or st.graph_for_dataset(dataset), st))
    return {"retriever.params.hub_types": wanted} if wanted else {}
