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

import contextlib
import hashlib
import os
import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.config import Settings
from hublab.errors import InputError
from hublab.evaluation import names
from hublab.reports.tables import Column, markdown_table

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
    outcomes: list[MethodOutcome] = field(default_factory=list)


def study_name(plan: MethodPlan, dataset: str, graph: str | None = None, settings: Settings | None = None, *,
               shape: bool = False) -> str:
    """``fair-<pipeline>[-shape]-<questions>[-on-<graph>]``: also an MLflow experiment's name, so a dataset file is
    named by its stem and content (a path is no name, and a changed file is a new study, never a resumed one), a
    graph other than the dataset's own by its source name (which carries the file's or endpoint's content hash), and
    a study over the wider space (``shape``) apart from one without it (a study never resumes another space)."""
    from hublab.datasets.catalog import is_dataset_file

    questions = dataset
    if is_dataset_file(dataset):
        path = Path(dataset)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()[:12] if path.is_file() else "missing"
        questions = f"{_slug(path.stem)}-{digest}"
    name = f"{STUDY_PREFIX}-{plan.name}{'-shape' if shape else ''}-{questions}"
    if graph is not None and not _is_datasets_graph(graph, dataset, settings):
        from hublab.pipeline.resources import graph_source

        name += f"-on-{graph_source(graph, settings).name}"
    return name


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)[:60] or "questions"


def _is_datasets_graph(graph: str, dataset: str, settings: Settings | None) -> bool:
    """Whether ``graph`` is the built-in dataset's own graph (then the study keeps its historic name)."""
    from hublab.config import settings as load_settings
    from hublab.datasets.catalog import is_dataset_file

    if is_dataset_file(dataset):
        return False
    try:
        return (settings or load_settings()).graph_for_dataset(dataset) == graph
    except Exception:  # noqa: BLE001 - an unknown dataset is refused by the run with its own message
        return False


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


def within_budget(result: Any, n_trials: int) -> list[dict[str, Any]]:
    """The finished trials among the study's first ``n_trials``: a seeded TPE study is sequential, so its first N
    trials are exactly what an N-trial study runs, and a study once run longer is still judged at the common
    budget (the same budget for every method)."""
    return [t for t in result.trials if t["number"] < n_trials and t["state"] == "COMPLETE" and t["values"]]


def best_within(trials: list[dict[str, Any]]) -> dict[str, Any] | None:
    """Highest objective (rounded, so float noise never decides); ties go to the earlier trial (trial 0 = the
    default)."""
    return min(trials, key=lambda t: (-round(float(t["values"][0]), 10), t["number"]), default=None)


def _default_value(result: Any) -> float | None:
    """The base configuration's score: trial 0 (enqueued) when it finished."""
    for t in result.trials:
        if t["number"] == 0 and t["state"] == "COMPLETE" and t["values"]:
            return float(t["values"][0])
    return None


def _rel(path: Path, root: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _portable_storage(url: str | None, root: Path) -> str:
    """The storage URL as written into a git-tracked file: the project's own sqlite file relative to the project,
    credentials redacted."""
    from hublab.redact import scrub

    if not url:
        return "in-memory"
    prefix = "sqlite:///"
    if url.startswith(prefix):
        return prefix + _rel(Path(url[len(prefix):]), root)
    return scrub(url)


def write_tuned(plan: MethodPlan, best_params: dict[str, Any], meta: dict[str, Any], out_dir: Path) -> Path:
    """``<out_dir>/<method>.yaml``: the default pipeline with the output bound and the best trial's values, and
    a ``tuned`` section saying where they came from. Written atomically."""
    import yaml

    from hublab.pipeline.config import load_pipeline
    from hublab.tuning.space import set_path

    cfg = load_pipeline(plan.pipeline)
    data = cfg.to_dict()
    for path, value in sorted({**plan.base_overrides, **best_params}.items()):
        data = set_path(data, path, value)
    data["name"] = f"{cfg.name}_tuned"
    data = {"name": data.pop("name"), "description": f"{cfg.name} with parameters chosen by study "
            f"{meta['study']} ({meta['sampler']}, {meta['n_trials']} trials, {meta['objective']} on "
            f"{meta['dataset']} at {meta['bound']} triples/question)", **data, "tuned": meta}
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{plan.method}.yaml"
    header = ("# Written by `hublab tune-all`: do not edit by hand, rerun the study instead.\n"
              f"# Default: {meta['default_pipeline']}; tuned factors: {', '.join(plan.factors)}.\n")
    write_text_atomic(target, header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    load_pipeline(target)  # the file must load as a pipeline (fails loudly here, not in the comparison)
    return target


def tune_all(req: TuneAllRequest, *, settings: Settings | None = None, evaluator: Any = None,
             on_method: Any = None) -> list[MethodOutcome]:
    """Tune every pipeline with the same budget; write one tuned file per method; return what happened (in the
    order of ``req.pipelines``, whatever order the studies finish in).

    ``req.jobs`` > 1 runs that many studies at once, each in its own process (spawned: a forked copy of a
    process with threads can hang). A study's trials stay sequential and seeded, so every study, tuned file and
    score is the one a single job gives; only the trials' durations grow with the sharing. Most of a trial is
    single-threaded Python, so two studies keep both of CI's 2 cores busy. A custom ``evaluator`` (tests) runs
    in this process, one study after another."""
    from hublab.config import settings as load_settings

    st = settings or load_settings()
    plans = plan_methods(req.pipelines, n_trials=req.n_trials, bound=req.bound, shape=req.shape_space)
    if req.pruner not in ("wilcoxon", "none"):
        raise InputError(f"unknown pruner {req.pruner!r}; expected wilcoxon or none", field="--pruner")
    if req.hub_types:
        from hublab.pipeline.hub_types import has_hub_types

        if not any(has_hub_types(p.method) for p in plans):
            raise InputError("--hub-type applies to methods with hub types (HubLink); none of "
                             f"{[p.method for p in plans]} has them", field="--hub-type")
    jobs = min(max(1, req.jobs), len(plans))
    if jobs == 1 or evaluator is not None:
        outcomes = []
        for plan in plans:
            outcomes.append(_tune_method(plan, req, st, evaluator))
            if on_method is not None:
                on_method(outcomes[-1])
        return outcomes
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait

    quiet = replace(req, progress=False, outcomes=[])  # one process's progress bar, not several interleaved
    with ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"),
                             initializer=_job_process_init) as pool:
        futures = {pool.submit(_job, plan, quiet, st): i for i, plan in enumerate(plans)}
        pending = set(futures)
        try:
            while pending:  # each study is reported when it ends (FIRST_EXCEPTION would wait for all of them)
                done, pending = wait(pending, return_when=FIRST_COMPLETED)
                for fut in sorted(done, key=futures.__getitem__):
                    if fut.exception() is not None:
                        for other in pending:
                            other.cancel()  # studies not started yet; running ones finish (their trials are saved)
                        raise fut.exception()  # type: ignore[misc]
                    if on_method is not None:
                        on_method(fut.result())
        except KeyboardInterrupt:  # Ctrl-C, SIGTERM, SIGHUP: the job processes end too, each marking its trial
            _stop_jobs(pool)
            raise
    return [fut.result() for fut in sorted(futures, key=futures.__getitem__)]


def _job(plan: MethodPlan, req: TuneAllRequest, st: Settings) -> MethodOutcome:
    """One study in a job process. Interrupted (its parent's SIGTERM, or its parent's death), the study's own
    handlers end its trial and runs first; then the process exits, instead of handing the interrupt back as the
    task's result and waiting for more work from a parent that may be gone."""
    from hublab.signals import busy

    try:
        with busy():
            return _tune_method(plan, req, st, None)
    except KeyboardInterrupt as exc:
        from hublab.signals import describe

        os._exit(describe(exc)[1])


def _job_process_init() -> None:
    """A job process handles SIGTERM/SIGHUP as Ctrl-C (its running trial and study run end KILLED, not RUNNING), and
    on Linux is killed when the process that started it dies, even by ``kill -9`` (it held a Milvus Lite index for 17
    minutes after its parent was gone). SIGKILL, not SIGTERM: a process busy in C code (a model load, a locked
    database) runs no Python signal handler until it returns, and under load that was over a minute; a study whose
    worker vanished is recovered by its heartbeats (the trial failed and retried on the next start)."""
    import signal
    import sys

    from hublab.signals import exit_when_idle, interrupt_on_termination

    interrupt_on_termination()
    exit_when_idle()  # a job process still waiting for its study, or done with it, has nothing to mark
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(pr_set_pdeathsig, signal.SIGKILL)


def _stop_jobs(pool: Any, timeout_s: float = 45.0) -> None:
    """SIGTERM to every job process, a bounded wait for each to mark its trial and exit, then SIGKILL to any still
    running (busy in C code, it never ran its handler): the command ends, and leaves no process behind."""
    import signal

    procs = list(getattr(pool, "_processes", {}).values())  # noqa: SLF001 - the executor has no public handle
    for proc in procs:
        if proc.is_alive():
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    for proc in procs:
        proc.join(max(0.0, deadline - time.monotonic()))
    for proc in procs:
        if proc.is_alive():
            import sys

            print(f"job process {proc.pid} did not stop within {timeout_s:.0f} s: killed; its running trial is failed "
                  "and retried when the study next starts (heartbeats)", file=sys.stderr)
            with contextlib.suppress(OSError):
                os.kill(proc.pid, signal.SIGKILL)
            proc.join(5.0)
    pool.shutdown(wait=False, cancel_futures=True)


def _tune_method(plan: MethodPlan, req: TuneAllRequest, st: Settings, evaluator: Any) -> MethodOutcome:
    """One method's study (run or resumed) and its tuned file."""
    from hublab.tuning.orchestrate import TuneRequest, run_tune

    out_dir = req.out_dir or (st.root / "pipelines" / "tuned")
    reports = req.reports_dir or (st.root / "reports" / "tune" / STUDY_PREFIX)
    # the tuning graph's hub types are part of the default trial 0 runs and of the tuned file it writes
    plan = replace(plan, base_overrides={**plan.base_overrides, **_hub_type_overrides(plan, req, st)})
    name = study_name(plan, req.dataset, req.graph, st, shape=req.shape_space)
    t0 = time.perf_counter()
    outcome = run_tune(TuneRequest(
        pipeline=plan.pipeline, study=name, mode="tpe", dataset=req.dataset, graph=req.graph,
        storage=req.storage, n_trials=req.n_trials, objectives=[OBJECTIVE], limit=req.limit, seed=req.seed,
        carbon=False, output_dir=reports / plan.name, progress=req.progress, fresh=req.fresh,
        base_overrides=plan.base_overrides, enqueue_base=True, prune=req.pruner != "none",
        trial_artifacts=False, shape_space=req.shape_space, hub_types=_given_hub_types(plan, req)), settings=st,
        evaluator=evaluator)
    res = outcome.result
    # the study's own time (its trials' durations within the budget): a resumed study keeps what it cost
    wall = _trials_s(res.study, req.n_trials) or (time.perf_counter() - t0)
    trials = within_budget(res, req.n_trials)
    best = best_within(trials)
    if best is None:
        raise InputError(f"study {name}: no trial finished; see the MLflow experiment tune-{name}",
                         file=str(plan.pipeline))
    values = [float(t["values"][0]) for t in trials]
    default = _default_value(res)
    best_value = float(best["values"][0])
    # ties keep the default: a tuned file only differs from the default when a trial scored higher
    best_params = best["params"] if default is None or round(best_value, 10) > round(default, 10) else {}
    meta = {"study": name, "storage": _portable_storage(outcome.spec.storage, st.root),
            "sampler": f"TPE (seed {req.seed})", "n_trials": req.n_trials, "trials_finished": len(values),
            "objective": OBJECTIVE, "dataset": _rel(Path(req.dataset), st.root) if Path(req.dataset).is_file()
            else req.dataset, "graph": _graph_name(req, st), "bound": req.bound,
            "default_pipeline": _rel(plan.pipeline, st.root),
            "default_value": None if default is None else round(default, 4),
            "best_value": round(best_value, 4), "best_trial": int(best["number"]),
            "flat": len({round(v, 6) for v in values}) <= 1,
            "mlflow_experiment": outcome.experiment,
            "params": {k: v for k, v in sorted(best_params.items())}}
    target = write_tuned(plan, best_params, meta, out_dir)
    pruned = sum(1 for t in res.trials if t["number"] < req.n_trials and t["state"] == "PRUNED")
    return MethodOutcome(plan, name, target, default, best_value, best_params, len(values), wall, meta["flat"],
                         reuse=dict(res.reuse), pruned=pruned)


def _graph_name(req: TuneAllRequest, st: Settings) -> str:
    """The tuning graph as a tuned file names it: a built-in's name, a user's file or endpoint by its source name
    (content-hashed; an endpoint's credentials never written)."""
    from hublab.pipeline.resources import graph_source

    return graph_source(req.graph, st).name if req.graph else st.graph_for_dataset(req.dataset)


def _given_hub_types(plan: MethodPlan, req: TuneAllRequest) -> list[str]:
    """``--hub-type`` for a method that takes hub types; none for BM25 and the others (it is HubLink's)."""
    from hublab.pipeline.hub_types import has_hub_types

    return list(req.hub_types) if has_hub_types(plan.method) else []


def _hub_type_overrides(plan: MethodPlan, req: TuneAllRequest, st: Settings) -> dict[str, Any]:
    """HubLink's ``hub_types`` on the tuning graph, decided as ``hublab run`` decides it (``--hub-type`` >
    the graph's declared hub types > the pipeline's): a user's graph has no ORKG papers to be hubs."""
    from hublab.pipeline.hub_types import hub_types_for
    from hublab.pipeline.resources import graph_source

    graph = req.graph or st.graph_for_dataset(req.dataset)
    wanted = hub_types_for(plan.method, _given_hub_types(plan, req), graph_source(graph, st))
    return {"retriever.params.hub_types": wanted} if wanted else {}


def _trials_s(study: Any, n_trials: int) -> float:
    return sum(t.duration.total_seconds() for t in study.get_trials(deepcopy=False)
               if t.number < n_trials and t.duration is not None)


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
