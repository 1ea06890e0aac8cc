"""One method's equal-budget study and what it leaves: the study's name, its run (or resume), the best trial within
the common budget, and the tuned pipeline file written from it. It runs alike in ``tune-all``'s own process and in
a job process."""

from __future__ import annotations

import hashlib
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.config import Settings
from hublab.errors import InputError
from hublab.tuning._fair_types import OBJECTIVE, STUDY_PREFIX, MethodOutcome, MethodPlan, TuneAllRequest


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


def tune_method(plan: MethodPlan, req: TuneAllRequest, st: Settings, evaluator: Any) -> MethodOutcome:
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
        trial_artifacts=False, study_plots=req.study_plots, shape_space=req.shape_space,
        hub_types=_given_hub_types(plan, req)), settings=st,
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
