"""A comparison in MLflow: one parent run found again by its key, with one nested child run per row found again
by its child key. Why: rerunning a comparison (``hublab report compare``, the fair comparison) must update the
runs a user already has open in the MLflow UI, not add a second set beside them."""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hublab.tracking import mlflow_log

KEY_TAG = "hublab.comparison_key"
CHILD_TAG = "hublab.comparison_child"
ROLE_TAG = "hublab.role"  # "comparison" on the parent


@dataclass(frozen=True)
class ChildRun:
    """One row of a comparison: its run name, metrics and tags (credential-looking tags are redacted)."""

    name: str
    metrics: Mapping[str, float]
    tags: Mapping[str, str]


def log_comparison_runs(root: Path, experiment: str, *, key: str, name: str, params: Mapping[str, str],
                        children: Mapping[str, ChildRun], files: Iterable[Path]) -> str:
    """Log (or update) the comparison ``key``: the parent run ``name`` with ``params`` (set when it is created),
    a FINISHED child per ``children`` entry (keyed by its child key), ``hublab.n_children`` and ``files`` as the
    parent's artifacts. The parent ends FAILED if anything raises. Returns the parent's run id."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

    exp_id = mlflow_log.setup(root, experiment)
    client = MlflowClient()
    found = client.search_runs([exp_id], f"tags.`{KEY_TAG}` = '{key}' and tags.`{ROLE_TAG}` = 'comparison'",
                               order_by=["attributes.start_time DESC"], max_results=1)
    if found:
        parent = found[0].info.run_id
        client.update_run(parent, status="RUNNING")
    else:
        parent = client.create_run(exp_id, run_name=name, tags={KEY_TAG: key, ROLE_TAG: "comparison"}).info.run_id
        client.log_batch(parent, params=[Param(k, v) for k, v in params.items()])
    now = int(time.time() * 1000)
    try:
        existing = {r.data.tags.get(CHILD_TAG): r.info.run_id for r in client.search_runs(
            [exp_id], filter_string=f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{parent}'", max_results=1000)}
        for ckey, child in children.items():
            run_id = existing.get(ckey) or client.create_run(exp_id, run_name=child.name, tags={
                MLFLOW_PARENT_RUN_ID: parent, MLFLOW_RUN_NAME: child.name}).info.run_id
            tags = mlflow_log.safe_tags({**child.tags, CHILD_TAG: ckey, KEY_TAG: key})
            client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in child.metrics.items()],
                             tags=[RunTag(k, v) for k, v in tags.items()])
            client.set_terminated(run_id, "FINISHED")
        client.set_tag(parent, "hublab.n_children", str(len(children)))
        for f in files:
            client.log_artifact(parent, str(f))
    except BaseException:
        client.set_terminated(parent, "FAILED")
        raise
    client.set_terminated(parent, "FINISHED")
    return parent
