"""Equal-budget tuning of every LLM-free method: ``hublab tune-all``.

Every method gets the same Optuna study: TPE with a fixed seed, the same number of trials (the method's default
configuration is trial 0, inside the budget), objective MAP@10 at the comparison's output bound (20 triples per
question), measured on the 44-question reduced GV1 set only. The best trial's parameters are written to
``pipelines/tuned/<method>.yaml`` with the study's name, budget and date; the comparison
(:mod:`hublab.experiment.comparison.default_vs_tuned`) evaluates those files next to the defaults on other
questions and graphs.

All search spaces are checked before the first trial of the first study, so a typo in the tenth pipeline does not
surface after an hour of tuning. Studies live in the project's Optuna storage: rerunning the command resumes each
study and only runs the trials still missing (``--fresh`` restarts them).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.errors import InputError
from hublab.reports.tables import Column, markdown_table
from hublab.tuning._fair_method import best_within, study_name, tune_method, within_budget, write_tuned
from hublab.tuning._fair_types import (
    BOUND_PATH,
    DEFAULT_BOUND,
    DEFAULT_DATASET,
    DEFAULT_SEED,
    DEFAULT_TRIALS,
    OBJECTIVE,
    STUDY_PREFIX,
    MethodOutcome,
    MethodPlan,
    TuneAllRequest,
)

__all__ = ["BOUND_PATH", "COLUMNS", "DEFAULT_BOUND", "DEFAULT_DATASET", "DEFAULT_SEED", "DEFAULT_TRIALS", "OBJECTIVE",
           "STUDY_PREFIX", "MethodOutcome", "MethodPlan", "TuneAllRequest", "best_within", "markdown", "plan_methods",
           "study_name", "tune_all", "tune_many", "within_budget", "write_tuned"]


def plan_methods(pipelines: list[Path], *, n_trials: int, bound: int, shape: bool = False) -> list[MethodPlan]:
    """Load and check every pipeline and its search space (with ``shape``, its ``shape_space`` too); raise the first
    problem before any trial runs."""
    from hublab.pipeline.config import load_pipeline
    from hublab.retrievers.registry import get_retriever_class
    from hublab.tuning.space import get_path, pipeline_space, set_path

    if isinstance(n_trials, bool) or not isinstance(n_trials, int) or n_trials < 1:
        raise InputError(f"the budget must be at least 1 trial (got {n_trials!r})", field="n_trials")
    if bound < 1:
        raise InputError(f"the output bound must be at least 1 triple (got {bound!r})", field="bound")
    plans: list[MethodPlan] = []
    seen: dict[str, Path] = {}
    for path in pipelines:
        cfg = load_pipeline(path)
        if cfg.llm.get("backend", "none") != "none":
            raise InputError("not an LLM-free pipeline (llm.backend must be none for the equal-budget study)",
                             file=str(path), field="llm.backend")
        base = set_path(cfg.to_dict(), BOUND_PATH, bound)
        space = pipeline_space(cfg.search_space, cfg.shape_space, base, source=str(path), shape=shape)
        overrides: dict[str, Any] = {BOUND_PATH: bound}
        declared = get_retriever_class(cfg.retriever_type).declared_params()
        for f in space.factors:
            key = f.path.removeprefix("retriever.params.")
            if get_path(base, f.path, None) is None and key in declared and declared[key][1] not in (None, ...):
                overrides[f.path] = declared[key][1]
        if cfg.retriever_type in seen:
            raise InputError(f"method {cfg.retriever_type!r} is already tuned from {seen[cfg.retriever_type]}",
                             file=str(path), field="retriever.type")
        seen[cfg.retriever_type] = path
        plans.append(MethodPlan(Path(path), cfg.name, cfg.retriever_type, [f.path for f in space.factors],
                                overrides))
    return plans


def tune_all(req: TuneAllRequest, *, settings: Settings | None = None, evaluator: Any = None,
             on_method: Callable[[MethodOutcome], Any] | None = None) -> list[MethodOutcome]:
    """Tune every pipeline with the same budget; write one tuned file per method; return what happened (in the
    order of ``req.pipelines``, whatever order the studies finish in).

    ``req.jobs`` > 1 runs that many studies at once, each in its own process (spawned: a forked copy of a
    process with threads can hang). A study's trials stay sequential and seeded, so every study, tuned file and
    score is the one a single job gives; only the trials' durations grow with the sharing. Most of a trial is
    single-threaded Python, so two studies keep both of CI's 2 cores busy. A custom ``evaluator`` (tests) runs
    in this process, one study after another."""
    return tune_many([req], settings=settings, evaluator=evaluator,
                     on_method=None if on_method is None else (lambda _i, o: on_method(o)))[0]


def tune_many(reqs: list[TuneAllRequest], *, settings: Settings | None = None, evaluator: Any = None,
              on_method: Callable[[int, MethodOutcome], Any] | None = None) -> list[list[MethodOutcome]]:
    """:func:`tune_all` for several requests (the folds of a comparison) whose studies share one pool of
    ``jobs`` processes (the first request's ``jobs``), a method's studies one after another in one process (its
    Milvus Lite index opens in one process only): each process imports HubLab and loads its models once, not once
    per request, and no request waits for another's slowest study. Returns each request's outcomes in the
    order of its pipelines; ``on_method(i, outcome)`` hears of each study of request ``i`` as it ends. Every request
    is checked before any study starts."""
    from hublab.config import settings as load_settings

    st = settings or load_settings()
    work = [(i, plan) for i, req in enumerate(reqs) for plan in _checked_plans(req)]
    # one group per method, its requests' studies in request order: one process holds a method's index
    groups: dict[str, list[int]] = {}
    for k, (_i, plan) in enumerate(work):
        groups.setdefault(plan.method, []).append(k)
    jobs = min(max(1, reqs[0].jobs if reqs else 1), len(groups) or 1)
    outcomes: list[list[MethodOutcome]] = [[] for _ in reqs]
    if jobs == 1 or evaluator is not None:
        for i, plan in work:
            outcomes[i].append(tune_method(plan, reqs[i], st, evaluator))
            if on_method is not None:
                on_method(i, outcomes[i][-1])
        return outcomes
    from hublab.tuning._fair_jobs import run_jobs

    order = list(groups.values())
    done = run_jobs([[(work[k][1], reqs[work[k][0]]) for k in ks] for ks in order], st, jobs,
                    None if on_method is None else (lambda g, j, o: on_method(work[order[g][j]][0], o)))
    by_position = {k: o for ks, outs in zip(order, done, strict=True) for k, o in zip(ks, outs, strict=True)}
    for k, (i, _plan) in enumerate(work):
        outcomes[i].append(by_position[k])
    return outcomes


def _checked_plans(req: TuneAllRequest) -> list[MethodPlan]:
    """The request's method plans, or InputError for an unknown pruner or a ``--hub-type`` no method takes."""
    plans = plan_methods(req.pipelines, n_trials=req.n_trials, bound=req.bound, shape=req.shape_space)
    if req.pruner not in ("wilcoxon", "none"):
        raise InputError(f"unknown pruner {req.pruner!r}; expected wilcoxon or none", field="--pruner")
    if req.hub_types:
        from hublab.pipeline.hub_types import has_hub_types

        if not any(has_hub_types(p.method) for p in plans):
            raise InputError("--hub-type applies to methods with hub types (HubLink); none of "
                             f"{[p.method for p in plans]} has them", field="--hub-type")
    return plans


def _shown(v: Any) -> Any:
    return round(v, 4) if isinstance(v, float) else v


def _fmt(v: float | None) -> str:
    return "–" if v is None else f"{v:.4f}"


def _chosen(o: MethodOutcome) -> str:
    return ", ".join(f"{k.rsplit('.', 1)[-1]}={_shown(v)}" for k, v in sorted(o.best_params.items())) or (
        "flat study: every trial scored the same" if o.flat else "default kept (no trial scored higher)")


#: one row per method: default and best objective on the tuning set, the chosen values
COLUMNS = (
    Column("method", lambda o: o.plan.method),
    Column("study", lambda o: o.study),
    Column("trials", lambda o: str(o.trials)),
    Column(f"{OBJECTIVE} default", lambda o: _fmt(o.default_value)),
    Column(f"{OBJECTIVE} tuned", lambda o: _fmt(o.best_value)),
    Column("chosen", _chosen),
)


def markdown(outcomes: list[MethodOutcome]) -> str:
    """One line per method: default and best objective on the tuning set, the chosen values (floats to 4 decimals;
    the tuned file keeps them exact). Durations are the machine's, not the study's: they go to the benchmark
    (``reports/bench/tune_all.json``), so this committed table is the same on every machine."""
    return markdown_table(COLUMNS, outcomes) + "\n"
