"""What a study is and what it gives back: :class:`StudySpec` (name, mode, objectives, storage, workers' timing),
the :class:`TrialRequest` an :class:`Evaluator` answers, the :class:`StudyResult`, and which metrics are minimised.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import optuna

from hublab.errors import InputError
from hublab.evaluation import names
from hublab.tuning.ofat import FactorRow
from hublab.tuning.storage import DEFAULT_GRACE_S, DEFAULT_HEARTBEAT_S

# Metrics where smaller is better (everything else is maximised).
MINIMIZE = {"runtime", "llm_tokens", "emissions", "energy", "runtime_s", "total_energy_consumption"}
RECALL = names.RECALL
HITS = names.HITS_AT_10


PRUNERS = ("wilcoxon", "median")
#: what a study may bound, per question: seconds (the run's mean runtime) and the LLM's cost in USD
LIMITED = {"s_per_question": "--max-s-per-question", "cost_per_question": "--max-cost-per-question"}


def per_question(metrics: dict[str, float]) -> dict[str, float]:
    """A trial's run metrics as the bounded quantities (``LIMITED``); an LLM-free run costs nothing."""
    n = max(1.0, float(metrics.get(names.N_QUESTIONS, 1.0) or 1.0))
    return {"s_per_question": float(metrics.get(names.RUNTIME, 0.0) or 0.0),
            "cost_per_question": float(metrics.get("llm_cost", 0.0) or 0.0) / n}


def constraint_values(metrics: dict[str, float], limits: dict[str, float]) -> list[float]:
    """Optuna's constraint values (feasible when every one is <= 0): each measured value minus its bound, in the
    order of ``LIMITED``."""
    measured = per_question(metrics)
    return [measured[m] - float(limits[m]) for m in LIMITED if m in limits]


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
    #: tpe with ``prune``: ``wilcoxon`` (a paired signed-rank test over the questions answered so far against the best
    #: trial, each question reported as it ends) or ``median`` (the partial mean every 10 questions against the
    #: median of earlier trials)
    pruner: str = "wilcoxon"
    #: upper bounds on per-question means, as Optuna constraints: ``{"runtime": s, "llm_cost": USD}``; a trial over
    #: one is infeasible (never chosen; TPE learns to avoid it)
    limits: dict[str, float] = field(default_factory=dict)
    heartbeat_interval: int = DEFAULT_HEARTBEAT_S
    grace_period: int | None = DEFAULT_GRACE_S
    max_retry: int = 1  # retries of a trial whose worker died (its heartbeat stopped)
    poll_interval: float | None = None  # wait between looks at other workers' trials (default: heartbeat)
    # what the trials are measured on (base pipeline without its search space, graph, dataset, question limit):
    # a study resumed or joined on another one would mix incomparable trials (docs/tuning.md)
    identity: str | None = None
    # the search space (``space.space_record``): a study joined or resumed with another space is refused
    space: dict[str, Any] | None = None
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
        if self.pruner not in PRUNERS:
            raise InputError(f"unknown pruner {self.pruner!r}; expected one of {sorted(PRUNERS)}", field="pruner")
        for metric, bound in self.limits.items():
            if metric not in LIMITED or not isinstance(bound, int | float) or bound <= 0:
                raise InputError(f"a limit must be a positive number on one of {sorted(LIMITED)}, got {metric}="
                                 f"{bound!r}", field="limits")
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
    #: what this worker's trials built and reused (:mod:`hublab.tuning.reuse`): dense index builds, texts embedded
    reuse: dict[str, int] = field(default_factory=dict)


ProgressFn = Callable[[int, int], None]  # (finished trials of the study, planned)
