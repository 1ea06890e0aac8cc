"""The experiment runner: a pipeline over a dataset → per-question predictions → thesis metrics → one
MLflow run. Per-question results are checkpointed as they finish, so a killed run resumes where it
stopped (same MLflow run) without recomputing finished questions.

Reliability rules (docs/reliability.md): a run is identified by everything that changes its results
(``identity.py``); partial runs say so everywhere; the run lock is taken and the pipeline built before MLflow
or the checkpoint are touched; degradation (LLM errors, retries, fall-backs, over-budget questions) is counted
per question and per run, and a run whose failure share exceeds ``evaluation.max_failure_share`` ends FAILED
(checkpoint kept for resume) with ``RunSummary.exit_code`` 1.

What to run comes in one :class:`~hublab.experiment.request.RunRequest`; a question is answered in
``question.py``, budgets judged in ``budget.py``, generation metrics computed in ``generation.py``.
"""

from __future__ import annotations

import contextlib
import logging
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from hublab import observability
from hublab.datasets.catalog import check_golden_ids, is_dataset_file, load_dataset, resolve_statements
from hublab.datasets.model import QAPair
from hublab.env import release_heap, settle_heap
from hublab.errors import InputError
from hublab.experiment import question
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
from hublab.tracking.carbon import CarbonTracker
from hublab.tracking.recorder import RunRecorder

log = logging.getLogger(__name__)
#: ``(done, total, partial metrics, the answer's record)`` after each question; True stops the run (a pruned trial).
#: The partial metrics are a function, computed only when called: aggregating every finished record after every
#: question is quadratic in the questions, and a per-question pruner never needs it
OnQuestion = Callable[[int, int, Callable[[], dict[str, float]], dict[str, Any]], bool]


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


@dataclass(frozen=True)
class _Plan:
    """The questions this run covers, the rank cut-off k and the budgets: read and checked before the lock."""

    pairs: list[QAPair]
    k: int
    limits: dict[str, float | None]


@dataclass
class _Answered:
    """What the question loop leaves: every finished record by key, and why it stopped early (if it did)."""

    finished: dict[str, dict[str, Any]]
    stopped: bool = False
    budget_hit: bool = False
    carbon: Any = None
    session_carbon: Any = None


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
    plan = _Plan(pairs, int(req.cfg.evaluation.get("k", 10)),
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


def _run_locked(req: RunRequest, plan: _Plan, ident: RunIdentity, ckpt: Checkpoint,
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

    run = _DeferredRun(open_run)
    with run.ending_on_error():
        t_start = time.perf_counter()  # the run budget and the session's runtime start here (less MLflow's set-up)
        if not pending:
            run.get()
        answered = _answer_pending(req, run, pipeline, plan, order, done, ckpt, t_start, on_question)
        summary = _finish(req, run.get(), plan, ident, ckpt, answered, n_done_before=len(done),
                          pending=bool(pending), t_start=t_start + run.open_s, index_build_s=index_build_s,
                          tracking_open_s=run.open_s if pending else None)
    run.get().end("FAILED" if summary.failed else "FINISHED")
    return summary


class _DeferredRun:
    """The run's MLflow recorder, opened once a first question is answered: MLflow's imports and its
    store's schema check (~2 s on a 2-core machine) no longer stand between ``hublab run`` and its first question.
    The opening is timed apart (``open_s``): never part of a question's runtime, the session's or the run budget.
    A first question's trace is kept as data meanwhile (``observability.SpanBuffer``) and written into the run
    after, with its own times; its checkpoint line follows, as every question's follows its stored trace."""

    def __init__(self, open_run: Callable[[], RunRecorder]) -> None:
        self._open_run = open_run
        self.rec: RunRecorder | None = None
        self.open_s = 0.0

    def get(self) -> RunRecorder:
        if self.rec is None:
            t0 = time.perf_counter()
            self.rec = self._open_run()
            self.open_s = time.perf_counter() - t0
        return self.rec

    @contextlib.contextmanager
    def ending_on_error(self) -> Iterator[None]:
        """An exception ends the run, once it is open (KILLED on Ctrl-C, else FAILED), before it propagates."""
        try:
            yield
        except BaseException as exc:
            if self.rec is not None:
                self.rec.end("KILLED" if isinstance(exc, KeyboardInterrupt) else "FAILED")
            raise


def _log_start(req: RunRequest, rec: RunRecorder, ident: RunIdentity, pipeline: Any, *,
               dataset_input: tuple[list[QAPair], Path]) -> None:
    """A new run's params and dataset input; every session's tags and the prompt versions its LLM steps send."""
    if rec.new:
        rec.log_run_params({"graph": req.graph_shown, "dataset": req.dataset, "config_hash": req.config_hash,
                            "limit": ident.limit, "run_identity": ident.run_id})
        rec.best_effort("logging the dataset input", rec.log_dataset_input, dataset_input[0], dataset_input[1],
                        scope=ident.scope)
    embedder = getattr(pipeline.retriever.resources.embedder, "name", None) if pipeline is not None else None
    tags = {**rec.run_tags(embedder), **ident.tags()}
    if rec.killed:
        tags["hublab.resumed_after_kill"] = "true"
    rec.set_tags(tags)
    if pipeline is not None and _has_llm(pipeline):  # the prompt versions this run's LLM steps send
        rec.best_effort("registering the prompts", rec.register_prompts)


def _answer_pending(req: RunRequest, run: _DeferredRun, pipeline: Any, plan: _Plan,
                    order: list[tuple[int, QAPair]], done: dict[str, dict[str, Any]], ckpt: Checkpoint,
                    t_start: float, on_question: OnQuestion | None) -> _Answered:
    """The questions not finished yet, in ``order``, each checkpointed as it ends (after its trace is stored); the
    MLflow run opens after the first (``_DeferredRun``). Stops when the run budget runs out or ``on_question`` says
    so. Carbon is measured per question and for the whole session.

    ``on_question`` sees every question in ``order``, a finished one (from the checkpoint) with its stored record,
    as a fresh run would show it: a pruned trial run again (the same configuration in a later study, a rerun after
    a crash) is pruned where it was, so a study's decisions never depend on what this machine had checkpointed."""
    pairs, limits = plan.pairs, plan.limits
    pending = [(i, p) for i, p in order if question.record_key(i, p) not in done]
    out = _Answered(dict(done))
    seen: dict[str, dict[str, Any]] = {}  # the questions of ``order`` gone through so far, finished or answered
    if pending:
        out.carbon = CarbonTracker(str(req.settings.section("tracking").get("country_iso_code", "DEU")),
                                   enabled=req.track_carbon, output_dir=str(ckpt.dir))
    traced = req.trace and bool(pending)
    buffer = observability.SpanBuffer() if traced else None
    tracer = None
    try:
        # on stderr: stdout is the command's result (``--json``: a comparison's JSON was preceded by the bars)
        with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                      TimeRemainingColumn(), disable=not req.progress, console=Console(stderr=True)) as bar, \
                contextlib.ExitStack() as tracing:
            if buffer is not None:
                tracing.enter_context(observability.installed(buffer))
            task = bar.add_task(f"{req.cfg.name} on {req.dataset}", total=len(pairs),
                                completed=len(pairs) - len(pending))
            run_budget = limits["run_timeout_s"]
            unsaved: list[dict[str, Any]] = []  # answered, checkpointed once their traces are stored
            try:
                for i, p in (order if on_question is not None else pending):
                    key = question.record_key(i, p)
                    if key in done:  # finished before: shown to on_question as it was answered, not answered again
                        seen[key] = done[key]
                        if on_question(len(seen), len(pairs),
                                       lambda seen=seen: aggregate_records(_in_order(pairs, seen)), done[key]):
                            out.stopped = True
                            break
                        continue
                    if run_budget is not None and time.perf_counter() - t_start - run.open_s > run_budget:
                        out.budget_hit = True
                        break
                    answer = question.run_question(pipeline, out.carbon, i, p, plan.k, secrets=req.secrets,
                                                   question_timeout_s=limits["question_timeout_s"])
                    out.finished[answer["key"]] = answer
                    unsaved.append(answer)
                    if run.rec is None:
                        rec = run.get()
                        if buffer is not None:
                            tracer = tracing.enter_context(rec.tracer(enabled=True))
                            tracer.replay(buffer.take())
                    stored = len(unsaved) - (tracer.unstored() if tracer is not None else 0)
                    unsaved = _checkpoint(ckpt, unsaved, max(0, stored))
                    bar.advance(task)
                    seen[answer["key"]] = answer
                    if on_question is not None:
                        if on_question(len(seen), len(pairs),
                                       lambda seen=seen: aggregate_records(_in_order(pairs, seen)), answer):
                            out.stopped = True
                            break
            finally:  # also on Ctrl-C: every answer kept, after its trace (one only kept as data is lost with it)
                if unsaved and tracer is not None:
                    tracer.persist()
                _checkpoint(ckpt, unsaved, len(unsaved) - (len(buffer.traces) if buffer is not None else 0))
    finally:
        if out.carbon is not None:
            out.session_carbon = out.carbon.close()
    return out


def _checkpoint(ckpt: Checkpoint, answers: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Append the first ``n`` answers to the checkpoint; return the rest."""
    for answer in answers[:n]:
        ckpt.append(answer)
    return answers[n:]


def _finish(req: RunRequest, rec: RunRecorder, plan: _Plan, ident: RunIdentity, ckpt: Checkpoint,
            answered: _Answered, *, n_done_before: int, pending: bool, t_start: float,
            index_build_s: float | None = None, tracking_open_s: float | None = None) -> RunSummary:
    """Generation metrics, run metrics, slices, verdict and artifacts of the records so far, logged to the run."""
    pairs, finished, stopped = plan.pairs, answered.finished, answered.stopped
    records = _in_order(pairs, finished)
    skipped = {} if (stopped or answered.budget_hit) else generation_metrics(req.cfg, records, req.settings)
    if not stopped and any(r.get("generation_done") for r in records):
        ckpt.rewrite(list(finished.values()))
    metrics = aggregate_records(records)
    if index_build_s is not None:
        metrics["index_build_s"] = index_build_s
    if tracking_open_s is not None:  # opening the MLflow run after the first question (``_DeferredRun``)
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
    if req.log_artifacts and not stopped:
        rec.log_artifacts(records, metrics, slices, ckpt.dir, ident.as_dict())
    return RunSummary(metrics, rec.run_id, req.config_hash, len(records), time.perf_counter() - t_start,
                      records, stopped, str(ckpt.dir), skipped, ident.as_dict(), ident.scope, failed, reason,
                      index_build_s, rec.experiment_id)


def _in_order(pairs: list[QAPair], finished: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The finished records, in the dataset's order."""
    keys = (question.record_key(i, p) for i, p in enumerate(pairs))
    return [finished[k] for k in keys if k in finished]


def _has_llm(pipeline: Any) -> bool:
    return any(not llm_free(llm) for llm in pipeline.all_llms())
