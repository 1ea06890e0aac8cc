"""The run recorder: the one object through which an experiment run talks to MLflow (start or resume, params, tags,
metrics, the dataset input, prompt versions, traces, artifacts, end).

It takes a :class:`RunDescription`, which lives here at the tracking layer: what tracking needs to know about a run
(the pipeline, graph, dataset, checkout, experiment, name, parent, config hash and the secrets to mask). The
experiment layer's ``RunRequest`` builds one (:meth:`~hublab.experiment.request.RunRequest.description`), so the
runner is orchestration only and no module above ``tracking/`` imports MLflow (``tests/platform/test_layers.py``).
Every string written goes through the scrubbing of ``mlflow_log`` (``safe_params``/``safe_tags``): a secret value
never reaches the store.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.pipeline.config import PipelineConfig
from hublab.tracking import mlflow_log, run_inputs, run_page, traces
from hublab.tracking.artifacts import log_run_artifacts
from hublab.tracking.prompt_registry import register_and_link

log = logging.getLogger(__name__)


def _mlflow() -> Any:
    """MLflow, imported when a run starts (local: ~1.4 s of imports that ``hublab --help``, ``list`` and
    ``--dry-run`` never need)."""
    import mlflow

    return mlflow


@dataclass(frozen=True)
class RunDescription:
    """What the tracking layer needs to know about one run; built by ``RunRequest.description()``."""

    cfg: PipelineConfig
    graph: str
    dataset: str
    settings: Settings
    experiment: str
    run_name: str
    config_hash: str
    #: the pipeline config as MLflow params see it (``a.b.c`` keys)
    flat_config: dict[str, Any]
    secrets: tuple[str, ...]
    parent_run_id: str | None = None
    nested: bool = False

    @property
    def root(self) -> Path:
        return self.settings.root


class RunRecorder:
    """One MLflow run of an experiment, opened with :meth:`open` and closed with :meth:`end`."""

    def __init__(self, desc: RunDescription, run: Any, *, new: bool, killed: bool) -> None:
        self.desc = desc
        self._run = run
        #: the run was created now (not resumed): its params and dataset input are logged once, by the caller
        self.new = new
        #: a resumed run had been left RUNNING by a killed process (now marked and tagged)
        self.killed = killed

    @classmethod
    def open(cls, desc: RunDescription, resume_run_id: str | None = None) -> RunRecorder:
        """Start a new run, or resume ``resume_run_id`` (a run left RUNNING by a killed process is marked KILLED
        and tagged first; one that cannot be read any more is replaced by a new run)."""
        exp_id = mlflow_log.setup(desc.root, desc.experiment)
        killed = False
        if resume_run_id:
            try:
                killed = _mark_killed_if_stale(resume_run_id)
            except Exception:  # noqa: BLE001 - gone from the store (deleted, another store): start a new run
                resume_run_id = None
        run = _mlflow().start_run(run_id=resume_run_id, experiment_id=None if resume_run_id else exp_id,
                               run_name=None if resume_run_id else mlflow_log.scrub(desc.run_name, list(desc.secrets)),
                                  nested=desc.nested,
                                  parent_run_id=desc.parent_run_id)
        return cls(desc, run, new=not resume_run_id, killed=killed)

    @property
    def run_id(self) -> str:
        return self._run.info.run_id

    @property
    def experiment_id(self) -> str:
        return self._run.info.experiment_id

    # ------------------------------------------------------------ what is logged
    def log_run_params(self, extra: dict[str, Any]) -> None:
        """The flattened pipeline config plus ``extra`` (graph, dataset, identity…), secrets dropped or masked."""
        params = mlflow_log.safe_params(self.desc.flat_config, list(self.desc.secrets))
        params.update(mlflow_log.safe_params(extra, list(self.desc.secrets)))
        _mlflow().log_params(params)

    def set_tags(self, tags: dict[str, Any]) -> None:
        _mlflow().set_tags(mlflow_log.safe_tags(tags, list(self.desc.secrets)))

    def log_metrics(self, metrics: dict[str, Any]) -> None:
        """The finite numeric metrics, under their own (checked) names."""
        _mlflow().log_metrics(mlflow_log.finite_metrics(metrics))

    def log_run_metrics(self, metrics: dict[str, Any]) -> None:
        """A run's page: its headline as metrics (``run_page.headline``, at most 20); every metric is in the
        ``metrics.json`` artifact and the slices in the ``metrics_by_slice.json`` table (``log_artifacts``)."""
        self.log_metrics(run_page.headline(metrics))

    def log_dataset_input(self, pairs: list[Any], dataset_file: Path, *, scope: str) -> None:
        run_inputs.log_dataset_input(pairs, self.desc.dataset, dataset_file, scope=scope)

    def run_tags(self, embedder: str | None) -> dict[str, str]:
        """The tags that say what ran (retriever, pipeline, graph, dataset, embedder)."""
        d = self.desc
        return {"hublab.retriever": d.cfg.retriever_type, "hublab.pipeline": d.cfg.name,
                **run_inputs.run_tags(d.cfg, d.graph, d.dataset, embedder)}

    def register_prompts(self) -> None:
        """The prompt versions this run's LLM steps send, registered and linked to the run."""
        mlruns = self.desc.root / "mlruns"
        register_and_link(self.desc.cfg, self.run_id, lock_dir=mlruns if mlruns.is_dir() else None)

    def tracer(self, *, enabled: bool) -> AbstractContextManager[Any]:
        """Per-question traces into this run while the block runs (a no-op when not ``enabled``)."""
        return traces.run_tracer(self.run_id, self.experiment_id, list(self.desc.secrets), enabled=enabled)

    def log_artifacts(self, records: list[dict[str, Any]], metrics: dict[str, float],
                      slices: dict[str, dict[str, dict[str, float]]], out_dir: Path, identity: dict[str, Any], *,
                      plots: bool = True) -> None:
        """Predictions, config, identity, metrics, slices, the thesis's reference and (``plots``) their charts."""
        d = self.desc
        log_run_artifacts(d.cfg, records, metrics, slices, out_dir, graph=d.graph, dataset=d.dataset,
                          settings=d.settings, config_hash=d.config_hash, identity=identity, secrets=list(d.secrets),
                          plots=plots)

    def best_effort(self, what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """Run-metadata logging that must not stop an experiment (a tracking server without a prompt registry, …):
        a failure is logged and tagged ``hublab.tracking_error``."""
        try:
            return fn(*args, **kw)
        except Exception as exc:  # noqa: BLE001
            log.warning("%s failed: %s", what, exc)
            try:
                _mlflow().set_tag("hublab.tracking_error", f"{what}: {type(exc).__name__}: {exc}"[:500])
            except Exception:  # noqa: BLE001
                pass
            return None

    def end(self, status: str) -> None:
        """FINISHED, FAILED or KILLED."""
        _mlflow().end_run(status)

    @contextmanager
    def ending_on_error(self) -> Iterator[RunRecorder]:
        """A block whose exception ends the run (KILLED on Ctrl-C, else FAILED) before it propagates."""
        try:
            yield self
        except BaseException as exc:
            self.end("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
            raise


def _mark_killed_if_stale(run_id: str) -> bool:
    """A run left RUNNING by a killed process (the caller holds the run's lock, so nobody is running it): mark it
    KILLED and say so in a tag."""
    client = _mlflow().MlflowClient()
    run = client.get_run(run_id)
    if run.info.status == "RUNNING":
        client.set_terminated(run_id, status="KILLED")
        client.set_tag(run_id, "hublab.killed_detected", "left RUNNING by a killed process; marked KILLED, resumed")
        return True
    return False

