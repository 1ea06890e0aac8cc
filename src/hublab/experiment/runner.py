"""The experiment runner: a pipeline over a dataset → per-question predictions → thesis metrics → one
MLflow run. Per-question results are checkpointed as they finish, so a killed run resumes where it
stopped (same MLflow run) without recomputing finished questions.

Reliability rules (docs/reliability.md): a run is identified by everything that changes its results
(``identity.py``); partial runs say so everywhere; the run lock is taken and the pipeline built before MLflow
or the checkpoint are touched; degradation (LLM errors, retries, fall-backs, over-budget questions) is counted
per question and per run, and a run whose failure share exceeds ``evaluation.max_failure_share`` ends FAILED
(checkpoint kept for resume) with ``RunSummary.exit_code`` 1.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab import observability
from hublab.config import Settings
from hublab.config import settings as load_settings
from hublab.datasets.model import QAPair
from hublab.errors import InputError, ServiceUnavailable
from hublab.evaluation.names import KEY_METRICS, slice_metric  # noqa: F401 (KEY_METRICS re-exported)
from hublab.experiment.aggregate import (  # noqa: F401 (re-exported)
    SLICE_FIELDS,
    _retrieval_metrics,
    aggregate_records,
    is_degraded,
    slice_metrics,
)
from hublab.experiment.checkpoint import Checkpoint, RunLock, RunLocked  # noqa: F401 (re-exported)
from hublab.experiment.identity import RunIdentity, run_identity
from hublab.pipeline.config import PipelineConfig, flatten

log = logging.getLogger(__name__)
OnQuestion = Callable[[int, int, dict[str, float]], bool]
DEFAULT_MAX_FAILURE_SHARE = 0.25


@dataclass
class RunSummary:
    metrics: dict[str, float]
    run_id: str | None
    config_hash: str
    n_questions: int
    runtime_s: float
    per_question: list[dict[str, Any]] = field(default_factory=list)
    stopped: bool = False
    output_dir: str = ""
    skipped_metrics: dict[str, str] = field(default_factory=dict)
    identity: dict[str, Any] = field(default_factory=dict)
    scope: str = "full"
    failed: bool = False
    failure_reason: str = ""

    @property
    def full(self) -> bool:
        return self.scope == "full"

    @property
    def exit_code(self) -> int:
        """What ``hublab run`` should exit with: 1 for a FAILED run (failure share or run budget exceeded)."""
        return 1 if self.failed else 0


def _key(i: int, p: QAPair) -> str:
    return f"{i}:{p.uid}"


def _generation_metrics(cfg: PipelineConfig, records: list[dict[str, Any]], settings: Settings) -> dict[str, str]:
    """Fill generation metrics into records that lack them; returns {metric: why skipped}."""
    wanted = list(cfg.evaluation.get("generation_metrics") or [])
    if not wanted:
        return {}
    todo = [r for r in records if not r.get("generation_done")]
    if not todo:
        return {}
    from hublab.evaluation.generation import GenerationEvaluator

    judge = None
    judge_cfg = cfg.evaluation.get("judge_llm")
    if judge_cfg:
        from hublab.llm.factory import build_llm

        judge = build_llm(judge_cfg, cache_dir=settings.cache_dir())
    ragas_cfg = cfg.evaluation.get("ragas_llm") or {}
    ev = GenerationEvaluator(
        wanted, llm=judge, ragas_base_url=ragas_cfg.get("base_url"), ragas_model=ragas_cfg.get("model"),
        bertscore_model=cfg.evaluation.get("bertscore_model"),
        bertscore_layers=int(cfg.evaluation.get("bertscore_layers", 6)),
    )
    rows = [{"question": r["question"], "generated_answer": r["generated_answer"],
             "golden_answer": r["golden_answer"], "retrieved_context": r["retrieved_context"]} for r in todo]
    results = ev.evaluate(rows)
    for r, m in zip(todo, results, strict=True):
        r.setdefault("metrics", {}).update(m)
        r["generation_done"] = True
    return dict(getattr(ev, "skipped", {}) or {})


def run_experiment(
    cfg: PipelineConfig,
    graph: str,
    dataset: str,
    *,
    limit: int | None = None,
    experiment: str | None = None,
    parent_run_id: str | None = None,
    nested: bool = False,
    run_name: str | None = None,
    log_artifacts: bool = True,
    on_question: OnQuestion | None = None,
    settings: Settings | None = None,
    resume: bool = True,
    progress: bool = True,
    track_carbon: bool = True,
    question_timeout_s: float | None = None,
    run_timeout_s: float | None = None,
    max_failure_share: float | None = None,
    trace: bool = True,
) -> RunSummary:
    st = settings or load_settings()
    from hublab.datasets.catalog import check_golden_ids, is_dataset_file, load_dataset
    from hublab.pipeline.validate import name_problem

    # the experiment names a folder (mlruns/artifacts/<experiment>); run names are labels only (never a path)
    why = name_problem(experiment, "experiment name") if experiment is not None else None
    if why:
        raise InputError(why, field="--experiment")

    pairs = load_dataset(st, dataset)  # a built-in name, or a user's KGQA file (.csv in the thesis format, .jsonl)
    if is_dataset_file(dataset):
        from hublab.pipeline.resources import load_graph

        dataset_file = Path(dataset)
        check_golden_ids(pairs, load_graph(graph, st), dataset=dataset, graph_name=graph)  # by content
    else:
        dataset_file = st.dataset_file(dataset)
        expected_graph = st.graph_for_dataset(dataset)
        if expected_graph != graph:
            raise InputError(f"dataset {dataset!r} refers to graph {expected_graph!r}, not {graph!r}: golden triple "
                             "ids would not match", field="--graph")
    n_total = len(pairs)
    all_pairs = pairs
    if limit is not None:
        if limit <= 0:
            raise InputError("--limit must be positive", field="--limit")
        pairs = pairs[:limit]
    k = int(cfg.evaluation.get("k", 10))
    budgets = _budgets(cfg, question_timeout_s, run_timeout_s, max_failure_share)
    chash = cfg.config_hash(graph, dataset)
    exp_name = experiment or str(st.section("tracking").get("experiment", "hublab"))
    ident: RunIdentity = run_identity(chash, st.graph_file(graph), dataset_file, graph=graph, dataset=dataset,
                                      limit=limit, n_questions=len(pairs), n_total=n_total, experiment=exp_name)
    run_dir = st.root / "outputs" / "runs" / ident.run_id
    ckpt = Checkpoint(run_dir)
    # 1. the lock, before anything shared is touched: a second process on this run changes nothing
    new_dir = not run_dir.exists()
    lock = RunLock(run_dir).acquire()
    try:
        return _run_locked(cfg, graph, dataset, pairs, k, budgets, ident, ckpt, st, exp_name, chash,
                           parent_run_id=parent_run_id, nested=nested, run_name=run_name, log_artifacts=log_artifacts,
                           on_question=on_question, resume=resume, progress=progress, track_carbon=track_carbon,
                           trace=trace, dataset_input=(all_pairs, dataset_file))
    finally:
        if new_dir:  # while still holding the lock: nobody else can be using the folder
            _remove_if_only_lock(run_dir)
        lock.release()


def _remove_if_only_lock(run_dir: Path) -> None:
    """A run refused before its checkpoint or MLflow run existed leaves nothing behind (not a ``.lock``-only dir)."""
    try:
        if [p.name for p in run_dir.iterdir()] == [".lock"]:
            (run_dir / ".lock").unlink()
            run_dir.rmdir()
    except OSError:
        pass


def _budgets(cfg: PipelineConfig, question_timeout_s: float | None, run_timeout_s: float | None,
             max_failure_share: float | None) -> dict[str, float | None]:
    ev = cfg.evaluation

    def pick(arg: float | None, key: str, default: float | None) -> float | None:
        v = arg if arg is not None else ev.get(key, default)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0 \
                or (key == "max_failure_share" and v > 1):
            raise InputError(f"expected a finite non-negative number{' <= 1' if key == 'max_failure_share' else ''}"
                             f", got {v!r}", field=f"evaluation.{key}")
        return float(v)

    return {"question_timeout_s": pick(question_timeout_s, "question_timeout_s", None),
            "run_timeout_s": pick(run_timeout_s, "run_timeout_s", None),
            "max_failure_share": pick(max_failure_share, "max_failure_share", DEFAULT_MAX_FAILURE_SHARE)}


def _mark_killed_if_stale(run_id: str) -> bool:
    """A run left RUNNING by a killed process (we hold its lock, so nobody is running it): mark it KILLED."""
    from mlflow.tracking import MlflowClient

    client = MlflowClient()
    run = client.get_run(run_id)
    if run.info.status == "RUNNING":
        client.set_terminated(run_id, status="KILLED")
        client.set_tag(run_id, "hublab.killed_detected", "left RUNNING by a killed process; marked KILLED, resumed")
        return True
    return False


def _run_locked(cfg: PipelineConfig, graph: str, dataset: str, pairs: list[QAPair], k: int,
                budgets: dict[str, float | None], ident: RunIdentity, ckpt: Checkpoint, st: Settings, exp_name: str,
                chash: str, *, parent_run_id: str | None, nested: bool, run_name: str | None, log_artifacts: bool,
                on_question: OnQuestion | None, resume: bool, progress: bool, track_carbon: bool,
                trace: bool = True, dataset_input: tuple[list[QAPair], Path] | None = None) -> RunSummary:
    import mlflow

    from hublab.tracking import mlflow_log, run_inputs, traces

    done = ckpt.load() if resume else {}
    # questions that ended in an error are retried on resume (an error is not a result)
    done = {key: r for key, r in done.items() if not r.get("error")}
    pending = [(i, p) for i, p in enumerate(pairs) if _key(i, p) not in done]
    # 2. everything that can be refused by another process (Milvus Lite file lock) or by bad inputs, before
    #    MLflow and the checkpoint are touched
    pipeline = None
    if pending:
        from hublab.pipeline.pipeline import build_pipeline

        pipeline = build_pipeline(cfg, graph, st)
        pipeline.retriever.ensure_ready()  # a partial index is resumed (or refused) before any question runs
    if not resume:
        ckpt.reset()
    state = ckpt.state()
    exp_id = mlflow_log.setup(st.root, exp_name)
    run_id = state.get("run_id") if resume else None
    killed = False
    if run_id:
        try:
            killed = _mark_killed_if_stale(run_id)
        except Exception:
            run_id = None
    flat = flatten(cfg.to_dict())
    secrets = mlflow_log.secret_values(mlflow_log.env_names_in(flat))
    name = run_name or f"{cfg.name}·{graph}·{dataset}"
    if not ident.full:
        name = f"{name} [{ident.scope}]"
    t_start = time.perf_counter()
    stopped = budget_hit = False
    records: list[dict[str, Any]] = []
    run = mlflow.start_run(run_id=run_id, experiment_id=None if run_id else exp_id, run_name=None if run_id else name,
                           nested=nested, parent_run_id=parent_run_id)
    try:
        if not run_id:
            ckpt.save_state({"run_id": run.info.run_id, "identity": ident.as_dict()})
            params = mlflow_log.safe_params(flat, secrets)
            params.update({"graph": graph, "dataset": dataset, "config_hash": chash, "limit": str(ident.limit),
                           "run_identity": ident.run_id})
            mlflow.log_params(params)
            if dataset_input is not None:
                _best_effort("logging the dataset input", run_inputs.log_dataset_input, dataset_input[0], dataset,
                             dataset_input[1], scope=ident.scope)
        embedder = getattr(pipeline.retriever.resources.embedder, "name", None) if pipeline is not None else None
        tags = {"hublab.retriever": cfg.retriever_type, "hublab.pipeline": cfg.name, **ident.tags(),
                **run_inputs.run_tags(cfg, graph, dataset, embedder)}
        if killed:
            tags["hublab.resumed_after_kill"] = "true"
        mlflow.set_tags(mlflow_log.safe_tags(tags, secrets))
        if pipeline is not None and _has_llm(pipeline):  # the prompt versions this run's LLM steps send
            from hublab.tracking.prompt_registry import register_and_link

            _best_effort("registering the prompts", register_and_link, cfg, run.info.run_id,
                         lock_dir=st.root / "mlruns" if (st.root / "mlruns").is_dir() else None)
        carbon = None
        if pending:
            from hublab.tracking.carbon import CarbonTracker

            carbon = CarbonTracker(str(st.section("tracking").get("country_iso_code", "DEU")),
                                   enabled=track_carbon, output_dir=str(ckpt.dir))
        finished = dict(done)
        session_carbon = None
        try:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeRemainingColumn(), disable=not progress) as bar, \
                    traces.run_tracer(run.info.run_id, run.info.experiment_id, secrets,
                                      enabled=trace and bool(pending)):
                task = bar.add_task(f"{cfg.name} on {dataset}", total=len(pairs), completed=len(pairs) - len(pending))
                run_budget = budgets["run_timeout_s"]
                for i, p in pending:
                    if run_budget is not None and time.perf_counter() - t_start > run_budget:
                        budget_hit = True
                        break
                    rec = _run_question(pipeline, carbon, i, p, k, question_timeout_s=budgets["question_timeout_s"],
                                        secrets=secrets)
                    ckpt.append(rec)
                    finished[rec["key"]] = rec
                    bar.advance(task)
                    if on_question is not None:
                        sel = [finished[_key(j, q)] for j, q in enumerate(pairs) if _key(j, q) in finished]
                        if on_question(len(sel), len(pairs), aggregate_records(sel)):
                            stopped = True
                            break
        finally:
            if carbon is not None:
                session_carbon = carbon.close()
        records = [finished[_key(i, p)] for i, p in enumerate(pairs) if _key(i, p) in finished]
        skipped = {} if (stopped or budget_hit) else _generation_metrics(cfg, records, st)
        if not stopped and any(r.get("generation_done") for r in records):
            ckpt.rewrite(list(finished.values()))
        metrics = aggregate_records(records)
        if session_carbon is not None and pending:
            # whole-session totals; per question = total / questions run in this session
            n_run = max(1, len(records) - len(done))
            metrics["session_emissions_total"] = session_carbon.emissions or 0.0
            metrics["session_energy_total"] = session_carbon.total_energy_consumption or 0.0
            metrics["session_emissions_per_question"] = (session_carbon.emissions or 0.0) / n_run
            metrics["session_energy_per_question"] = (session_carbon.total_energy_consumption or 0.0) / n_run
        failed, reason = _failure(metrics, budgets, budget_hit, len(records), len(pairs))
        mlflow.log_metrics(mlflow_log.finite_metrics(metrics))
        slices = slice_metrics(records)
        for f, groups in slices.items():
            for v, m in groups.items():
                mlflow.log_metrics({slice_metric(name_, f, v): m[name_]
                                    for name_ in KEY_METRICS if name_ in m})
        if skipped:
            mlflow.set_tags(mlflow_log.safe_tags(
                {f"skipped.{k_}": why[:500] for k_, why in skipped.items()}, secrets))
        if carbon is not None:
            mlflow.set_tag("carbon.energy", "measured (RAPL)" if carbon.measured else "estimated (no RAPL)")
        if failed:
            mlflow.set_tags(mlflow_log.safe_tags({"hublab.failure": reason}, secrets))
        if log_artifacts and not stopped:
            from hublab.tracking.artifacts import log_run_artifacts

            log_run_artifacts(cfg, records, metrics, slices, ckpt.dir, graph=graph, dataset=dataset, settings=st,
                              config_hash=chash, identity=ident.as_dict())
        summary = RunSummary(metrics, run.info.run_id, chash, len(records), time.perf_counter() - t_start,
                             records, stopped, str(ckpt.dir), skipped, ident.as_dict(), ident.scope, failed, reason)
    except BaseException as exc:
        mlflow.end_run("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
        raise
    mlflow.end_run("FAILED" if failed else "FINISHED")
    return summary


def _best_effort(what: str, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
    """Run-metadata logging that must not stop an experiment (a tracking server without a prompt registry, …):
    a failure is logged, and tagged ``hublab.tracking_error``."""
    import mlflow

    try:
        return fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001
        log.warning("%s failed: %s", what, exc)
        try:
            mlflow.set_tag("hublab.tracking_error", f"{what}: {type(exc).__name__}: {exc}"[:500])
        except Exception:  # noqa: BLE001
            pass
        return None


def _has_llm(pipeline) -> bool:
    from hublab.llm.base import llm_free

    return any(not llm_free(llm) for llm in pipeline.all_llms())


def _failure(metrics: dict[str, float], budgets: dict[str, float | None], budget_hit: bool, n_done: int,
             n_wanted: int) -> tuple[bool, str]:
    """(failed, why): the run budget ran out, or errors + degraded questions exceed the allowed share."""
    if budget_hit:
        return True, (f"run time budget of {budgets['run_timeout_s']:g} s exhausted after {n_done} of {n_wanted} "
                      "questions (checkpoint kept: rerun the same command to resume)")
    share, limit = metrics.get("failure_share", 0.0), budgets["max_failure_share"]
    if limit is not None and share > limit:
        return True, (f"failure share {share:.0%} > {limit:.0%}: {int(metrics['n_errors'])} errors, "
                      f"{int(metrics['n_degraded'])} degraded of {n_done} questions (LLM errors "
                      f"{int(metrics['n_llm_errors'])}, retries {int(metrics['n_llm_retries'])}, fall-backs "
                      f"{int(metrics['n_llm_fallbacks'])}, over time budget {int(metrics['n_timeouts'])})")
    return False, ""


def _run_question(pipeline, carbon, i: int, p: QAPair, k: int, *, question_timeout_s: float | None = None,
                  secrets: list[str] | None = None) -> dict[str, Any]:
    """One question, traced as the root span of its trace (``hublab.observability``; a no-op untracked): inputs
    the question, outputs the answer and retrieved triples, attributes its metrics, runtime and LLM usage."""
    with observability.span(f"question {_key(i, p)}", observability.CHAIN,
                            inputs={"question": p.question, "topic_entity_id": p.topic_entity_id,
                                    "topic_entity_value": p.topic_entity_value},
                            attributes={"uid": p.uid, "index": i}) as sp:
        rec = _answer_question(pipeline, carbon, i, p, k, question_timeout_s=question_timeout_s, secrets=secrets)
        if sp.recording:
            sp.set_outputs({"answer": rec["generated_answer"], "retrieved_context": rec["retrieved_context"],
                            "error": rec["error"], "reason": rec["reason"]})
            sp.set_attributes({**{f"metric.{m}": v for m, v in rec["metrics"].items()},
                               "golden_answer": p.golden_answer, "golden_triples": list(p.golden_triples),
                               "runtime_s": rec["runtime"] or 0.0, "llm_tokens": rec["llm_tokens"],
                               "n_llm_fallbacks": rec["n_llm_fallbacks"], "degraded": rec["degraded"],
                               "error": rec["error"] or ""})
        return rec


def _answer_question(pipeline, carbon, i: int, p: QAPair, k: int, *, question_timeout_s: float | None = None,
                     secrets: list[str] | None = None) -> dict[str, Any]:
    from hublab.tracking.mlflow_log import scrub

    name = _key(i, p)
    for llm in pipeline.all_llms():
        llm.reset_usage()
    if carbon is not None:
        carbon.start(name)
    error = None
    t0 = time.perf_counter()
    try:
        out = pipeline.run(p.question, p.topic_entity_id, p.topic_entity_value)
    except ServiceUnavailable:
        raise  # not this question's error: the run stops (FAILED, checkpoint kept) and a rerun resumes
    except Exception as exc:  # recorded per question; the run goes on
        out = None
        error = f"{type(exc).__name__}: {exc}"
    elapsed = time.perf_counter() - t0
    if out is not None and getattr(out, "error", None):
        error = out.error  # the pipeline caught a retriever exception: still an error, not an empty answer
    em = carbon.stop(name) if carbon is not None else None
    usage_p = usage_c = cached = errors = retries = 0
    cost = 0.0
    for llm in pipeline.all_llms():
        u = llm.reset_usage()
        usage_p += u.prompt_tokens
        usage_c += u.completion_tokens
        cached += u.cached_calls
        errors += getattr(u, "errors", 0)
        retries += getattr(u, "retries", 0)
        cost += getattr(u, "cost", 0.0)
    fallbacks = list(getattr(out, "fallbacks", None) or []) if out else []
    # not preemptive (a Python call cannot be interrupted safely): the question is finished, then counted as
    # over budget; LLM backends enforce their own per-call timeouts
    timed_out = question_timeout_s is not None and elapsed > question_timeout_s
    retrieved = out.context_strings if out else []
    metrics = _retrieval_metrics(retrieved, list(p.golden_triples), k)
    sec = secrets or []
    rec: dict[str, Any] = {
        "key": name, "uid": p.uid, "question": scrub(p.question, sec),  # a key pasted into a question, too
        "golden_answer": scrub(p.golden_answer, sec) if isinstance(p.golden_answer, str) else p.golden_answer,
        "golden_triples": list(p.golden_triples), "topic_entity_id": p.topic_entity_id,
        "generated_answer": scrub(out.answer, sec) if out else "", "retrieved_context": retrieved,
        "reason": scrub(out.reason, sec) if out and out.reason else None,
        "error": scrub(error, sec) if error else None, "notes": [scrub(n, sec) for n in out.notes] if out else [],
        "sources": out.sources if out else [],
        "runtime": out.runtime_s if out else None, "llm_prompt_tokens": usage_p, "llm_completion_tokens": usage_c,
        "llm_tokens": usage_p + usage_c, "llm_cached_calls": cached, "n_llm_errors": errors,
        "n_llm_retries": retries, "n_llm_fallbacks": len(fallbacks), "fallbacks": [scrub(f, sec) for f in fallbacks],
        "llm_cost": cost, "timed_out": timed_out, "metrics": metrics,
        "qa": {f: getattr(p, f) for f in SLICE_FIELDS},
    }
    rec["degraded"] = is_degraded(rec)
    if em is not None:
        rec.update({k_: v for k_, v in em.__dict__.items()})
    return rec
