"""CLI: ``hublab tune`` (OFAT / TPE / NSGA-II studies with Optuna, tracked in MLflow)."""

from __future__ import annotations

from pathlib import Path

import typer

from hublab.cli.app import app


@app.command("tune")
def tune_cmd(
    pipeline: Path = typer.Argument(..., help="Base pipeline YAML (its search_space section lists the factors)."),
    study: str = typer.Option(..., "--study", help="Study name (resumes if it exists in the storage)."),
    mode: str = typer.Option("ofat", "--mode", help="ofat | tpe | nsga2"),
    dataset: str = typer.Option("reduced_gv1", "--dataset", help="Dataset name (thesis: reduced_gv1)."),
    graph: str | None = typer.Option(None, "--graph", help="Graph (default: the dataset's graph)."),
    storage: str | None = typer.Option(None, "--storage", help="Optuna RDB URL (default sqlite:///mlruns/optuna.db)."),
    n_trials: int | None = typer.Option(None, "--n-trials", help="Trials for tpe/nsga2 (OFAT runs its full grid)."),
    objectives: str = typer.Option("recall_triples", "--objectives",
                                   help="Comma list; nsga2 e.g. recall_triples,hit@10_triples,runtime"),
    thesis_params: Path | None = typer.Option(None, "--thesis-params",
                                              help="Factors from a thesis ofat_*_tuning_parameters*.json instead."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N questions per trial."),
    seed: int = typer.Option(0, "--seed"),
    carbon: bool = typer.Option(True, "--carbon/--no-carbon"),
    output_dir: Path | None = typer.Option(None, "--output-dir", help="Default outputs/studies/NAME."),
) -> None:
    """Run or resume a parameter study; print the thesis-shaped OFAT table or the Pareto front."""
    import mlflow
    import yaml
    from rich.console import Console

    from hublab.config import settings as load_settings
    from hublab.errors import InputError
    from hublab.pipeline.config import load_pipeline
    from hublab.tracking import mlflow_log
    from hublab.tuning.report import ofat_markdown, write_outputs
    from hublab.tuning.runner_eval import runner_evaluator
    from hublab.tuning.space import applicable, space_from_pipeline, space_from_thesis_json
    from hublab.tuning.study import StudySpec, run_study

    st = load_settings()
    cfg = load_pipeline(pipeline)
    base = cfg.to_dict()
    space = space_from_thesis_json(thesis_params) if thesis_params else space_from_pipeline(
        cfg.search_space, source=str(pipeline))
    space = applicable(space, base)
    if not space.factors:
        raise InputError("no factors to study: add a search_space section or pass --thesis-params", file=str(pipeline))
    graph = graph or st.graph_for_dataset(dataset)
    storage = storage or f"sqlite:///{(st.root / 'mlruns' / 'optuna.db').resolve()}"
    (st.root / "mlruns").mkdir(exist_ok=True)
    spec = StudySpec(study, mode, storage, n_trials, [o.strip() for o in objectives.split(",") if o.strip()], seed)
    if mode == "nsga2" and len(spec.objectives) < 2:
        spec.objectives = ["recall_triples", "hit@10_triples", "runtime"]
    experiment = f"tune-{study}"
    exp_id = mlflow_log.setup(st.root, experiment)
    import optuna

    optuna.logging.set_verbosity(optuna.logging.WARNING)
    con = Console()
    parent_id = None
    try:  # reuse the study's parent run when resuming
        existing = optuna.load_study(study_name=study, storage=storage)
        parent_id = existing.user_attrs.get("mlflow_parent_run_id")
    except KeyError:
        pass
    with mlflow.start_run(run_id=parent_id, experiment_id=None if parent_id else exp_id,
                          run_name=None if parent_id else f"study {study} ({mode})") as parent:
        if not parent_id:
            mlflow.log_params({"study": study, "mode": mode, "dataset": dataset, "graph": graph,
                               "objectives": ",".join(spec.objectives), "pipeline": str(pipeline),
                               "factors": ",".join(f.path for f in space.factors)[:6000]})
        evaluator = runner_evaluator(graph, dataset, limit=limit, experiment=experiment, settings=st,
                                     objective=spec.objectives[0], track_carbon=carbon)
        result = run_study(spec, base, space, evaluator, parent_run_id=parent.info.run_id)
        result.study.set_user_attr("mlflow_parent_run_id", parent.info.run_id)
        out_dir = output_dir or (st.root / "outputs" / "studies" / study)
        paths = write_outputs(result, out_dir)
        (out_dir / "base_pipeline.yaml").write_text(yaml.safe_dump(base, sort_keys=False))
        for p in paths:
            mlflow.log_artifact(str(p))
        if result.best:
            mlflow.log_metrics(mlflow_log.finite_metrics({f"best.{k}": v for k, v in result.best["metrics"].items()}))
    if result.table:
        con.print(ofat_markdown(result))
        con.print("\nChosen values (Recall first, Hits@10 breaks ties):")
        for path, value in result.chosen.items():
            con.print(f"  {path}: {value!r}")
    if result.pareto:
        con.print(f"Pareto front ({', '.join(spec.objectives)}):")
        for p in result.pareto:
            con.print(f"  trial {p['number']}: values={[round(v, 4) for v in p['values']]} params={p['params']}")
    if result.best:
        con.print(f"Best trial {result.best['number']}: {spec.objectives[0]}={result.best['values'][0]:.4f} "
                  f"params={result.best['params']}")
    con.print(f"Outputs: {out_dir}  ·  MLflow experiment {experiment!r}, parent run {parent.info.run_id}")
