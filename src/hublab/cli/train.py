"""CLI: ``hublab train`` (fine-tune the bundled MiniLM on graph-generated questions; DVC stage ``train``).

Thin: ``params.yaml: train`` (+ options) → :func:`hublab.training.finetune.train_embedder` → print / metrics JSON."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hublab.atomic import write_text_atomic
from hublab.cli.app import AS_JSON, app

#: the training figures in the DVC metrics file (the rest: --record)
HEADLINE = ("mrr10_before", "mrr10_after")


@app.command("train")
def train_cmd(
    max_steps: int | None = typer.Option(None, "--max-steps", min=1, help="Override train.max_steps."),
    max_train_pairs: int | None = typer.Option(None, "--max-train-pairs", min=2,
                                                help="Override train.max_train_pairs."),
    device: str | None = typer.Option(None, "--device", help="auto | cpu | cuda (override train.device)."),
    register: bool = typer.Option(True, "--register/--no-register", help="Register the model in MLflow."),
    mlflow_log: bool = typer.Option(True, "--mlflow/--no-mlflow", help="Log the run and the model to MLflow."),
    metrics: Path | None = typer.Option(None, "--metrics", help="Write the headline figures JSON here (DVC metrics: "
                                        "validation MRR@10 before and after)."),
    record: Path | None = typer.Option(None, "--record", help="Write every training figure JSON here (pairs, "
                                       "steps, losses; the timings go to outputs/provenance)."),
    as_json: bool = AS_JSON,
) -> None:
    """Generate questions from the graphs (never the KGQA files), fine-tune MiniLM, save and register it."""
    from hublab.config import settings
    from hublab.pipeline.resources import load_graph
    from hublab.training.finetune import TrainConfig, train_embedder

    st = settings()
    raw = st.section("train")
    for key, value in (("max_steps", max_steps), ("max_train_pairs", max_train_pairs), ("device", device)):
        if value is not None:
            raw[key] = value
    raw["register"] = bool(raw.get("register", True)) and register
    cfg = TrainConfig.from_dict(raw)
    graphs = {g: load_graph(g, st) for g in cfg.graphs}
    res = train_embedder(graphs, cfg, st.root, log_mlflow=mlflow_log, progress=not as_json)
    out = {k: v for k, v in res.__dict__.items() if k != "train_losses"}
    figures = res.metrics()
    if metrics:  # the DVC metrics file: `dvc metrics show` unions every file's keys into one table's columns
        write_text_atomic(metrics, json.dumps({k: figures[k] for k in HEADLINE if k in figures}, indent=1))
    if record:  # committed: only what is the same on every machine; the timings go to outputs/provenance
        from hublab.config import project_root
        from hublab.graph.snapshot import write_provenance

        timing = {k: v for k, v in figures.items() if k.endswith("_s")}
        write_provenance(project_root(), f"train-{record.stem}", {"record": str(record), **timing})
        write_text_atomic(record, json.dumps({k: _six_digits(v) for k, v in figures.items() if k not in timing},
                                             indent=1, sort_keys=True))
    if as_json:
        typer.echo(json.dumps(out, indent=1, sort_keys=True, default=str))
        return
    typer.echo(f"model {res.model_dir} (embedder identity {res.identity}); "
               f"{res.n_train_pairs} train / {res.n_val_pairs} val pairs, {res.steps} steps on {res.device} in "
               f"{res.train_s:.1f}s (total {res.wall_s:.1f}s)")
    typer.echo(f"validation MRR@10 {res.mrr10_before:.4f} -> {res.mrr10_after:.4f}; "
               f"loss {res.val_loss_before:.4f} -> {res.val_loss_after:.4f}")
    if res.version:
        typer.echo(f"registered: models:/{res.registered_model}/{res.version} (MLflow run {res.run_id})")


def _six_digits(value: object) -> object:
    """A committed training figure to 6 significant digits: CPU training's losses move in the 7th digit from run to
    run (the order of multi-threaded sums), and the file must be the same on every machine."""
    return float(f"{value:.6g}") if isinstance(value, float) else value
