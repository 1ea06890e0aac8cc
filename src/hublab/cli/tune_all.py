"""CLI: ``hublab tune-all`` (the equal-budget study of every LLM-free method).

Thin: options → :class:`hublab.tuning.fair.TuneAllRequest` → :func:`~hublab.tuning.fair.tune_all` → print."""

from __future__ import annotations

from pathlib import Path

import typer

from hublab.atomic import write_text_atomic
from hublab.cli.app import LABEL_PREDICATE, TYPE_PREDICATE, app, call_settings, interrupt_message
from hublab.cli.tune_checks import check_tune_inputs


@app.command("tune-all")
def tune_all_cmd(
    pipelines: list[Path] | None = typer.Argument(None, help="LLM-free pipelines to tune, YAML paths or "
                                                  "names (default: every one, as `hublab report compare` runs them)."),
    n_trials: int = typer.Option(40, "--n-trials", help="Trials per method (the same budget for every method)."),
    seed: int = typer.Option(0, "--seed", help="TPE sampler seed (reproducible studies)."),
    dataset: str = typer.Option("reduced_gv1", "--dataset", help="Tuning questions (thesis: reduced_gv1 only), or "
                                "your .csv/.jsonl."),
    graph: str | None = typer.Option(None, "--graph", help="Graph (default: the dataset's): a name, an RDF file or a "
                                     "SPARQL endpoint URL, as in hublab run."),
    hub_type: list[str] | None = typer.Option(None, "--hub-type", help="HubLink's hub type IRI on your graph "
                                              "(repeatable)."),
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
    bound: int = typer.Option(20, "--max-output-triples", help="Output bound the objective is measured at."),
    out: Path | None = typer.Option(None, "--out", help="Folder of the tuned pipelines (default pipelines/tuned)."),
    storage: str | None = typer.Option(None, "--storage", help="Optuna RDB URL (default sqlite:///mlruns/optuna.db)."),
    fresh: bool = typer.Option(False, "--fresh", help="Delete each study first (default: resume it)."),
    limit: int | None = typer.Option(None, "--limit", min=1,
                                     help="Only the first N questions per trial (smoke tests)."),
    report: Path | None = typer.Option(None, "--report", help="Also write the per-method table (Markdown) here."),
    jobs: int = typer.Option(1, "--jobs", min=1, help="Studies at once, one process each (same results as 1; "
                             "dvc.yaml uses 2 for 2 cores)."),
    pruner: str = typer.Option("wilcoxon", "--pruner", help="wilcoxon: stop a trial once a paired test over the "
                               "questions answered so far shows it worse than the best; none: never."),
    progress: bool = typer.Option(True, "--progress/--no-progress"),
) -> None:
    """Tune every LLM-free method with the same Optuna budget (TPE, MAP@10 at the output bound, reduced GV1) and
    write pipelines/tuned/<method>.yaml for each."""
    from rich.console import Console

    from hublab.errors import raise_all
    from hublab.retrievers.registry import default_pipelines
    from hublab.tuning.fair import TuneAllRequest, markdown
    from hublab.tuning.fair import tune_all as _tune_all
    from hublab.tuning.reuse import line

    problems: list = []
    check_tune_inputs(problems, storage=storage)
    raise_all(problems)
    st = call_settings(label_predicate, type_predicate)
    con = Console()
    chosen = [st.pipeline_file(p) for p in pipelines] if pipelines else default_pipelines(st.pipelines_dir().parent)
    con.print(expected_work(st, dataset, len(chosen), n_trials, limit, jobs), markup=False, highlight=False)

    def said(o) -> None:
        con.print(f"{o.plan.method}: {o.trials} trials in {o.wall_s:.0f} s, MAP@10 default "
                  f"{o.default_value if o.default_value is None else round(o.default_value, 4)} -> best "
                  f"{round(o.best_value or 0.0, 4)}; {o.pruned} pruned; {line(o.reuse)}; wrote {o.tuned_file}",
                  markup=False, highlight=False)

    with interrupt_message("each study keeps its finished trials (the running ones end FAILED, their MLflow runs "
                           "KILLED); rerun the same command to resume"):
        outcomes = _tune_all(TuneAllRequest(chosen, n_trials=n_trials, seed=seed, dataset=dataset, bound=bound,
                                            out_dir=out, storage=storage, fresh=fresh, limit=limit,
                                            progress=progress, jobs=jobs, graph=graph, hub_types=list(hub_type or []),
                                            pruner=pruner), settings=st, on_method=said)
    table = markdown(outcomes)
    con.print(table, markup=False, highlight=False)
    if report is not None:
        write_text_atomic(report, table)


def expected_work(st, dataset: str, methods: int, n_trials: int, limit: int | None, jobs: int) -> str:
    """What the command will do, said before it starts: a study is minutes on a cold embedding cache."""
    from hublab.datasets.catalog import load_dataset

    try:
        n = len(load_dataset(st, dataset))
    except Exception:  # noqa: BLE001 - the study says what is wrong with the dataset, located
        return f"{methods} methods x {n_trials} trials on {dataset}"
    n = min(n, limit) if limit else n
    return (f"{methods} methods x {n_trials} trials on {n} questions of {dataset} (at most "
            f"{methods * n_trials * n:,} answers, fewer where a trial is pruned; {jobs} stud"
            f"{'y' if jobs == 1 else 'ies'} at once): one line per method as its study ends; the first run on a "
            "machine also embeds every text it tries once (docs/tuning.md)")
