"""Optuna studies over pipeline configs: OFAT (thesis Ch. 9) as an enqueued trial list, TPE with
pruning on partial results, and NSGA-II for quality-vs-cost Pareto fronts.

The study only decides *which* configs run; an :class:`Evaluator` runs one config (normally the
experiment runner, logging a nested MLflow run) and returns its aggregate metrics. Storage is any
Optuna RDB URL (sqlite by default, PostgreSQL for several workers); resuming skips finished trials.

Several workers may run one study at the same time (same command, same storage): trials are taken from
the storage atomically, trials of dead workers are found by their missing heartbeat and retried once
(see :mod:`hublab.tuning.storage`), and a worker whose queue is empty waits for the trials still running
elsewhere before it reports, so every worker ends with the complete table.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os
import socket
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna

from hublab.errors import InputError
from hublab.evaluation import names
from hublab.tuning.ofat import FactorRow, OfatTrial, apply_overrides, ofat_table, ofat_trials
from hublab.tuning.space import Param, SearchSpace, get_path, optuna_param, same_value
from hublab.tuning.storage import (
    DEFAULT_GRACE_S,
    DEFAULT_HEARTBEAT_S,
    NoPlannedTrialLeft,
    StudyStorage,
    make_storage,
    study_lock,
)

log = logging.getLogger(__name__)

# Metrics where smaller is better (everything else is maximised).
MINIMIZE = {"runtime", "llm_tokens", "emissions", "energy", "runtime_s", "total_energy_consumption"}
RECALL = names.RECALL
HITS = names.HITS_AT_10


def direction_of(metric: str) -> str:
    return "minimize" if metric in MINIMIZE or metric.startswith(("runtime", "llm_tokens", "emissions")) \
        else "maximize"


class TrialReporter(Protocol):
    def __call__(self, step: int, value: float) -> bool:
        """Report a partial objective value after ``step`` questions; True means: prune now."""


@dataclass
class TrialRequest:
    """What an evaluator is asked to run."""

    name: str
    config: dict[str, Any]
    overrides: dict[str, Any]
    report: TrialReporter | None = None  # set only when pruning is possible (single objective)
    parent_run_id: str | None = None


Evaluator = Callable[[TrialRequest], dict[str, float]]


@dataclass
class StudySpec:
    name: str
    mode: str = "ofat"  # ofat | tpe | nsga2
    storage: str | None = None
    # tpe/nsga2: trials in the whole study (a resume tops up to this many);
    # ofat: at most this many of the grid's trials in this invocation (None = the rest of the grid)
    n_trials: int | None = None
    objectives: list[str] = field(default_factory=lambda: [RECALL])
    seed: int = 0
    prune: bool = True
    heartbeat_interval: int = DEFAULT_HEARTBEAT_S
    grace_period: int | None = DEFAULT_GRACE_S
    max_retry: int = 1  # retries of a trial whose worker died (its heartbeat stopped)
    poll_interval: float | None = None  # wait between looks at other workers' trials (default: heartbeat)
    # what the trials are measured on (base pipeline without its search space, graph, dataset, question limit):
    # a study resumed or joined on another one would mix incomparable trials (docs/tuning.md)
    identity: str | None = None
    # tpe: the base configuration is the study's first trial (inside the budget), so a tuned configuration is
    # never chosen over a default it was not measured against
    enqueue_base: bool = False

    def validate(self) -> None:
        if self.mode not in ("ofat", "tpe", "nsga2"):
            raise InputError(f"unknown mode {self.mode!r}; expected ofat, tpe or nsga2", field="mode")
        if self.mode == "nsga2" and len(self.objectives) < 2:
            raise InputError("nsga2 needs at least two objectives (e.g. recall_triples,runtime)", field="objectives")
        if self.mode in ("tpe", "nsga2") and not self.n_trials:
            raise InputError(f"--n-trials is required for mode {self.mode}", field="n_trials")
        if self.n_trials is not None and self.n_trials < 1:
            raise InputError("--n-trials must be positive", field="n_trials")
        grace = self.grace_period
        if self.heartbeat_interval < 1 or (grace is not None and grace <= self.heartbeat_interval):
            raise InputError("need heartbeat interval >= 1 s and grace period > heartbeat interval",
                             field="heartbeat_interval")


@dataclass
class StudyResult:
    study: optuna.Study
    spec: StudySpec
    trials: list[dict[str, Any]]
    table: list[FactorRow] = field(default_factory=list)
    chosen: dict[str, Any] = field(default_factory=dict)
    pareto: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None
    skipped_factors: list[tuple[str, str]] = field(default_factory=list)
    pending: list[str] = field(default_factory=list)  # OFAT trials not COMPLETE yet (budget, failures)
    ran: int = 0  # trials this worker ran in this call
    planned: int = 0  # OFAT grid size / tpe-nsga2 n_trials


ProgressFn = Callable[[int, int], None]  # (finished trials of the study, planned)
WORKER = f"{socket.gethostname()}:{os.getpid()}"
_TS = optuna.trial.TrialState


def _params(space: SearchSpace, base_cfg: dict[str, Any]) -> dict[str, Param]:
    """The Optuna parameter (real distribution) of every factor, spanning its values and the base value."""
    return {f.path: optuna_param(f, get_path(base_cfg, f.path, None)) for f in space.factors}


def _sampler(spec: StudySpec) -> optuna.samplers.BaseSampler:
    if spec.mode == "tpe":
        return optuna.samplers.TPESampler(seed=spec.seed)
    if spec.mode == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=spec.seed, population_size=max(4, min(20, spec.n_trials or 8)))
    # OFAT trials are all enqueued; the sampler is never consulted for them.
    return optuna.samplers.RandomSampler(seed=spec.seed)


def _storage(spec: StudySpec) -> StudyStorage | None:
    if not spec.storage:
        return None  # in-memory: one process, nothing to coordinate
    return make_storage(spec.storage, heartbeat_interval=spec.heartbeat_interval, grace_period=spec.grace_period,
                        max_retry=spec.max_retry)


def open_study(spec: StudySpec) -> optuna.Study:
    spec.validate()
    directions = [direction_of(m) for m in spec.objectives] if spec.mode == "nsga2" else \
        [direction_of(spec.objectives[0])]
    pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1) if (
        spec.mode == "tpe" and spec.prune) else optuna.pruners.NopPruner()
    return optuna.create_study(
        storage=_storage(spec),
        study_name=spec.name,
        sampler=_sampler(spec),
        pruner=pruner,
        directions=directions,
        load_if_exists=True,
    )


@contextlib.contextmanager
def locked(study: optuna.Study):
    """The study's cross-worker lock (see :func:`hublab.tuning.storage.study_lock`)."""
    backend = getattr(study._storage, "_backend", study._storage)  # noqa: SLF001 - the RDBStorage behind the cache
    if isinstance(backend, StudyStorage):
        with study_lock(backend, study.study_name):
            yield
    else:
        yield


def _check_attrs(study: optuna.Study, spec: StudySpec) -> None:
    _check_identity(study, spec)
    stored_mode = study.user_attrs.get("mode")
    if stored_mode and stored_mode != spec.mode:
        raise InputError(f"study {spec.name!r} exists with mode {stored_mode!r}; use another --study name",
                         field="study")
    stored_obj = study.user_attrs.get("objectives")
    if stored_obj and stored_obj != list(spec.objectives):
        raise InputError(f"study {spec.name!r} exists with objectives {stored_obj}", field="study")
    if stored_mode is None:
        study.set_user_attr("mode", spec.mode)
    if stored_obj is None:
        study.set_user_attr("objectives", list(spec.objectives))
    names = spec.objectives if spec.mode == "nsga2" else spec.objectives[:1]
    if study.metric_names != list(names):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names(list(names))


def _check_identity(study: optuna.Study, spec: StudySpec) -> None:
    """A study's trials are comparable only on the configuration they were measured on: resuming or joining it
    with another base pipeline, graph, dataset or question limit is refused (a study from before identities were
    recorded, with trials, is refused too: what it measured is unknown)."""
    if spec.identity is None:
        return
    stored = study.user_attrs.get("base_identity")
    if stored == spec.identity:
        return
    if stored is None and not study.get_trials(deepcopy=False):
        study.set_user_attr("base_identity", spec.identity)
        return
    was = f"was measured on base configuration {stored[:12]}" if stored else "has no recorded base configuration"
    raise InputError(
        f"study {spec.name!r} {was}, this command's is {spec.identity[:12]} (the base pipeline, graph, dataset or "
        f"--limit differ): its trials are not comparable. Use another --study name, or --fresh to delete the "
        f"study and start it again", field="study")


def fresh_study(spec: StudySpec) -> bool:
    """Delete the study ``spec.name`` from the storage if it exists (``hublab tune --fresh``); True if it did."""
    storage = _storage(spec)
    if spec.name not in {s.study_name for s in optuna.get_all_study_summaries(storage, include_best_trial=False)}:
        return False
    optuna.delete_study(study_name=spec.name, storage=storage)
    return True


def _fail_legacy_running(study: optuna.Study) -> None:
    """Studies from before heartbeats: their RUNNING trials can never be judged alive or dead; fail them
    once (they are re-queued below). Studies with heartbeats never get here again."""
    if study.user_attrs.get("heartbeats"):
        return
    for t in study.get_trials(deepcopy=False, states=(_TS.RUNNING,)):
        with contextlib.suppress(optuna.exceptions.UpdateFinishedTrialError):
            study._storage.set_trial_state_values(t._trial_id, _TS.FAIL)  # noqa: SLF001
    study.set_user_attr("heartbeats", True)


def _enqueue_ofat(study: optuna.Study, trials: list[OfatTrial], params: dict[str, Param],
                  base_cfg: dict[str, Any]) -> int:
    """Enqueue the OFAT trials that are not COMPLETE, WAITING or RUNNING (somewhere); call under the study
    lock. FAIL trials (an evaluator error, or a dead worker's trial past its retry) are queued again.
    Returns how many planned trials are waiting to run."""
    present: dict[str, _TS] = {}
    for t in study.get_trials(deepcopy=False, states=(_TS.COMPLETE, _TS.WAITING, _TS.RUNNING)):
        key = t.user_attrs.get("ofat_key")
        if key is not None and present.get(key) != _TS.COMPLETE:
            present[key] = t.state
    base = {p: get_path(base_cfg, p, None) for p in params}
    waiting = sum(s == _TS.WAITING for s in present.values())
    for tr in trials:
        if tr.key in present:
            continue
        values = {**base, **tr.overrides}
        fixed = {p: params[p].to_param(v) for p, v in values.items() if v is not None}
        study.enqueue_trial(fixed, user_attrs={"ofat_key": tr.key, "ofat_factor": tr.factor or "base"})
        waiting += 1
    return waiting


def _metrics_to_values(metrics: dict[str, float], objectives: list[str]) -> list[float]:
    out = []
    for m in objectives:
        v = metrics.get(m)
        if v is None:
            raise InputError(f"objective metric {m!r} missing from evaluator output "
                             f"(have: {', '.join(sorted(metrics))[:300]})", field="objectives")
        out.append(float(v))
    return out


def _finished(study: optuna.Study, spec: StudySpec, planned_keys: set[str]) -> int:
    trials = study.get_trials(deepcopy=False, states=(_TS.COMPLETE, _TS.PRUNED))
    if spec.mode == "ofat":
        return len({t.user_attrs.get("ofat_key") for t in trials} & planned_keys)
    return len(trials)


def run_study(
    spec: StudySpec,
    base_cfg: dict[str, Any],
    space: SearchSpace,
    evaluator: Evaluator,
    *,
    parent_run_id: str | None = None,
    setup: Callable[[optuna.Study], str | None] | None = None,
    on_progress: ProgressFn | None = None,
) -> StudyResult:
    """Run (or resume, or join) a study and collect the thesis-shaped OFAT table or the Pareto front.

    ``setup(study)`` runs under the study's cross-worker lock after the OFAT list is enqueued and returns
    the parent MLflow run id for the trials (overriding ``parent_run_id``). ``on_progress(done, planned)``
    is called after every trial and while waiting for other workers.
    """
    study = open_study(spec)
    params = _params(space, base_cfg)
    ofat_list = ofat_trials(space, base_cfg) if spec.mode == "ofat" else []
    by_key = {t.key: t for t in ofat_list}
    base_values = {p: get_path(base_cfg, p, None) for p in params}
    with locked(study):
        _check_attrs(study, spec)
        _fail_legacy_running(study)
        if spec.mode == "ofat":
            _enqueue_ofat(study, ofat_list, params, base_cfg)
        elif spec.mode == "tpe" and spec.enqueue_base and not study.get_trials(deepcopy=False):
            study.enqueue_trial({p: prm.to_param(v) for p, prm in params.items()
                                 if (v := base_values[p]) is not None}, user_attrs={"base": True})
        if setup is not None:
            parent_run_id = setup(study)

    def objective(trial: optuna.Trial) -> float | list[float]:
        trial.set_user_attr("worker", WORKER)
        if spec.mode == "ofat":
            planned = by_key.get(trial.user_attrs.get("ofat_key", ""))
            if planned is None:  # enqueued by another grid version of this study: not part of this one
                raise InputError(f"trial {trial.number} is not in this OFAT grid "
                                 f"({trial.user_attrs.get('ofat_key')!r}); use another --study name", field="study")
            overrides = dict(planned.overrides)
            for p, prm in params.items():  # record the parameters with their distributions
                if base_values[p] is not None or p in overrides:
                    prm.suggest(trial)
            name = planned.key
        else:
            values = {p: prm.to_value(prm.suggest(trial)) for p, prm in params.items()}
            overrides = {p: v for p, v in values.items() if not same_value(v, base_values[p])}
            name = f"trial-{trial.number}"
        cfg = apply_overrides(copy.deepcopy(base_cfg), overrides)
        report: TrialReporter | None = None
        if spec.mode == "tpe" and spec.prune:
            def report(step: int, value: float) -> bool:
                trial.report(value, step)
                return trial.should_prune()
        metrics = evaluator(TrialRequest(name, cfg, overrides, report, parent_run_id))
        if metrics.get("_pruned"):
            raise optuna.TrialPruned()
        for k, v in metrics.items():
            if isinstance(v, int | float) and not k.startswith("_"):
                trial.set_user_attr(f"m:{k}", float(v))
        values_ = _metrics_to_values(metrics, spec.objectives)
        return values_ if spec.mode == "nsga2" else values_[0]

    planned_n = len(ofat_list) if spec.mode == "ofat" else int(spec.n_trials or 0)
    def requeue() -> int:
        """Planned OFAT trials left with no COMPLETE/WAITING/RUNNING trial (a retry killed too) are queued again."""
        with locked(study):
            return _enqueue_ofat(study, ofat_list, params, base_cfg)

    ran = _drive(study, spec, objective, planned_n, {t.key for t in ofat_list}, on_progress,
                 requeue if spec.mode == "ofat" else None)
    result = collect(study, spec, base_cfg, space, params)
    result.ran, result.planned = ran, planned_n
    return result


def _drive(study: optuna.Study, spec: StudySpec, objective: Callable[[optuna.Trial], Any], planned_n: int,
           planned_keys: set[str], on_progress: ProgressFn | None,
           requeue: Callable[[], int] | None = None) -> int:
    """The worker loop: take trials until the budget or the queue is exhausted, then wait for the trials
    other workers (or dead workers, until their heartbeat goes stale and they are re-queued) still hold."""
    backend = getattr(study._storage, "_backend", study._storage)  # noqa: SLF001
    heartbeat = isinstance(backend, StudyStorage)
    if heartbeat and spec.mode == "ofat":
        backend.planned_only.add(study._study_id)  # noqa: SLF001
    poll = spec.poll_interval or float(spec.heartbeat_interval)
    budget = spec.n_trials if spec.mode == "ofat" else None
    ran = requeues = 0

    def progress() -> None:
        if on_progress is not None:
            on_progress(_finished(study, spec, planned_keys), planned_n)

    progress()
    try:
        while budget is None or ran < budget:
            if heartbeat:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                    optuna.storages.fail_stale_trials(study)  # dead workers' trials -> FAIL + one retry queued
            states = [t.state for t in study.get_trials(deepcopy=False)]
            waiting = _TS.WAITING in states
            if spec.mode == "ofat":
                take = waiting
            else:
                active = sum(s in (_TS.COMPLETE, _TS.PRUNED, _TS.RUNNING, _TS.WAITING) for s in states)
                take = waiting or active < planned_n
            if take:
                try:
                    study.optimize(objective, n_trials=1, catch=())
                except NoPlannedTrialLeft:
                    continue  # another worker took the last queued trial first
                except (optuna.exceptions.UpdateFinishedTrialError, ValueError) as exc:
                    if not _lost_trial(exc):
                        raise
                    # this worker's heartbeat stalled past the grace period: another worker failed and
                    # re-queued the trial; the retry counts, this result is dropped
                    log.warning("trial taken over by another worker (heartbeat stalled): %s", exc)
                ran += 1
                progress()
                continue
            if _TS.RUNNING in states and heartbeat:
                time.sleep(poll)  # other workers' trials (or a dead one, until it is stale)
                progress()
                continue
            if (requeue is not None and requeues < 2 and _finished(study, spec, planned_keys) < planned_n
                    and requeue()):
                requeues += 1  # bounded: a trial that fails every time must not loop forever
                continue  # a planned trial failed past its retry (e.g. killed twice): run it again
            break
    finally:
        if heartbeat:
            backend.planned_only.discard(study._study_id)  # noqa: SLF001
    return ran


def _lost_trial(exc: BaseException) -> bool:
    """Optuna refusing to finish a trial another worker has already failed (stale heartbeat)."""
    while exc is not None:
        if isinstance(exc, optuna.exceptions.UpdateFinishedTrialError) or "Cannot tell a FAIL trial" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__  # type: ignore[assignment]
    return False


def collect(study: optuna.Study, spec: StudySpec, base_cfg: dict[str, Any], space: SearchSpace,
            params: dict[str, Param] | None = None) -> StudyResult:
    """The study's results as they stand in the storage (any worker may call this)."""
    params = params if params is not None else _params(space, base_cfg)
    result = StudyResult(study, spec, _trial_rows(study, params), skipped_factors=list(space.skipped))
    if spec.mode == "ofat":
        ofat_list = ofat_trials(space, base_cfg)
        scores: dict[str, tuple[float | None, float | None]] = {}
        for t in study.get_trials(deepcopy=False, states=(_TS.COMPLETE,)):
            key = t.user_attrs.get("ofat_key")
            if key:
                scores[key] = (t.user_attrs.get(f"m:{RECALL}"), t.user_attrs.get(f"m:{HITS}"))
        result.table, result.chosen = ofat_table(space, base_cfg, scores)
        result.pending = [t.key for t in ofat_list if t.key not in scores]
        if result.pending:  # a factor is only decided once all its values (and the base) are measured
            pending_factors = {t.factor for t in ofat_list if t.key in result.pending}
            undecided = {f.path for f in space.factors} if "base" in result.pending else pending_factors
            by_name = {f.name: f.path for f in space.factors}
            for row in result.table:
                if by_name.get(row.factor) in undecided:
                    row.chosen = False
            for path in undecided:
                result.chosen.pop(path, None)
    elif spec.mode == "nsga2":
        result.pareto = [_row(t, params) for t in study.best_trials]
    else:
        complete = study.get_trials(deepcopy=False, states=(_TS.COMPLETE,))
        if complete:
            result.best = _row(study.best_trial, params)
    return result


def _row(t: optuna.trial.FrozenTrial, params: dict[str, Param]) -> dict[str, Any]:
    return {
        "number": t.number,
        "state": t.state.name,
        "name": t.user_attrs.get("ofat_key", f"trial-{t.number}"),
        "params": {p: params[p].to_value(v) if p in params else v for p, v in t.params.items()},
        "values": list(t.values) if t.values else None,
        "metrics": {k[2:]: v for k, v in t.user_attrs.items() if k.startswith("m:")},
    }


def _trial_rows(study: optuna.Study, params: dict[str, Param]) -> list[dict[str, Any]]:
    return [_row(t, params) for t in study.get_trials(deepcopy=False)]
