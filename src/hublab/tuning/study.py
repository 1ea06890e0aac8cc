"""Optuna studies over pipeline configs: OFAT (thesis Ch. 9) as an enqueued trial list, TPE with
pruning on partial results, and NSGA-II for quality-vs-cost Pareto fronts.

The study only decides *which* configs run; an :class:`Evaluator` runs one config (normally the
experiment runner, logging a nested MLflow run) and returns its aggregate metrics. Storage is any
Optuna RDB URL (sqlite by default, PostgreSQL for several workers); resuming skips finished trials.
"""

from __future__ import annotations

import copy
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna

from hublab.errors import InputError
from hublab.tuning.ofat import FactorRow, OfatTrial, apply_overrides, ofat_table, ofat_trials
from hublab.tuning.space import SearchSpace, decode_value, encode_value, get_path

log = logging.getLogger(__name__)

# Metrics where smaller is better (everything else is maximised).
MINIMIZE = {"runtime", "llm_tokens", "emissions", "energy", "runtime_s", "total_energy_consumption"}
RECALL = "recall_triples"
HITS = "hit@10_triples"


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
    n_trials: int | None = None
    objectives: list[str] = field(default_factory=lambda: [RECALL])
    seed: int = 0
    prune: bool = True

    def validate(self) -> None:
        if self.mode not in ("ofat", "tpe", "nsga2"):
            raise InputError(f"unknown mode {self.mode!r}; expected ofat, tpe or nsga2", field="mode")
        if self.mode == "nsga2" and len(self.objectives) < 2:
            raise InputError("nsga2 needs at least two objectives (e.g. recall_triples,runtime)", field="objectives")
        if self.mode in ("tpe", "nsga2") and not self.n_trials:
            raise InputError(f"--n-trials is required for mode {self.mode}", field="n_trials")


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


def _choices(space: SearchSpace, base_cfg: dict[str, Any]) -> dict[str, list[str]]:
    """Categorical choices per factor: its values plus the base value when it lies outside them."""
    out = {}
    for f in space.factors:
        enc = f.encoded()
        base = encode_value(get_path(base_cfg, f.path, None))
        if base not in enc:
            enc = [base, *enc]
        out[f.path] = enc
    return out


def _sampler(spec: StudySpec) -> optuna.samplers.BaseSampler:
    if spec.mode == "tpe":
        return optuna.samplers.TPESampler(seed=spec.seed)
    if spec.mode == "nsga2":
        return optuna.samplers.NSGAIISampler(seed=spec.seed, population_size=max(4, min(20, spec.n_trials or 8)))
    # OFAT trials are all enqueued; the sampler is never consulted for them.
    return optuna.samplers.RandomSampler(seed=spec.seed)


def open_study(spec: StudySpec) -> optuna.Study:
    spec.validate()
    directions = [direction_of(m) for m in spec.objectives] if spec.mode == "nsga2" else \
        [direction_of(spec.objectives[0])]
    pruner = optuna.pruners.MedianPruner(n_startup_trials=3, n_warmup_steps=1) if (
        spec.mode == "tpe" and spec.prune) else optuna.pruners.NopPruner()
    study = optuna.create_study(
        storage=spec.storage,
        study_name=spec.name,
        sampler=_sampler(spec),
        pruner=pruner,
        directions=directions,
        load_if_exists=True,
    )
    stored_mode = study.user_attrs.get("mode")
    if stored_mode and stored_mode != spec.mode:
        raise InputError(f"study {spec.name!r} exists with mode {stored_mode!r}; use another --study name",
                         field="study")
    stored_obj = study.user_attrs.get("objectives")
    if stored_obj and stored_obj != list(spec.objectives):
        raise InputError(f"study {spec.name!r} exists with objectives {stored_obj}", field="study")
    study.set_user_attr("mode", spec.mode)
    study.set_user_attr("objectives", list(spec.objectives))
    return study


def _enqueue_ofat(study: optuna.Study, trials: list[OfatTrial], choices: dict[str, list[str]],
                  base_cfg: dict[str, Any]) -> int:
    """Enqueue OFAT trials not yet finished or waiting; returns how many are waiting to run.

    Trials left RUNNING by a crash are marked FAIL and enqueued again (the runner's per-question
    checkpoints make the rerun cheap)."""
    states: dict[str, optuna.trial.TrialState] = {}
    for t in study.get_trials(deepcopy=False):
        key = t.user_attrs.get("ofat_key")
        if key is None:
            continue
        if t.state == optuna.trial.TrialState.RUNNING:
            study._storage.set_trial_state_values(t._trial_id, optuna.trial.TrialState.FAIL)  # noqa: SLF001
            continue
        if t.state in (optuna.trial.TrialState.COMPLETE, optuna.trial.TrialState.WAITING):
            states[key] = t.state
    base_params = {p: encode_value(get_path(base_cfg, p, None)) for p in choices}
    waiting = 0
    for tr in trials:
        if tr.key in states:
            waiting += states[tr.key] == optuna.trial.TrialState.WAITING
            continue
        params = dict(base_params)
        params.update({p: encode_value(v) for p, v in tr.overrides.items()})
        study.enqueue_trial(params, user_attrs={"ofat_key": tr.key, "ofat_factor": tr.factor or "base"})
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


def run_study(
    spec: StudySpec,
    base_cfg: dict[str, Any],
    space: SearchSpace,
    evaluator: Evaluator,
    *,
    parent_run_id: str | None = None,
) -> StudyResult:
    """Run (or resume) a study and collect the thesis-shaped OFAT table or the Pareto front."""
    study = open_study(spec)
    choices = _choices(space, base_cfg)
    ofat_list = ofat_trials(space, base_cfg) if spec.mode == "ofat" else []

    def objective(trial: optuna.Trial) -> float | list[float]:
        params = {p: trial.suggest_categorical(p, c) for p, c in choices.items()}
        overrides = {p: decode_value(v) for p, v in params.items()
                     if v != encode_value(get_path(base_cfg, p, None))}
        cfg = apply_overrides(copy.deepcopy(base_cfg), overrides)
        name = trial.user_attrs.get("ofat_key") or f"trial-{trial.number}"
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
        values = _metrics_to_values(metrics, spec.objectives)
        return values if spec.mode == "nsga2" else values[0]

    if spec.mode == "ofat":
        n = _enqueue_ofat(study, ofat_list, choices, base_cfg)
    else:
        done = sum(t.state.is_finished() for t in study.get_trials(deepcopy=False))
        n = max(0, (spec.n_trials or 0) - done)
    if n:
        study.optimize(objective, n_trials=n, catch=())

    result = StudyResult(study, spec, _trial_rows(study), skipped_factors=list(space.skipped))
    if spec.mode == "ofat":
        scores: dict[str, tuple[float | None, float | None]] = {}
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,)):
            key = t.user_attrs.get("ofat_key")
            if key:
                scores[key] = (t.user_attrs.get(f"m:{RECALL}"), t.user_attrs.get(f"m:{HITS}"))
        result.table, result.chosen = ofat_table(space, base_cfg, scores)
    elif spec.mode == "nsga2":
        result.pareto = [_row(t) for t in study.best_trials]
    else:
        complete = study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if complete:
            result.best = _row(study.best_trial)
    return result


def _row(t: optuna.trial.FrozenTrial) -> dict[str, Any]:
    return {
        "number": t.number,
        "state": t.state.name,
        "name": t.user_attrs.get("ofat_key", f"trial-{t.number}"),
        "params": {p: decode_value(v) for p, v in t.params.items()},
        "values": list(t.values) if t.values else None,
        "metrics": {k[2:]: v for k, v in t.user_attrs.items() if k.startswith("m:")},
    }


def _trial_rows(study: optuna.Study) -> list[dict[str, Any]]:
    return [_row(t) for t in study.get_trials(deepcopy=False)]
