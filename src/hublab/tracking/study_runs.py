"""The MLflow side of an Optuna study: its one parent run (found again by id or by the study's random uid, created,
reopened, marked when a killed worker left it RUNNING, published to and ended). The tuner (``tuning/orchestrate``)
decides *when*; this module is the only part of it that talks to MLflow."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.tracking import mlflow_log

PARENT_TAG = "mlflow.parentRunId"
UID_TAG = "hublab.study_uid"


@dataclass(frozen=True)
class ParentRun:
    """What the tuner reads of a parent run."""

    run_id: str
    status: str
    deleted: bool
    tags: dict[str, str]


class StudyRuns:
    """A study's parent runs in one experiment of one tracking store."""

    def __init__(self, tracking_uri: str, experiment_id: str) -> None:
        from mlflow.tracking import MlflowClient  # local: ~1.4 s of imports a `tune --help` never needs

        self.client = MlflowClient(tracking_uri)
        self.experiment_id = experiment_id

    @staticmethod
    def _view(run: Any) -> ParentRun:
        return ParentRun(run.info.run_id, run.info.status, run.info.lifecycle_stage == "deleted", dict(run.data.tags))

    def get(self, run_id: str) -> ParentRun | None:
        """The run, or None when this store does not hold it."""
        try:
            return self._view(self.client.get_run(run_id))
        except Exception:  # noqa: BLE001 - not in this MLflow store
            return None

    def find_by_uid(self, uid: str) -> ParentRun | None:
        """The oldest top-level run tagged with the study's uid (a worker whose store is not the one the study's
        attr points to finds its own parent this way)."""
        found = self.client.search_runs([self.experiment_id], filter_string=f"tags.`{UID_TAG}` = '{uid}'",
                                        order_by=["attributes.start_time ASC"], max_results=5)
        found = [r for r in found if PARENT_TAG not in r.data.tags]
        return self._view(found[0]) if found else None

    def create(self, run_name: str, tags: dict[str, str], params: dict[str, str]) -> str:
        from mlflow.entities import Param

        run = self.client.create_run(self.experiment_id, run_name=mlflow_log.scrub(run_name),
                                     tags=mlflow_log.safe_tags(tags))
        self.client.log_batch(run.info.run_id, params=[Param(k, v) for k, v in mlflow_log.safe_params(params).items()])
        return run.info.run_id

    def mark_killed(self, run_id: str, note: str) -> None:
        """A parent left RUNNING by a killed worker: KILLED, and tag ``hublab.recovered`` says when and by whom."""
        self.client.set_terminated(run_id, "KILLED")
        self.client.set_tag(run_id, "hublab.recovered", note)

    def reopen(self, run_id: str) -> None:
        self.client.update_run(run_id, status="RUNNING")

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.client.set_tag(run_id, key, mlflow_log.scrub(value))

    def publish(self, run_id: str, files: list[Path], best_metrics: dict[str, float] | None, pending: int) -> None:
        """The study's files as the parent's artifacts, the best trial's metrics as ``best.*`` and the number of
        trials still pending as a tag."""
        from mlflow.entities import Metric

        for p in files:
            self.client.log_artifact(run_id, str(p))
        if best_metrics:
            ts = int(time.time() * 1000)
            self.client.log_batch(run_id, metrics=[Metric(k, v, ts, 0) for k, v in mlflow_log.finite_metrics(
                {f"best.{k}": v for k, v in best_metrics.items()}).items()])
        self.client.set_tag(run_id, "hublab.pending_trials", str(pending))

    def end(self, run_id: str, status: str) -> None:
        self.client.set_terminated(run_id, status)
