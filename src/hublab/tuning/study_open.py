"""Opening an Optuna study for a :class:`~hublab.tuning.study_spec.StudySpec`: its sampler, pruner and storage,
the checks that a resumed or joined study was measured on the same base configuration, mode and objectives, the
cross-worker lock, and ``--fresh``."""

from __future__ import annotations

import contextlib
import functools
import warnings
from dataclasses import replace

import optuna

from hublab.errors import InputError
from hublab.tuning.pruning import QuestionPruner
from hublab.tuning.storage import StudyStorage, make_storage, study_lock
from hublab.tuning.study_spec import StudySpec, direction_of

_TS = optuna.trial.TrialState


#: Wilcoxon pruning: a trial is stopped once the signed-rank test over the questions both it and the best trial
#: answered says it is worse at this p-value, and never before this many questions
WILCOXON_P = 0.1
WILCOXON_STARTUP = 10


def constraints_of(n: int, trial: optuna.trial.FrozenTrial) -> list[float]:
    """The trial's constraint values (set by the objective); a trial that never got them (pruned, failed) is
    neither feasible evidence nor a violation: zeros."""
    return list(trial.user_attrs.get("constraints") or [0.0] * n)


def _sampler(spec: StudySpec) -> optuna.samplers.BaseSampler:
    constraints = functools.partial(constraints_of, len(spec.limits)) if spec.limits else None
    if spec.mode == "tpe":
        return optuna.samplers.TPESampler(seed=spec.seed, constraints_func=constraints)
    if spec.mode == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=spec.seed, population_size=max(4, min(20, spec.n_trials or 8)),
                                             constraints_func=constraints)
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
    pruner: optuna.pruners.BasePruner = optuna.pruners.NopPruner()
    if spec.mode == "tpe" and spec.prune:
        pruner = (optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1) if spec.pruner == "median"
                  else QuestionPruner(p_threshold=WILCOXON_P, n_startup_steps=WILCOXON_STARTUP))
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
    _check_space(study, spec)
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
        f"study {spec.name!r} {was}, this command's is {spec.identity[:12]} (the base pipeline, graph, its label or "
        f"type predicates, dataset or --limit differ): its trials are not comparable. Use another --study name, or "
        f"--fresh to delete the study and start it again", field="study")


def _check_space(study: optuna.Study, spec: StudySpec) -> None:
    """One study, one search space: a joining worker or a resume with other factors, values or ranges is refused,
    naming what the study has (a study from before spaces were recorded takes this command's)."""
    if spec.space is None:
        return
    stored = study.user_attrs.get("space")
    if stored is None:
        study.set_user_attr("space", spec.space)
        return
    if stored == spec.space:
        return
    diff = sorted(p for p in set(stored) | set(spec.space) if stored.get(p) != spec.space.get(p))

    def values(rec: dict | None) -> str:
        if rec is None:
            return "not a factor"
        rng = f" range {rec['low']}..{rec['high']}" if rec.get("low") is not None else ""
        return f"[{', '.join(rec['values'])}]{rng}"

    shown = "; ".join(f"{p}: study {values(stored.get(p))}, this command {values(spec.space.get(p))}"
                      for p in diff[:3])
    more = f"; and {len(diff) - 3} more factors" if len(diff) > 3 else ""
    raise InputError(f"study {spec.name!r} exists with another search space ({shown}{more}): one study would mix "
                     "trials of two spaces. Use another --study name, or --fresh to delete the study and start it "
                     "again", field="study")


def fresh_study(spec: StudySpec) -> bool:
    """Delete the study ``spec.name`` from the storage if it exists (``hublab tune --fresh``); True if it did."""
    storage = _storage(spec)
    try:  # by name, not from a listing of every study: another process may be deleting its own study meanwhile
        # (two `tune-all --jobs 2 --fresh` jobs did: the listing read a study deleted under it, KeyError)
        optuna.delete_study(study_name=spec.name, storage=storage)
    except KeyError:  # no such study
        return False
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


def reseed_for_this_start(study: optuna.Study, spec: StudySpec) -> int:
    """Give this invocation's sampler its own seed: the study's seed for its first start (a fresh study is the one
    ``--seed`` always gave), then one derived from the seed and the start's number, counted in the study's user
    attrs under the study lock. Why: a sampler seeded alike in every process replays the same draws, so topping a
    study up (``--n-trials 2`` then ``4``), resuming it after a kill, or a second worker joining it sampled the
    parameters of its first trials again. Call under :func:`locked`; returns the start's number."""
    start = int(study.user_attrs.get("starts", 0))
    study.set_user_attr("starts", start + 1)
    if start and spec.mode in ("tpe", "nsga2"):
        derived = (spec.seed * 1_000_003 + start * 7_919) % (2**31 - 1)
        study.sampler = _sampler(replace(spec, seed=derived))
    return start
