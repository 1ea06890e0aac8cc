"""The MLflow side of a trained embedder: one training run (params, tags, the loss curve, metrics, a sample of the
generated pairs) with the model logged as a ``sentence_transformers``-flavour model and, when asked, registered as a
new version of a registered model in the project's store. Resolving ``models:/<name>/<version>`` back to a local
directory is the foundation layer's ``hublab.model_uri``."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.tracking.mlflow_log import setup


@dataclass(frozen=True)
class LoggedModel:
    run_id: str
    model_uri: str
    registered_model: str | None
    version: str | None


def log_training_run(root: Path, experiment: str, run_name: str, *, params: dict[str, Any], tags: dict[str, str],
                     loss_curve: list[float], metrics: dict[str, float], samples: dict[str, Any], model: Any,
                     model_name: str, register: bool, identity: str) -> LoggedModel:
    """One run of ``experiment``: ``loss_curve`` as the step-indexed metric ``train_loss``, the finite
    ``metrics``, ``samples`` as ``generated_pairs_sample.json``, and the model (tagged with its embedder identity)."""
    import mlflow  # local: ~1.4 s of imports that a training run without tracking never needs
    from mlflow.entities import Metric

    exp_id = setup(root, experiment)
    with mlflow.start_run(experiment_id=exp_id, run_name=run_name) as run:
        mlflow.log_params(params)
        mlflow.set_tags(tags)
        now = int(time.time() * 1000)
        mlflow.MlflowClient().log_batch(run.info.run_id, metrics=[
            Metric("train_loss", v, now, i) for i, v in enumerate(loss_curve)])
        mlflow.log_metrics({k: v for k, v in metrics.items() if math.isfinite(v)})
        mlflow.log_dict(samples, "generated_pairs_sample.json")
        model_uri, version = _log_model(mlflow, model, model_name, register, identity)
        return LoggedModel(run.info.run_id, model_uri, model_name if version is not None else None, version)


def _log_model(mlflow: Any, model: Any, name: str, register: bool, identity: str) -> tuple[str, str | None]:
    """Inside the active run: the model (sentence_transformers flavour, pinned requirements) and, with
    ``register``, a new version of ``name`` tagged with the embedder identity. Returns (model URI, version)."""
    import sentence_transformers
    import torch

    reqs = [f"sentence-transformers=={sentence_transformers.__version__}", f"torch=={torch.__version__.split('+')[0]}"]
    info = mlflow.sentence_transformers.log_model(
        model, name="model", registered_model_name=name if register else None, pip_requirements=reqs,
        tags={"hublab.embedder_identity": identity})
    version = getattr(info, "registered_model_version", None)
    if not register or version is None:
        return info.model_uri, None
    mlflow.MlflowClient().set_model_version_tag(name, str(version), "hublab.embedder_identity", identity)
    return info.model_uri, str(version)
