"""A comparison in MLflow: one parent run found again by its key, with one nested child run per row found again
by its child key. Why: rerunning a comparison (``hublab report compare``, the fair comparison) must update the
runs a user already has open in the MLflow UI, not add a second set beside them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.tracking import mlflow_log

#: MLflow UI's shared views: an experiment tag ``mlflow.sharedViewState.<key>`` holding the runs page's view state
#: (as JSON), which ``#/experiments/<id>/runs?viewStateShareKey=<key>`` opens (the UI's "share" button writes one)
SHARED_VIEW_TAG = "mlflow.sharedViewState."
KEY_TAG = "hublab.comparison_key"
CHILD_TAG = "hublab.comparison_child"
ROLE_TAG = "hublab.role"  # "comparison" on the parent


@dataclass(frozen=True)
class ChildRun:
    """One row of a comparison: its run name, metrics and tags (credential-looking tags are redacted)."""

    name: str
    metrics: Mapping[str, float]
    tags: Mapping[str, str]


@dataclass(frozen=True)
class Logged:
    """A logged comparison: its parent run, its experiment and, where a view was shared, the UI link's fragment."""

    parent: str
    experiment_id: str
    view: str = ""


def find_comparison(root: Path, experiment: str, key: str) -> str | None:
    """The parent run id of the comparison ``key`` in ``experiment`` of the project's store, or None."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient(mlflow_log.tracking_uri(root))
    exp = client.get_experiment_by_name(experiment)
    if exp is None:
        return None
    found = client.search_runs([exp.experiment_id], f"tags.`{KEY_TAG}` = '{key}' and tags.`{ROLE_TAG}` = "
                               "'comparison'", max_results=1)
    return found[0].info.run_id if found else None


def share_view(experiment_id: str, key: str, *, columns: Iterable[str], tag_columns: Iterable[str] = (),
               group_by_tag: str | None = None, widths: Mapping[str, int] | None = None) -> str:
    """A shared view of the experiment's runs table: ``columns`` (metric names; the UI's default shows none), then
    ``tag_columns`` (tags holding display text, such as a difference with its interval), rows sorted by the first
    metric, highest first. With ``group_by_tag``, rows are grouped by that tag (MLflow's "group by"; groups open
    expanded, each group's row showing its best value), so rows of different question sets are never ranked in one
    list. ``widths`` sets column widths in pixels by metric or tag name (``run_name`` for the run name), so headers
    and names are not cut at the default width. Returns the page's URL fragment."""
    from mlflow.tracking import MlflowClient

    columns, tag_columns = list(columns), list(tag_columns)
    ids = {**{c: f"metrics.`{c}`" for c in columns}, **{t: f"tags.`{t}`" for t in tag_columns},
           "run_name": "attributes.`Run Name`"}
    state: dict = {"selectedColumns": [ids[c] for c in columns + tag_columns],
                   "orderByKey": ids[columns[0]], "orderByAsc": False}
    if group_by_tag:
        state["groupBy"] = {"aggregateFunction": "max", "groupByKeys": [{"mode": "tag", "groupByData": group_by_tag}]}
    if widths:
        # the grid applies widths only to the columns of ``columnOrder`` (and in that order): the run name, then ours
        state["columnWidths"] = {ids[name]: int(px) for name, px in widths.items()}
        state["columnOrder"] = [ids["run_name"], *(ids[c] for c in columns + tag_columns)]
    MlflowClient().set_experiment_tag(experiment_id, f"{SHARED_VIEW_TAG}{key}", json.dumps(state))
    return f"#/experiments/{experiment_id}/runs?viewStateShareKey={key}"


def log_comparison_runs(root: Path, experiment: str, *, key: str, name: str, params: Mapping[str, str],
                        children: Mapping[str, ChildRun], files: Iterable[Path],
                        tags: Mapping[str, str] | None = None, view_columns: Iterable[str] = (),
                        view: Mapping[str, Any] | None = None) -> Logged:
    """Log (or update) the comparison ``key``: the parent run ``name`` with ``params`` (set when it is created) and
    ``tags`` (set every time, with the name: where its numbers come from may change), a FINISHED child per
    ``children`` entry (keyed by its child key), ``hublab.n_children`` and ``files`` as the parent's artifacts;
    with ``view_columns``, a shared runs-table view ``<key>`` showing them (``share_view``, with the keyword
    arguments in ``view``: tag columns, grouping, widths). The parent ends FAILED if anything raises."""
    from mlflow.entities import Metric, Param, RunTag
    from mlflow.tracking import MlflowClient
    from mlflow.utils.mlflow_tags import MLFLOW_PARENT_RUN_ID, MLFLOW_RUN_NAME

    exp_id = mlflow_log.setup(root, experiment)
    client = MlflowClient()
    name, params = mlflow_log.scrub(name), mlflow_log.safe_params(dict(params))
    found = client.search_runs([exp_id], f"tags.`{KEY_TAG}` = '{key}' and tags.`{ROLE_TAG}` = 'comparison'",
                               order_by=["attributes.start_time DESC"], max_results=1)
    if found:
        parent = found[0].info.run_id
        client.update_run(parent, status="RUNNING", name=name)
    else:
        parent = client.create_run(exp_id, run_name=name, tags={KEY_TAG: key, ROLE_TAG: "comparison"}).info.run_id
        client.log_batch(parent, params=[Param(k, v) for k, v in params.items()])
    now = int(time.time() * 1000)
    try:
        existing = {r.data.tags.get(CHILD_TAG): r.info.run_id for r in client.search_runs(
            [exp_id], filter_string=f"tags.`{MLFLOW_PARENT_RUN_ID}` = '{parent}'", max_results=1000)}
        for ckey, child in children.items():
            child_name = mlflow_log.scrub(child.name)
            run_id = existing.get(ckey) or client.create_run(exp_id, run_name=child_name, tags={
                MLFLOW_PARENT_RUN_ID: parent, MLFLOW_RUN_NAME: child_name}).info.run_id
            child_tags = mlflow_log.safe_tags({**child.tags, CHILD_TAG: ckey, KEY_TAG: key})
            client.log_batch(run_id, metrics=[Metric(k, v, now, 0) for k, v in child.metrics.items()],
                             tags=[RunTag(k, v) for k, v in child_tags.items()])
            client.set_terminated(run_id, "FINISHED")
        client.log_batch(parent, tags=[RunTag(k, v) for k, v in
                                       mlflow_log.safe_tags({**(tags or {}), "hublab.n_children": str(len(children))})
                                       .items()])
        for f in files:
            client.log_artifact(parent, str(f))
        columns = list(view_columns)
        shared = share_view(exp_id, key, columns=columns, **(view or {})) if columns else ""
    except BaseException:
        client.set_terminated(parent, "FAILED")
        raise
    client.set_terminated(parent, "FINISHED")
    return Logged(parent, exp_id, shared)
