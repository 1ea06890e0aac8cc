"""The MLflow side of a trained embedder: log it as a ``sentence_transformers``-flavour model and register it
(versioned registered model) in the project's store. Resolving ``models:/<name>/<version>`` back to a local
directory is the embedding layer's job (``hublab.model_uri``)."""

from __future__ import annotations

from typing import Any


def log_and_register(model: Any, *, name: str, register: bool, identity: str) -> dict[str, Any]:
    """Inside an active MLflow run: log ``model`` (sentence_transformers flavour) and, with ``register``,
    register it as a new version of ``name``; tag the version with the embedder identity. Returns
    ``{"model_uri", "registered_model", "version"}``."""
    import mlflow
    import sentence_transformers
    import torch

    reqs = [f"sentence-transformers=={sentence_transformers.__version__}", f"torch=={torch.__version__.split('+')[0]}"]
    info = mlflow.sentence_transformers.log_model(
        model, name="model", registered_model_name=name if register else None, pip_requirements=reqs,
        tags={"hublab.embedder_identity": identity})
    out: dict[str, Any] = {"model_uri": info.model_uri, "registered_model": None, "version": None}
    version = getattr(info, "registered_model_version", None)
    if register and version is not None:
        client = mlflow.MlflowClient()
        client.set_model_version_tag(name, str(version), "hublab.embedder_identity", identity)
        out.update(registered_model=name, version=str(version))
    return out
