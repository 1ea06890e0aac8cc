"""MLflow Tracing for ``hublab run``: one trace per question, attached to the run (its Traces tab).

``MlflowTracer`` implements the neutral span hook of ``hublab.observability``; the runner installs it while a
tracked run executes its questions (``run_tracer``). Spans are opened with ``mlflow.start_span_no_context`` and
parented explicitly, so that

- the outermost span of a question (the runner's) starts a new trace whose metadata names the run
  (``mlflow.sourceRun``: what ``mlflow.search_traces(run_id=...)`` and the run's Traces tab select on);
- spans opened in worker threads (HubLink's parallel partial answers) — which do not inherit context variables
  from the thread pool — hang under the innermost span open in the question's own thread instead of starting
  traces of their own.

Strings in inputs, outputs and attributes are scrubbed of secret values (``mlflow_log.scrub``). Tracing never
ends a run: a failure to start a span logs one warning and the step runs untraced.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from typing import Any

from hublab import observability
from hublab.tracking.mlflow_log import scrub_obj

log = logging.getLogger(__name__)

ATTACHMENTS_ENV = "MLFLOW_TRACE_EXTRACT_ATTACHMENTS"
EXPORT_WORKERS_ENV = "MLFLOW_ASYNC_TRACE_LOGGING_MAX_WORKERS"
BATCH_ENV = "MLFLOW_USE_BATCH_SPAN_PROCESSOR"
MAX_TEXT = 20_000  # longest string kept in a span's inputs/outputs (prompts with 30 hubs' paths stay whole)


def _clip(obj: Any, limit: int = MAX_TEXT) -> Any:
    if isinstance(obj, str):
        return obj if len(obj) <= limit else obj[:limit] + f"… [{len(obj) - limit} more characters]"
    if isinstance(obj, dict):
        return {k: _clip(v, limit) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clip(v, limit) for v in obj]
    return obj


class _Span:
    """The object a traced step sees (``observability.Span``) over an MLflow ``LiveSpan``."""

    recording = True

    def __init__(self, live: Any, tracer: MlflowTracer) -> None:
        self._live = live
        self._tracer = tracer

    def set_inputs(self, inputs: Any) -> None:
        self._live.set_inputs(self._tracer.clean(inputs))

    def set_outputs(self, outputs: Any) -> None:
        self._live.set_outputs(self._tracer.clean(outputs))

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        self._live.set_attributes(self._tracer.clean(attributes))

    def set_token_usage(self, input_tokens: int, output_tokens: int) -> None:
        """MLflow's token-usage attribute: summed per trace and shown in the Traces tab."""
        from mlflow.tracing.constant import SpanAttributeKey

        self._live.set_attribute(SpanAttributeKey.CHAT_USAGE, {
            "input_tokens": int(input_tokens), "output_tokens": int(output_tokens),
            "total_tokens": int(input_tokens) + int(output_tokens)})


class MlflowTracer:
    """``observability.Tracer`` writing MLflow traces linked to ``run_id`` in ``experiment_id``."""

    def __init__(self, run_id: str, experiment_id: str, secrets: list[str] | None = None) -> None:
        self.run_id = run_id
        self.experiment_id = experiment_id
        self.secrets = list(secrets or [])
        self.n_traces = 0
        self._nesting = observability.Nesting()
        self._warned = False

    def unstored(self) -> int:
        """How many of the traces ended last may not be stored yet. MLflow exports traces on a background thread,
        overlapping the next question (a synchronous export cost ~80 ms a question, more than HubLink's retrieval),
        and a kill -9 takes what is still queued with it; the runner writes a question's checkpoint line only once
        its trace is stored, so a resume (which skips checkpointed questions) never misses one. ``run_tracer`` gives
        the export one thread: first in, first out, so the queue's unfinished tasks are the newest traces. Where
        that is not known (an exporter made before, another MLflow), any unfinished task counts as all of them."""
        exporter = _exporter()
        if _batching():
            return self.n_traces  # spans wait in a batching processor first: not known, so none yet
        if not getattr(exporter, "_is_async_enabled", False):
            return 0  # exported when its root span ended
        queue = getattr(exporter, "_async_queue", None)
        waiting = getattr(getattr(queue, "_queue", None), "unfinished_tasks", None)
        if waiting is None or (waiting and getattr(queue, "_max_workers", None) != 1):
            return self.n_traces
        return int(waiting)

    def persist(self) -> None:
        """Wait until every trace ended so far is stored: the export queue drained (MLflow's own flush, used only
        where the queue cannot be reached, stops and restarts its export threads: ~1 s)."""
        if not self.n_traces or not self.unstored():
            return
        queue = getattr(getattr(_exporter(), "_async_queue", None), "_queue", None)
        if queue is not None and not _batching():
            queue.join()
        else:
            flush()

    def clean(self, obj: Any) -> Any:
        return _clip(scrub_obj(obj, self.secrets))  # always: credential-shaped values are masked too

    def _start(self, name: str, kind: str, inputs: Any, attributes: dict[str, Any] | None, parent: Any,
               start_time_ns: int | None = None) -> Any:
        import mlflow
        from mlflow.tracing.constant import TraceMetadataKey

        kw: dict[str, Any] = {"span_type": kind, "attributes": self.clean(attributes or {}),
                              "start_time_ns": start_time_ns}
        if inputs is not None:
            kw["inputs"] = self.clean(inputs)
        if parent is not None:
            return mlflow.start_span_no_context(name, parent_span=parent, **kw)
        live = mlflow.start_span_no_context(name, experiment_id=self.experiment_id,
                                            metadata={TraceMetadataKey.SOURCE_RUN: self.run_id}, **kw)
        self.n_traces += 1
        return live

    def _warn(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.warning("MLflow tracing unavailable, continuing untraced: %s", exc)

    @contextlib.contextmanager
    def span(self, name: str, kind: str = observability.CHAIN, inputs: Any = None,
             attributes: dict[str, Any] | None = None) -> Iterator[Any]:
        parent = self._nesting.parent()
        try:
            live = self._start(name, kind, inputs, attributes, parent)
        except Exception as exc:  # noqa: BLE001 - tracing must never stop a run
            self._warn(exc)
            yield observability.NO_SPAN
            return
        with self._nesting.entered(live, parent):
            try:
                yield _Span(live, self)
            except BaseException as exc:
                _record_exception(live, exc)
                raise
            finally:
                try:
                    live.end()
                except Exception as exc:  # noqa: BLE001
                    log.debug("could not end span %s: %s", name, exc)

    def replay(self, traces: list[observability.RecordedSpan]) -> None:
        """Traces kept as data before this run existed (``observability.SpanBuffer``), written into it with the
        times they were recorded at."""
        for root in traces:
            try:
                self._replay(root, None)
            except Exception as exc:  # noqa: BLE001 - tracing must never stop a run
                self._warn(exc)

    def _replay(self, rec: observability.RecordedSpan, parent: Any) -> None:
        live = self._start(rec.name, rec.kind, rec.inputs, rec.attributes, parent, start_time_ns=rec.start_ns)
        try:
            for child in rec.children:
                self._replay(child, live)
            span = _Span(live, self)
            if rec.outputs is not None:
                span.set_outputs(rec.outputs)
            if rec.token_usage is not None:
                span.set_token_usage(*rec.token_usage)
            if rec.error is not None:
                _record_exception(live, rec.error)
        finally:
            live.end(end_time_ns=rec.end_ns or None)


def _record_exception(live: Any, exc: BaseException) -> None:
    with contextlib.suppress(Exception):
        live.record_exception(exc if isinstance(exc, Exception) else Exception(repr(exc)))


def _batching() -> bool:
    """Whether MLflow's span processor batches spans before they reach the exporter (they then wait unseen)."""
    try:
        from mlflow.tracing.provider import _get_span_processor

        return getattr(_get_span_processor(), "_batch_delegate", None) is not None
    except Exception:  # noqa: BLE001
        return True


def _exporter() -> Any:
    """The active MLflow span exporter (None without one, or in an MLflow without this internal)."""
    try:
        from mlflow.tracing.provider import _get_trace_exporter

        return _get_trace_exporter()
    except Exception:  # noqa: BLE001
        return None


def flush() -> float:
    """Wait for traces still in MLflow's asynchronous export queue; returns the seconds waited."""
    import mlflow

    t0 = time.perf_counter()
    try:
        mlflow.flush_trace_async_logging()
    except Exception as exc:  # noqa: BLE001
        log.warning("flushing MLflow traces failed: %s", exc)
    return time.perf_counter() - t0


@contextlib.contextmanager
def run_tracer(run_id: str, experiment_id: str, secrets: list[str] | None = None, *,
               enabled: bool = True) -> Iterator[MlflowTracer | None]:
    """Record every ``observability.span`` as MLflow traces of ``run_id`` inside the block (nothing when
    ``enabled`` is false); the export queue is flushed on the way out, so the run's traces are stored when
    the run ends."""
    if not enabled:
        yield None
        return
    import os

    tracer = MlflowTracer(run_id, experiment_id, secrets)
    # MLflow scans every span input/output twice for base64 images/audio to store as attachments (a JSON
    # round trip of each value): our spans carry text only, and the scan was most of the tracing cost on
    # RETRIEVER spans with ~200 documents. A value the user set wins.
    own_env = ATTACHMENTS_ENV not in os.environ
    if own_env:
        os.environ[ATTACHMENTS_ENV] = "false"
    # spans handed to the exporter as they end (no batching span processor in front of it) and one export thread,
    # so traces are stored in the order their questions ended (MlflowTracer.unstored); MLflow reads both when it
    # creates its exporter, at the process's first span
    os.environ.setdefault(BATCH_ENV, "false")
    os.environ.setdefault(EXPORT_WORKERS_ENV, "1")
    try:
        with observability.installed(tracer):
            yield tracer
    finally:
        if tracer.n_traces:
            flush()
        if own_env:
            os.environ.pop(ATTACHMENTS_ENV, None)

