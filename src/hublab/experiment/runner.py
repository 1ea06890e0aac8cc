"""The experiment runner: a pipeline over a dataset → per-question predictions → thesis metrics → one
MLflow run. Per-question results are checkpointed as they finish, so a killed run resumes where it
stopped (same MLflow run) without recomputing finished questions.

Reliability rules (docs/reliability.md): a run is identified by everything that changes its results
(``identity.py``); partial runs say so everywhere; the run lock is taken and the pipeline built before MLflow
or the checkpoint are touched; degradation (LLM errors, retries, fall-backs, over-budget questions) is counted
per question and per run, and a run whose failure share exceeds ``evaluation.max_failure_share`` ends FAILED
(checkpoint kept for resume) with ``RunSummary.exit_code`` 1.

What to run comes in one :class:`~hublab.experiment.request.RunRequest`; the questions are gone through in
``_answering.py``, a question is answered in ``question.py``, budgets judged in ``budget.py``, generation metrics
computed in ``generation.py``.
"""

from __future__ import annotations

import logging
import random
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from hublab.datasets.catalog import check_golden_ids, is_dataset_file, load_dataset, resolve_statements
from hublab.datasets.model import QAPair
from hublab.env import release_heap, settle_heap
from hublab.errors import InputError
from hublab.experiment import question
from hublab.experiment._answering import Answered, DeferredRun, OnQuestion, Plan, answer_pending, in_order
from hublab.experiment.aggregate import aggregate_records, slice_metrics
from hublab.experiment.budget import budgets, failure
from hublab.experiment.checkpoint import Checkpoint, RunLock, run_owner
from hublab.experiment.generation import generation_metrics
from hublab.experiment.identity import RunIdentity, run_identity
from hublab.experiment.request import RunRequest
from hublab.llm.base import llm_free
from hublab.pipeline.config import PipelineConfig
from hublab.pipeline.hub_types import apply_hub_types, refuse_empty_hub_types
from hublab.pipeline.pipeline import build_pipeline
from hublab.pipeline.resources import graph_source, load_graph
from hublab.pipeline.validate import name_problem
from hublab.tracking.recorder import RunRecorder

log = logging.getLogger(__name__)


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
    #: seconds this session spent making the retriever's index usable (building, resuming or checking it) before
    #: the first question; None when no question ran (nothing was built). Never part of ``runtime``.
    index_build_s: float | None = None
    experiment_id: str | None = None

    @property
    def full(self) -> bool:
        return self.scope == "full"

    @property
    def exit_code(self) -> int:
        """What ``hublab run`` should exit with: 1 for a FAILED run (failure share or run budget exceeded)."""
        return 1 if self.failed else 0


def run_experiment(request: RunRequest | PipelineConfig, graph: str | None = None, dataset: str | None = None, *,
                   on_question: OnQuestion | None = None, **options: Any) -> RunSummary:
    """Run ``request`` (resumable) and log it as one MLflow run. ``on_question(done, total, partial_metrics)``
    returning True stops the run early (a pruned trial).

    Deprecated: the older call form, ``run_experiment(cfg, graph, dataset, limit=..., settings=..., ...)``, warns
    (``DeprecationWarning``) and builds the request from its keywords; pass
    ``RunRequest.build(cfg, graph, dataset, ...)`` instead, so a run's options live in one place."""
    if isinstance(request, PipelineConfig):
        import warnings

        warnings.warn("run_experiment(cfg, graph, dataset, **options) is deprecated: build a RunRequest and pass it, "
                      "run_experiment(RunRequest.build(cfg, graph, dataset, ...), on_question=...)",
                      DeprecationWarning, stacklevel=2)
        if graph is None or dataset is None:
            raise TypeError("run_experiment(cfg, graph, dataset, ...) needs the graph and the dataset")
        request = RunRequest.build(request, graph, dataset, **options)
    elif graph is not None or dataset is not None or options:
        raise TypeError("run_experiment(request) takes everything from the RunRequest")
    return _run(request, on_question)


def _run(req: RunRequest, on_question: OnQuestion | None) -> RunSummary:
    # the experiment names a folder (mlruns/artifacts/<experiment>); run names are labels only (never a path)
    why = name_problem(req.experiment, "experiment name") if req.experiment is not None else None
    if why:
        raise InputError(why, field="--experiment")
    all_pairs, dataset_file = _questions(req)
    pairs = all_pairs
    if req.limit is not None:
        if req.limit <= 0:
            raise InputError("--limit must be positive", field="--limit")
        pairs = pairs[:req.limit]
    plan = Plan(pairs, int(req.cfg.evaluation.get("k", 10)),
                budgets(req.cfg, req.question_timeout_s, req.run_timeout_s, req.max_failure_share))
    st = req.settings
    src = graph_source(req.graph, st)
    # the hub types as every door decides them (--hub-type, else the graph's declared ones), before the run's identity
    # is taken from the config (a caller that built the request without the preflight gets them too)
    apply_hub_types(req.cfg, list(req.hub_types), src)
    ident: RunIdentity = run_identity(req.config_hash, src.digest, dataset_file, graph=src.name,
                                      dataset=req.dataset, limit=req.limit, n_questions=len(pairs),
                                      n_total=len(all_pairs), experiment=req.experiment_name,
                                      retriever_type=req.cfg.retriever_type)
    if req.share_answers:  # shared by the configuration and the graph's content, whichever dataset file asks
        plan = replace(plan, answers_key=req.cfg.config_hash(src.digest))
    run_dir = st.root / "outputs" / "runs" / ident.run_id
    # 1. the lock, before anything shared is touched: a second process on this run changes nothing
    new_dir = not run_dir.exists()
    lock = RunLock(run_dir).acquire()
    try:
        return _run_locked(req, plan, ident, Checkpoint(run_dir), on_question, (all_pairs, dataset_file))
    finally:
        release_heap()
        if new_dir:  # while still holding the lock: nobody else can be using the folder
            _remove_if_only_lock(run_dir)
        lock.release()


#: questions already loaded and resolved in this process, by dataset file, its size and change time, and the
#: graph's content: a study's trials read the same file dozens of times (about half a second each on a small graph)
_LOADED: dict[tuple[Any, ...], tuple[list[QAPair], Path]] = {}
_LOADED_MAX = 16


def _questions(req: RunRequest) -> tuple[list[QAPair], Path]:
    """The dataset's questions and its file (see :func:`_load_questions`), loaded once per process and content."""
    st = req.settings
    try:
        path = Path(req.dataset) if is_dataset_file(req.dataset) else st.dataset_file(req.dataset)
        info = path.stat()
        key: tuple[Any, ...] | None = (str(st.root), req.dataset, str(path.resolve()), info.st_size,
                                       info.st_mtime_ns, req.graph, graph_source(req.graph, st).digest)
    except (OSError, InputError):
        key = None  # a missing or unknown dataset: the loader's own message
    if key is not None and key in _LOADED:
        pairs, where = _LOADED[key]
        return list(pairs), where
    loaded = _load_questions(req)
    if key is not None:
        if len(_LOADED) >= _LOADED_MAX:
            _LOADED.pop(next(iter(_LOADED)))
        _LOADED[key] = (list(loaded[0]), loaded[1])
    return loaded


def _load_questions(req: RunRequest) -> tuple[list[QAPair], Path]:
    """The dataset's questions and its file: a built-in name (whose graph must be ``req.graph``), or a user's KGQA
    file (.csv in the thesis format, .jsonl) whose golden ids are checked against the graph by content."""
    st = req.settings
    pairs = load_dataset(st, req.dataset)
    if is_dataset_file(req.dataset):
        kg = load_graph(req.graph, st)
        pairs, _lacking = resolve_statements(pairs, kg)  # rows with statements the graph lacks: preflight warned
        check_golden_ids(pairs, kg, dataset=req.dataset, graph_name=req.graph)
        return pairs, Path(req.dataset)
    expected_graph = st.graph_for_dataset(req.dataset)
    if expected_graph != req.graph:
        raise InputError(f"dataset {req.dataset!r} refers to graph {expected_graph!r}, not {req.graph!r}: golden "
                         "triple ids would not match", field="--graph")
    return pairs, st.dataset_file(req.dataset)


def _remove_if_only_lock(run_dir: Path) -> None:
    """A run refused before its checkpoint or MLflow run existed leaves nothing behind (not a ``.lock``-only dir)."""
    try:
        if [p.name for p in run_dir.iterdir()] == [".lock"]:
            (run_dir / ".lock").unlink()
            run_dir.rmdir()
    except OSError:
        pass


def _run_locked(req: RunRequest, plan: Plan, ident: RunIdentity, ckpt: Checkpoint,
                on_question: OnQuestion | None, dataset_input: tuple[list[QAPair], Path]) -> RunSummary:
    pairs = plan.pairs
    done = ckpt.load() if req.resume else {}
    # questions that ended in an error are retried on resume (an error is not a result)
    done = {key: r for key, r in done.items() if not r.get("error")}
    # the order of the whole run, whatever is done already: a resumed run goes through its questions as a fresh one
    order = list(enumerate(pairs))
    if req.order_seed is not None:
        random.Random(req.order_seed).shuffle(order)
    pending = [(i, p) for i, p in order if question.record_key(i, p) not in done]
    # 2. everything that can be refused by another process (Milvus Lite file lock) or by bad inputs, before
    #    MLflow and the checkpoint are touched
    pipeline = None
    index_build_s: float | None = None
    if pending:
        pipeline = build_pipeline(req.cfg, req.graph, req.settings)
        refuse_empty_hub_types(req.cfg, pipeline.retriever.resources.graph, req.graph)
        # a partial index is resumed (or refused), and one a method builds lazily is built, before any question
        # runs: timed apart, so the per-question runtime is the questions' own (the build is index_build_s)
        t_index = time.perf_counter()
        pipeline.retriever.ensure_ready(progress=req.progress)
        index_build_s = time.perf_counter() - t_index
        settle_heap()  # the graph, pipeline and index stay for the run: out of the collector's scans
    if not req.resume:
        ckpt.reset()
    state = ckpt.state()
    desc = req.description(req.display_name(None if ident.full else ident.scope))
    owner = run_owner(desc.experiment, desc.run_name, desc.parent_run_id)

    def open_run() -> RunRecorder:
        rec = RunRecorder.open(desc, Checkpoint.run_for(state, owner) if req.resume else None)
        with rec.ending_on_error():
            if rec.new:
                ckpt.record_run(state, owner, rec.run_id, ident.as_dict())
            _log_start(req, rec, ident, pipeline, dataset_input=dataset_input)
        return rec

    run = DeferredRun(open_run)
    with run.ending_on_error():
        t_start = time.perf_counter()  # the run budget and the session's runtime start here (less MLflow's set-up)
        if not pending:
            run.get()
        answered = answer_pending(req, run, pipeline, plan, order, done, ckpt, t_start, on_question)
        summary = _finish(req, run.get(), plan, ident, ckpt, answered, n_done_before=len(done),
                          pending=bool(pending), t_start=t_start + run.open_s, index_build_s=index_build_s,
                          tracking_open_s=run.open_s if pending else None)
    run.get().end("FAILED" if summary.failed else "FINISHED")
    return summary


def _log_start(req: RunRequest, rec: RunRecorder, ident: RunIdentity, pipeline: Any, *,
               dataset_input: tuple[list[QAPair], Path]) -> None:
    """A new run's params and dataset input; every session's tags and the prompt versions its LLM steps send."""
    if rec.new:
        rec.log_run_params({"graph": req.graph_shown, "dataset": req.dataset, "config_hash": req.config_hash,
                            "limit": ident.limit, "run_identity": ident.run_id})
    if rec.new and req.log_dataset_input:
        rec.best_effort("logging the dataset input", rec.log_dataset_input, dataset_input[0], dataset_input[1],
                        scope=ident.scope)
    embedder = getattr(pipeline.retriever.resources.embedder, "name", None) if pipeline is not None else None
    tags = {**rec.run_tags(embedder), **ident.tags()}
    if rec.killed:
        tags["hublab.resumed_after_kill"] = "true"
    rec.set_tags(tags)
    if pipeline is not None and _has_llm(pipeline):  # the prompt versions this run's LLM steps send
        rec.best_effort("registering the prompts", rec.register_prompts)


def _finish(req: RunRequest, rec: RunRecorder, plan: Plan, ident: RunIdentity, ckpt: Checkpoint,
            answered: Answered, *, n_done_before: int, pending: bool, t_start: float,
            index_build_s: float | None = None, tracking_open_s: float | None = None) -> RunSummary:
    """Generation metrics, run metrics, slices, verdict and artifacts of the records so far, logged to the run."""
    pairs, finished, stopped = plan.pairs, answered.finished, answered.stopped
    records = in_order(pairs, finished)
    skipped = {} if (stopped or answered.budget_hit) else generation_metrics(req.cfg, records, req.settings)
    if not stopped and any(r.get("generation_done") for r in records):
        ckpt.rewrite(list(finished.values()))
    metrics = aggregate_records(records)
    if index_build_s is not None:
        metrics["index_build_s"] = index_build_s
    if tracking_open_s is not None:  # opening the MLflow run after the first question (``DeferredRun``)
        metrics["tracking_open_s"] = tracking_open_s
    session = answered.session_carbon
    if session is not None and pending:
        # whole-session totals; per question = total / questions run in this session
        n_run = max(1, len(records) - n_done_before)
        metrics["session_emissions_total"] = session.emissions or 0.0
        metrics["session_energy_total"] = session.total_energy_consumption or 0.0
        metrics["session_emissions_per_question"] = (session.emissions or 0.0) / n_run
        metrics["session_energy_per_question"] = (session.total_energy_consumption or 0.0) / n_run
    failed, reason = failure(metrics, plan.limits, answered.budget_hit, len(records), len(pairs))
    rec.log_run_metrics(metrics)  # the page's headline; all metrics and the slices go with the artifacts
    slices = slice_metrics(records)
    if skipped:
        rec.set_tags({f"skipped.{k_}": why[:500] for k_, why in skipped.items()})
    if answered.carbon is not None:
        rec.set_tags({"carbon.energy": "measured (RAPL)" if answered.carbon.measured else "estimated (no RAPL)"})
    if failed:
        rec.set_tags({"hublab.failure": reason})
    if answered.shared:  # a tag, not a metric: how many came from another run depends on what ran before
        rec.set_tags({"hublab.answers_shared": str(answered.shared)})
    if req.log_artifacts and not stopped:
        rec.log_artifacts(records, metrics, slices, ckpt.dir, ident.as_dict(), plots=req.artifact_plots)
    return RunSummary(metrics=metrics, run_id=rec.run_id, config_hash=req.config_hash, n_questions=len(records),
                      runtime_s=time.perf_counter() - t_start, per_question=records, stopped=stopped,
                      output_dir=str(ckpt.dir), skipped_metrics=skipped, identity=ident.as_dict(),
                      scope=ident.scope, failed=failed, failure_reason=reason, index_build_s=index_build_s,
                      experiment_id=rec.experiment_id)


def _has_llm(pipeline: Any) -> bool:
    return any(not llm_free(llm) for llm in pipeline.all_llms())
