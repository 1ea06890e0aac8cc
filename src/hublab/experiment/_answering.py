"""The runner's question loop: the questions a run has not finished yet answered in order, each checkpointed once its
trace is stored, the MLflow run opened after the first (:class:`DeferredRun`), carbon measured per question and for
the session. Apart from ``runner.py``, which decides what runs (lock, identity, pipeline) and what is logged after."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

from hublab import observability
from hublab.datasets.model import QAPair
from hublab.experiment import question, shared_answers
from hublab.experiment.aggregate import aggregate_records
from hublab.experiment.checkpoint import Checkpoint
from hublab.experiment.request import RunRequest
from hublab.llm.base import llm_free
from hublab.tracking.carbon import CarbonTracker
from hublab.tracking.recorder import RunRecorder

#: ``(done, total, partial metrics, the answer's record)`` after each question; True stops the run (a pruned trial).
#: The partial metrics are a function, computed only when called: aggregating every finished record after every
#: question is quadratic in the questions, and a per-question pruner never needs it
OnQuestion = Callable[[int, int, Callable[[], dict[str, float]], dict[str, Any]], bool]


@dataclass(frozen=True)
class Plan:
    """The questions this run covers, the rank cut-off k and the budgets: read and checked before the lock."""

    pairs: list[QAPair]
    k: int
    limits: dict[str, float | None]
    #: what this run's answers may be shared by (:mod:`hublab.experiment.shared_answers`), or None: not shared
    answers_key: str | None = None


@dataclass
class Answered:
    """What the question loop leaves: every finished record by key, and why it stopped early (if it did)."""

    finished: dict[str, dict[str, Any]]
    stopped: bool = False
    budget_hit: bool = False
    carbon: Any = None
    session_carbon: Any = None
    shared: int = 0  #: answers taken from an earlier run of this process (:mod:`hublab.experiment.shared_answers`)


class DeferredRun:
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


def answer_pending(req: RunRequest, run: DeferredRun, pipeline: Any, plan: Plan,
                   order: list[tuple[int, QAPair]], done: dict[str, dict[str, Any]], ckpt: Checkpoint,
                   t_start: float, on_question: OnQuestion | None) -> Answered:
    """The questions not finished yet, in ``order``, each checkpointed as it ends (after its trace is stored); the
    MLflow run opens after the first (``DeferredRun``). Stops when the run budget runs out or ``on_question`` says
    so. Carbon is measured per question and for the whole session.

    ``on_question`` sees every question in ``order``, a finished one (from the checkpoint) with its stored record,
    as a fresh run would show it: a pruned trial run again (the same configuration in a later study, a rerun after
    a crash) is pruned where it was, so a study's decisions never depend on what this machine had checkpointed."""
    pairs, limits = plan.pairs, plan.limits
    pending = [(i, p) for i, p in order if question.record_key(i, p) not in done]
    out = Answered(dict(done))
    seen: dict[str, dict[str, Any]] = {}  # the questions of ``order`` gone through so far, finished or answered
    if pending:
        out.carbon = CarbonTracker(str(req.settings.section("tracking").get("country_iso_code", "DEU")),
                                   enabled=req.track_carbon, output_dir=str(ckpt.dir))
    traced = req.trace and bool(pending)
    sharing = (plan.answers_key is not None and not traced and not req.track_carbon and pipeline is not None
               and all(llm_free(llm) for llm in pipeline.all_llms()))
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
                        record = done[key]
                    else:
                        if run_budget is not None and time.perf_counter() - t_start - run.open_s > run_budget:
                            out.budget_hit = True
                            break
                        record = _answer(req, pipeline, out, i, p, plan, sharing)
                        key = record["key"]
                        out.finished[key] = record
                        unsaved.append(record)
                        if run.rec is None:
                            rec = run.get()
                            if buffer is not None:
                                tracer = tracing.enter_context(rec.tracer(enabled=True))
                                tracer.replay(buffer.take())
                        stored = len(unsaved) - (tracer.unstored() if tracer is not None else 0)
                        unsaved = _checkpoint(ckpt, unsaved, max(0, stored))
                        bar.advance(task)
                    seen[key] = record
                    if on_question is not None and on_question(
                            len(seen), len(pairs), lambda seen=seen: aggregate_records(in_order(pairs, seen)), record):
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


def _answer(req: RunRequest, pipeline: Any, out: Answered, i: int, p: QAPair, plan: Plan,
            sharing: bool) -> dict[str, Any]:
    """The question's record: answered now, or (``sharing``) as this process answered it in an earlier run."""
    key = shared_answers.share_key(str(plan.answers_key), plan.k, p) if sharing else None
    if key is not None and (known := shared_answers.recall(key, question.record_key(i, p))) is not None:
        out.shared += 1
        return known
    record = question.run_question(pipeline, out.carbon, i, p, plan.k, secrets=req.secrets,
                                   question_timeout_s=plan.limits["question_timeout_s"])
    if key is not None:
        shared_answers.keep(key, record)
    return record


def _checkpoint(ckpt: Checkpoint, answers: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    """Append the first ``n`` answers to the checkpoint; return the rest."""
    for answer in answers[:n]:
        ckpt.append(answer)
    return answers[n:]


def in_order(pairs: list[QAPair], finished: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The finished records, in the dataset's order."""
    keys = (question.record_key(i, p) for i, p in enumerate(pairs))
    return [finished[k] for k in keys if k in finished]
