"""MLflow conventions: a sqlite store under ``mlruns/`` (the file store is refused by MLflow 3),
metric names made MLflow-safe (``hit@10_triples`` → ``hit_at_10_triples``), secrets never logged."""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from hublab.pipeline.config import looks_secret

MAX_PARAM_LEN = 6000


def tracking_uri(root: Path) -> str:
    return f"sqlite:///{(root / 'mlruns' / 'mlflow.db').resolve()}"


def setup(root: Path, experiment: str) -> str:
    """Point MLflow at the project store; create the experiment (artifacts under mlruns/artifacts)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    import mlflow

    (root / "mlruns").mkdir(parents=True, exist_ok=True)
    mlflow.set_tracking_uri(tracking_uri(root))
    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        art = (root / "mlruns" / "artifacts" / experiment).resolve().as_uri()
        return mlflow.create_experiment(experiment, artifact_location=art)
    return exp.experiment_id


def metric_name(name: str) -> str:
    return name.replace("@", "_at_").replace("(", "_").replace(")", "").replace("=", "_")


def safe_params(flat: dict[str, Any]) -> dict[str, str]:
    """Drop anything that looks like a secret value (only ``*_env`` names of env vars are kept)."""
    out = {}
    for k, v in flat.items():
        if looks_secret(k.rsplit(".", 1)[-1]):
            continue
        s = "" if v is None else str(v)
        out[k] = s[:MAX_PARAM_LEN]
    return out


def finite_metrics(metrics: dict[str, Any]) -> dict[str, float]:
    out = {}
    for k, v in metrics.items():
        if isinstance(v, bool) or not isinstance(v, int | float):
            continue
        if math.isfinite(float(v)):
            out[metric_name(k)] = float(v)
    return out
