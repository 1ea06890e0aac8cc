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

import copy
import logging
import os
import socket
import time
import warnings
from collections.abc import Callable
from typing import Any

import optuna

from hublab.errors import InputError
from hublab.signals import deferred, undeferred
from hublab.tuning.ofat import OfatTrial, apply_overrides, ofat_table, ofat_trials
from hublab.tuning.space import Param, SearchSpace, get_path, optuna_param, same_value
from hublab.tuning.storage import (
    NoPlannedTrialLeft,
    StudyStorage,
    write_reported,
)
from hublab.tuning.study_open import (  # noqa: F401 (fresh_study, open_study re-exported)
    _check_attrs,
    _fail_legacy_running,
    fresh_study,
    locked,
    open_study,
    reseed_for_this_start,
)
from hublab.tuning.study_spec import (  # noqa: F401 (the study's public types, re-exported)
    HITS,
    MINIMIZE,
    RECALL,
    Evaluator,
    ProgressFn,
    StudyResult,
    StudySpec,
    TrialReporter,
    TrialRequest,
    constraint_values,
    direction_of,
)

log = logging.getLogger(__name__)

WORKER = f"{socket.gethostname()}:{os.getpid()}"
#: the trial attribute holding its metrics (name -> value)
METRICS_ATTR = "metrics"
_TS = optuna.trial.TrialState


def _params(space: SearchSpace, base_cfg: dict[str, Any]) -> dict[str, Param]:
    """The Optuna parameter (real distribution) of every factor, spanning its values and the base value."""
    return {f.path: optuna_param(f, get_path(base_cfg, f.path, None)) for f in space.factors}


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
        reseed_for_this_start(study, spec)
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
        write_reported(study, trial)  # here a termination ends the trial FAILED; in Optuna's tell it would not
        if metrics.get("_pruned"):
            raise optuna.TrialPruned()
        # one attribute, not one per metric: each is a storage round trip (~30 a trial: a sixth of a BM25 study)
        trial.set_user_attr(METRICS_ATTR, {k: float(v) for k, v in metrics.items()
                                           if isinstance(v, int | float) and not k.startswith("_")})
        if spec.limits:  # read by the sampler's constraints_func; an infeasible trial is never the chosen one
            bounds = constraint_values(metrics, spec.limits)
            trial.set_user_attr("constraints", bounds)
            trial.set_user_attr("feasible", all(b <= 0 for b in bounds))
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
                    with deferred():  # a signal between ask and objective, or in tell, would leave it RUNNING
                        study.optimize(lambda trial: _interruptible(objective, trial), n_trials=1, catch=())
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


def _interruptible(objective: Callable[[optuna.Trial], Any], trial: optuna.Trial) -> Any:
    """The objective, where a termination signal is raised at once (Optuna then marks the trial FAILED)."""
    with undeferred():
        return objective(trial)


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
                measured = trial_metrics(t)
                scores[key] = (measured.get(RECALL), measured.get(HITS))
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
        best = best_feasible(study, spec)
        if best is not None:
            result.best = _row(best, params)
    return result


def best_feasible(study: optuna.Study, spec: StudySpec) -> optuna.trial.FrozenTrial | None:
    """The best COMPLETE trial within the study's limits (rounded values, so float noise never decides; ties go to
    the earlier trial): Optuna's ``best_trial`` ignores constraints."""
    sign = -1.0 if direction_of(spec.objectives[0]) == "maximize" else 1.0
    ok = [t for t in study.get_trials(deepcopy=False, states=(_TS.COMPLETE,))
          if t.values and t.user_attrs.get("feasible", True)]
    return min(ok, key=lambda t: (sign * round(float(t.values[0]), 10), t.number), default=None)


def _row(t: optuna.trial.FrozenTrial, params: dict[str, Param]) -> dict[str, Any]:
    return {
        "number": t.number,
        "state": t.state.name,
        "name": t.user_attrs.get("ofat_key", f"trial-{t.number}"),
        "params": {p: params[p].to_value(v) if p in params else v for p, v in t.params.items()},
        "values": list(t.values) if t.values else None,
        "metrics": trial_metrics(t),
        "feasible": bool(t.user_attrs.get("feasible", True)),
    }


def trial_metrics(t: optuna.trial.FrozenTrial) -> dict[str, float]:
    """A finished trial's metrics, by name: the ``metrics`` attribute, or (a study run by an earlier HubLab) one
    ``m:<name>`` attribute per metric."""
    if isinstance(found := t.user_attrs.get(METRICS_ATTR), dict):
        return dict(sorted(found.items()))  # by name, as the one-attribute-per-metric studies came back
    return {k[2:]: v for k, v in sorted(t.user_attrs.items()) if k.startswith("m:")}


def _trial_rows(study: optuna.Study, params: dict[str, Param]) -> list[dict[str, Any]]:
    return [_row(t, params) for t in study.get_trials(deepcopy=False)]
