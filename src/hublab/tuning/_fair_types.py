"""The equal-budget study's settings and records: what ``hublab tune-all`` is asked, what it tunes per method and
what each method's study gave. Their own module so that the orchestration, the job processes and the per-method
study share them without importing one another."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.evaluation import names

DEFAULT_TRIALS = 40
DEFAULT_SEED = 0
DEFAULT_BOUND = 20
DEFAULT_DATASET = "reduced_gv1"
OBJECTIVE = names.MAP_AT_10
BOUND_PATH = "retriever.params.max_output_triples"
STUDY_PREFIX = "fair"


@dataclass
class MethodPlan:
    pipeline: Path
    name: str  # pipeline name (hublink_local, bm25, ...)
    method: str  # retriever type: the tuned file's name
    factors: list[str]
    # the base configuration as run: the output bound, and the retriever's declared default of every factor the
    # YAML leaves out (so trial 0 is exactly the default, not a sampled value)
    base_overrides: dict[str, Any] = field(default_factory=dict)


@dataclass
class MethodOutcome:
    plan: MethodPlan
    study: str
    tuned_file: Path
    default_value: float | None
    best_value: float | None
    best_params: dict[str, Any]
    trials: int
    wall_s: float
    flat: bool  # every finished trial scored the same
    reuse: dict[str, int] = field(default_factory=dict)  # this run's dense index builds and texts embedded
    pruned: int = 0  # trials within the budget stopped early (pruned)


@dataclass
class TuneAllRequest:
    pipelines: list[Path]
    n_trials: int = DEFAULT_TRIALS
    seed: int = DEFAULT_SEED
    dataset: str = DEFAULT_DATASET
    bound: int = DEFAULT_BOUND
    out_dir: Path | None = None  # default pipelines/tuned
    storage: str | None = None
    fresh: bool = False
    limit: int | None = None  # tests only: the first N questions
    progress: bool = True
    reports_dir: Path | None = None  # per-study outputs (default reports/tune/fair)
    graph: str | None = None  # default: the dataset's graph (a built-in set); a user's file or endpoint otherwise
    hub_types: list[str] = field(default_factory=list)  # HubLink's hub types on a user's graph (--hub-type)
    jobs: int = 1  # studies run at once, each in its own process (tune_all)
    #: ``wilcoxon``: a trial stops once a paired test over the questions answered so far shows it worse than the
    #: study's best (``hublab.tuning.study_open``); ``none``: every trial answers every question
    pruner: str = "wilcoxon"
    #: also tune each pipeline's ``shape_space`` (the factors whose best value depends on the graph's shape): the
    #: comparison on a user's graph does; the thesis's study on reduced GV1 keeps its own space
    shape_space: bool = False
    #: each study's charts (``hublab.tuning.report``): a comparison's many per-fold studies go without
    study_plots: bool = True
    outcomes: list[MethodOutcome] = field(default_factory=list)
