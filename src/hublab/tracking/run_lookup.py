"""Look-ups of earlier runs in the MLflow store that other layers need as plain values (the LLM estimate's measured
tokens per question): the tracking layer reads MLflow, ``hublab.llm`` never imports it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hublab.redact import without_credentials


def measured_tokens(cfg: Any, graph: str, dataset: str, tracking_uri: str) -> float | None:
    """Mean LLM tokens per question of the latest MLflow run of this exact configuration, if any. A sqlite store
    that does not exist yet is not created (an estimate writes nothing)."""
    if tracking_uri.startswith("sqlite:///") and not Path(tracking_uri[len("sqlite:///"):]).is_file():
        return None
    try:
        from mlflow import MlflowClient

        client = MlflowClient(tracking_uri)
        exps = [e.experiment_id for e in client.search_experiments()]
        chash = cfg.config_hash(without_credentials(graph), dataset)  # as RunRequest.config_hash takes it
        runs = client.search_runs(exps, max_results=1, order_by=["attributes.start_time DESC"],
                                  filter_string=f"params.config_hash = '{chash}' and metrics.llm_tokens > 0")
    except Exception:  # noqa: BLE001 - an unreachable or unreadable store: the thesis figure stands in
        return None
    return float(runs[0].data.metrics["llm_tokens"]) if runs else None
