"""``hublab tune`` as a library call: one study = one Optuna study + one parent MLflow run + outputs.

:func:`run_tune` loads the pipeline and its factors, opens (or joins, or resumes) the study, finds or creates
the study's single parent MLflow run, runs trials through the experiment runner and writes the outputs.
Any number of workers may run it at the same time on one study (same storage URL):

* The parent run id is stored in the study's user attrs (``mlflow_parent_run_id``) *before* the first trial,
  under the study's cross-worker lock: a rerun after a crash and every concurrent worker use the same
  parent; a new study (new name, or a study recreated under an old name) gets its own.
* A parent found RUNNING while no trial of the study has a live heartbeat was left by a killed worker: it is
  marked KILLED (tag ``hublab.recovered``) and then resumed.
* A worker sets the parent FINISHED (or FAILED/KILLED when it crashes) only when no other worker still runs a
  trial of the study; otherwise the last one does.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import optuna
import yaml
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from hublab.atomic import write_text_atomic
from hublab.config import Settings
from hublab.config import settings as load_settings
from hublab.errors import InputError
from hublab.evaluation import names
from hublab.pipeline.config import load_pipeline
from hublab.redact import scrub
from hublab.tracking.mlflow_log import setup as setup_experiment
from hublab.tracking.study_runs import UID_TAG, ParentRun, StudyRuns
from hublab.tuning import reuse
from hublab.tuning.interrupts import quiet_interrupted_trials
from hublab.tuning.report import write_outputs
from hublab.tuning.runner_eval import runner_evaluator
from hublab.tuning.space import (
    SPACE_KEYS,
    applicable,
    check_shape_space,
    check_space,
    pipeline_space,
    require_grid,
    set_path,
    space_from_pipeline,
    space_from_thesis_json,
    space_record,
)
from hublab.tuning.storage import DEFAULT_GRACE_S, DEFAULT_HEARTBEAT_S, file_lock
from hublab.tuning.study import WORKER, Evaluator, StudyResult, StudySpec, fresh_study, run_study

PARENT_ATTR = "mlflow_parent_run_id"


@dataclass
class TuneRequest:
    pipeline: Path
    study: str
    mode: str = "ofat"
    dataset: str = "reduced_gv1"
    graph: str | None = None
    storage: str | None = None
    n_trials: int | None = None
    objectives: list[str] = field(default_factory=lambda: ["recall_triples"])
    thesis_params: Path | None = None
    limit: int | None = None
    seed: int = 0
    carbon: bool = True
    output_dir: Path | None = None
    heartbeat_interval: int = DEFAULT_HEARTBEAT_S
    grace_period: int = DEFAULT_GRACE_S
    progress: bool = True
    # this worker's index folder (default params.yaml paths.indices): a Milvus Lite index file can be open in
    # one process only, so a second worker on the same machine needs its own copy (or a Milvus server)
    index_dir: Path | None = None
    fresh: bool = False  # delete the study first (no worker may be running it)
    # dotted config path -> value set on the base pipeline before anything (e.g. the comparison's output bound
    # retriever.params.max_output_triples); part of the study's identity
    base_overrides: dict[str, Any] = field(default_factory=dict)
    enqueue_base: bool = False  # tpe: the base configuration is the first trial
    prune: bool = True  # tpe: stop trials that are worse (``pruner``)
    pruner: str = "wilcoxon"  # per-question signed-rank test against the best trial, or ``median`` (partial means)
    limits: dict[str, float] = field(default_factory=dict)  # {"s_per_question": s, "cost_per_question": USD}
    trial_artifacts: bool = True  # each trial run logs its predictions and plots (seconds per trial)
    study_plots: bool = True  # the study's parallel-coordinate and importance charts (~2 s)
    # the MLflow experiment of the parent and trial runs (default ``tune-<study>``); a study keeps the parent run
    # of its first invocation, so name it on the first one
    experiment: str | None = None
    #: the pipeline's ``shape_space`` factors join its ``search_space`` (a comparison on a user's graph)
    shape_space: bool = False
    #: ``--hub-type``: every trial's hub types, over the graph's declared ones (empty: as ``hublab run`` decides)
    hub_types: list[str] = field(default_factory=list)


@dataclass
class TuneOutcome:
    result: StudyResult
    spec: StudySpec
    out_dir: Path
    experiment: str
    parent_run_id: str
    outputs: list[Path] = field(default_factory=list)
    recovered: bool = False  # the parent was left RUNNING by a killed worker

    def summary(self) -> list[str]:
        """Lines for the terminal: the OFAT table or Pareto front / best trial, and where things are."""
        from hublab.tuning.report import ofat_markdown

        res, spec, lines = self.result, self.spec, []
        if res.table:
            lines.append(ofat_markdown(res))
            if res.pending:
                lines.append(f"\n{len(res.pending)} of {res.planned} OFAT trials not finished yet "
                             f"(ran {res.ran} now); factors still missing a trial are undecided. "
                             "Run the same command again to continue.")
            lines.append("\nChosen values (Recall first, Hits@10 breaks ties):")
            lines.extend(f"  {path}: {value!r}" for path, value in res.chosen.items())
        if res.pareto:
            lines.append(f"Pareto front ({', '.join(spec.objectives)}):")
            lines.extend(f"  trial {p['number']}: values={[round(v, 4) for v in p['values']]} params={p['params']}"
                         for p in res.pareto)
        if res.best:
            lines.append(f"Best trial {res.best['number']}: {spec.objectives[0]}={res.best['values'][0]:.4f} "
                         f"params={res.best['params']}")
        if res.ran:
            lines.append(f"This worker's {res.ran} trials: {reuse.line(res.reuse)}")
        lines.append(f"Outputs: {self.out_dir}  ·  MLflow experiment {self.experiment!r}, "
                     f"parent run {self.parent_run_id}")
        return lines


def _setup_experiment(root: Path, experiment: str) -> str:
    """``setup_experiment``, tolerating a concurrent worker creating the same experiment first."""
    for attempt in range(5):
        try:  # the lock: workers starting together on a new project race creating MLflow's tables
            with file_lock(root / "mlruns" / "mlflow.db"):
                return setup_experiment(root, experiment)
        except Exception:  # noqa: BLE001 - e.g. RESOURCE_ALREADY_EXISTS / sqlite busy from another worker
            if attempt == 4:
                raise
            time.sleep(0.5 * (attempt + 1))
    raise AssertionError("unreachable")


def _running_trials(study: optuna.Study) -> int:
    """Trials of the study still held by a live worker (after failing those whose heartbeat went stale)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)
    return len(study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.RUNNING,)))


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def parent_run_setup(runs: StudyRuns, spec: StudySpec, params: dict[str, str],
                     on_recovered: Callable[[], None] | None = None) -> Callable[[optuna.Study], str]:
    """The ``setup`` hook for :func:`run_study`: find or create the study's parent run (under the study lock).

    The study gets a random id once (user attr ``hublab_uid``); its parent run carries it as tag
    ``hublab.study_uid``. The parent is the run named by the user attr ``mlflow_parent_run_id``, else the run
    in this MLflow store tagged with the study's id (a worker whose MLflow store is not the one the attr
    points to), else a new one. A study recreated under an old name has a new id, so never another's parent.
    """
    def find(study: optuna.Study, uid: str) -> ParentRun | None:
        run_id = study.user_attrs.get(PARENT_ATTR)
        run = runs.get(run_id) if run_id else None
        if run is not None and not run.deleted and run.tags.get(UID_TAG, uid) == uid:
            return run
        return runs.find_by_uid(uid)

    def setup(study: optuna.Study) -> str:
        uid = study.user_attrs.get("hublab_uid")
        if not uid:
            uid = uuid.uuid4().hex
            study.set_user_attr("hublab_uid", uid)
        run = find(study, uid)
        if run is not None and run.status == "RUNNING" and _running_trials(study) == 0:
            # left RUNNING by a worker that was killed (no trial of the study has a live heartbeat)
            runs.mark_killed(run.run_id, f"{_now()}: was RUNNING with no live worker; marked KILLED, resumed by "
                                         f"{WORKER}")
            if on_recovered is not None:
                on_recovered()
        if run is None:
            run_id = runs.create(f"study {spec.name} ({spec.mode})", {"hublab.study": spec.name,
                                                                      "hublab.mode": spec.mode, UID_TAG: uid}, params)
        else:
            run_id = run.run_id
            runs.reopen(run_id)
            if UID_TAG not in run.tags:  # a parent made before study ids existed
                runs.set_tag(run_id, UID_TAG, uid)
        attr = study.user_attrs.get(PARENT_ATTR)
        if attr is None or attr == run_id or _deleted_here(runs, attr):
            study.set_user_attr(PARENT_ATTR, run_id)
        return run_id

    return setup


def _deleted_here(runs: StudyRuns, run_id: str) -> bool:
    """The run is in this store and deleted (a run of another store is another store's parent: keep the attr)."""
    run = runs.get(run_id)
    return run is not None and run.deleted


def base_identity(base: dict[str, Any], graph: str, dataset: str, limit: int | None) -> str:
    """sha256 of what a study's trials are measured on: the base pipeline without its search and shape spaces (the
    space is checked on its own, ``study_open._check_space``, so the refusal can name the factors), the graph, the
    dataset and the question limit."""
    cfg = {k: v for k, v in base.items() if k not in SPACE_KEYS}
    blob = json.dumps({"pipeline": cfg, "graph": graph, "dataset": dataset, "limit": limit}, sort_keys=True,
                      default=str)
    return hashlib.sha256(blob.encode()).hexdigest()


def _modelled(graph: str, st: Settings) -> str:
    """``graph`` with the key of the settings that shape its model (label and type predicates) when they are not
    the defaults: a study's trials measured on one graph model are never resumed on another."""
    from hublab.graph.source import model_key

    key = model_key(st)
    return f"{graph}#model-{key}" if key else graph


def run_tune(req: TuneRequest, *, settings: Settings | None = None, evaluator: Evaluator | None = None) -> TuneOutcome:
    """Run, resume or join the study ``req.study``; write its outputs; return the result."""
    st = settings or load_settings()
    if req.index_dir is not None:
        paths = {**st.section("paths"), "indices": str(Path(req.index_dir).resolve())}
        st = Settings(st.root, {**st.params, "paths": paths})
    base, space = _base_and_space(req)
    graph = req.graph or st.graph_for_dataset(req.dataset)
    (st.root / "mlruns").mkdir(parents=True, exist_ok=True)
    storage = req.storage or f"sqlite:///{(st.root / 'mlruns' / 'optuna.db').resolve()}"
    objectives = list(req.objectives) or ["recall_triples"]
    if req.mode == "nsga2" and len(objectives) < 2:
        objectives = [names.RECALL, names.HITS_AT_10, names.RUNTIME]
    spec = StudySpec(req.study, req.mode, storage, req.n_trials, objectives, req.seed,
                     heartbeat_interval=req.heartbeat_interval, grace_period=req.grace_period,
                     identity=base_identity(base, _modelled(graph, st), req.dataset, req.limit),
                     enqueue_base=req.enqueue_base,
                     prune=req.prune, pruner=req.pruner, limits=dict(req.limits), space=space_record(space))
    spec.validate()
    if req.fresh:
        fresh_study(spec)
    experiment = req.experiment or f"tune-{req.study}"
    exp_id = _setup_experiment(st.root, experiment)
    runs = StudyRuns(st.tracking_uri(), exp_id)
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    quiet_interrupted_trials()  # a trial stopped by Ctrl-C/SIGTERM: the CLI's one line, no traceback

    recovered: list[bool] = []
    setup = parent_run_setup(runs, spec, {
        "study": req.study, "mode": req.mode, "dataset": req.dataset, "graph": graph,
        "objectives": ",".join(objectives), "pipeline": str(req.pipeline), "storage": scrub(storage),
        "factors": ",".join(f.path for f in space.factors)}, on_recovered=lambda: recovered.append(True))
    evaluator = evaluator or runner_evaluator(graph, req.dataset, limit=req.limit, experiment=experiment,
                                              settings=st, objective=objectives[0], track_carbon=req.carbon,
                                              log_artifacts=req.trial_artifacts, objectives=objectives,
                                              per_question=spec.mode == "tpe" and spec.prune
                                              and spec.pruner == "wilcoxon", order_seed=req.seed,
                                              hub_types=req.hub_types)
    parent: list[str] = []
    opened: list[optuna.Study] = []

    def locked_setup(study: optuna.Study) -> str:
        opened.append(study)
        parent.append(setup(study))
        return parent[-1]

    counted = reuse.snapshot()
    try:
        with _progress(req.progress, f"study {req.study}") as on_progress:
            result = run_study(spec, base, space, evaluator, setup=locked_setup, on_progress=on_progress)
        result.reuse = reuse.since(counted)
    except BaseException as exc:
        if parent:
            _end_parent(runs, parent[-1], opened[-1], "KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
        raise
    parent_id = parent[-1]
    out_dir = req.output_dir or (st.root / "outputs" / "studies" / req.study)
    written = _publish(runs, parent_id, result, base, out_dir, plots=req.study_plots)
    _end_parent(runs, parent_id, result.study, "FINISHED")
    return TuneOutcome(result, spec, out_dir, experiment, parent_id, written, bool(recovered))


def _base_and_space(req: TuneRequest) -> tuple[dict[str, Any], Any]:
    """The study's base config (the pipeline with ``req.base_overrides``) and its checked search space: the
    pipeline's ``search_space`` or the thesis's parameter file, only the factors that apply to the base."""
    cfg = load_pipeline(req.pipeline)
    base = cfg.to_dict()
    for path, value in req.base_overrides.items():
        base = set_path(base, path, value)
    if req.thesis_params:
        space = applicable(space_from_thesis_json(req.thesis_params), base)
    else:
        space = applicable(space_from_pipeline(cfg.search_space, source=str(req.pipeline)), base)
        if req.shape_space:
            space = pipeline_space(cfg.search_space, cfg.shape_space, base, source=str(req.pipeline), shape=True)
    if not space.factors:
        raise InputError("no factors to study: add a search_space section or pass --thesis-params",
                         file=str(req.pipeline))
    if not req.thesis_params:
        check_space(space, base, source=str(req.pipeline))
    check_shape_space(cfg.search_space, cfg.shape_space, base, source=str(req.pipeline))
    if req.mode == "ofat":
        require_grid(space, source=str(req.pipeline))
    return base, space


def _publish(runs: StudyRuns, parent_id: str, result: StudyResult, base: dict[str, Any], out_dir: Path, *,
             plots: bool = True) -> list[Path]:
    """The study's tables and base pipeline under ``out_dir``, logged to its parent run with the best trial's
    metrics (``best.*``) and the number of trials still pending; returns the files written."""
    paths = write_outputs(result, out_dir, plots=plots)
    base_yaml = out_dir / "base_pipeline.yaml"
    write_text_atomic(base_yaml, yaml.safe_dump(base, sort_keys=False))
    for attempt in (1, 2):
        try:
            runs.publish(parent_id, paths, result.best["metrics"] if result.best else None, len(result.pending))
            break
        except Exception as exc:
            # two workers finishing together set the parent's tag at once: MLflow's sqlite store selects, then
            # inserts, and the second insert fails on the unique key (a fresh-clone CI run caught it); once more
            # is an update
            if attempt == 2 or "UNIQUE constraint" not in str(exc):
                raise
    return [*paths, base_yaml]


def _end_parent(runs: StudyRuns, run_id: str, study: optuna.Study, status: str) -> None:
    """End the parent run unless another worker still runs a trial of the study (it ends it later)."""
    with contextlib.suppress(Exception):
        if _running_trials(study):
            return
        runs.end(run_id, status)


@contextlib.contextmanager
def _progress(enabled: bool, title: str):
    """A rich progress bar over the study's finished trials (all workers'), or a no-op callback."""
    if not enabled:
        yield None
        return
    with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), transient=False) as bar:
        task = bar.add_task(title, total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total or None)

        yield update


