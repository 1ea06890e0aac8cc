"""A tiny span hook, no-op by default: code anywhere in the pipeline marks what it does without knowing who
(if anyone) records it.

Retrievers, LLM backends and the pipeline depend only on this module, never on MLflow or ``hublab.tracking``
(data flows config → data → index → retrieval → evaluation → tracking). ``hublab.tracking.traces`` installs an
MLflow-backed tracer while a tracked run executes its questions; otherwise every ``span(...)`` returns one shared
no-op context manager (a global read and a call: nothing is built, nothing is recorded).

    with observability.span("retrieve", observability.RETRIEVER, inputs={"question": q}) as sp:
        result = ...
        if sp.recording:  # build expensive outputs only when someone records them
            sp.set_outputs([...])
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol

# Span kinds (the strings are MLflow's span types, so the MLflow tracer passes them through unchanged)
CHAIN = "CHAIN"
RETRIEVER = "RETRIEVER"
LLM = "LLM"
CHAT_MODEL = "CHAT_MODEL"
PARSER = "PARSER"
EMBEDDING = "EMBEDDING"
UNKNOWN = "UNKNOWN"


class Span(Protocol):
    recording: bool

    def set_inputs(self, inputs: Any) -> None: ...

    def set_outputs(self, outputs: Any) -> None: ...

    def set_attributes(self, attributes: dict[str, Any]) -> None: ...

    def set_token_usage(self, input_tokens: int, output_tokens: int) -> None: ...


class Tracer(Protocol):
    def span(self, name: str, kind: str, inputs: Any, attributes: dict[str, Any] | None) -> ContextManager[Span]:
        ...


class _NoSpan:
    """What ``span`` yields when nothing records: every method does nothing."""

    recording = False

    def set_inputs(self, inputs: Any) -> None:
        pass

    def set_outputs(self, outputs: Any) -> None:
        pass

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        pass

    def set_token_usage(self, input_tokens: int, output_tokens: int) -> None:
        pass


NO_SPAN = _NoSpan()
_NULL = contextlib.nullcontext(NO_SPAN)  # reusable: nullcontext keeps no state between uses
_tracer: Tracer | None = None


def span(name: str, kind: str = CHAIN, inputs: Any = None,
         attributes: dict[str, Any] | None = None) -> ContextManager[Span]:
    """A span around a step: a context manager yielding an object with ``set_inputs``/``set_outputs``/
    ``set_attributes``/``set_token_usage`` and ``recording`` (False when no tracer is installed: skip building
    outputs then)."""
    tracer = _tracer
    if tracer is None:
        return _NULL
    return tracer.span(name, kind, inputs, attributes)


def enabled() -> bool:
    return _tracer is not None


def install(tracer: Tracer | None) -> Tracer | None:
    """Make ``tracer`` record every span from now on (None: back to no-op); returns the previous one."""
    global _tracer
    previous, _tracer = _tracer, tracer
    return previous


@contextlib.contextmanager
def installed(tracer: Tracer | None) -> Iterator[Tracer | None]:
    """``install`` for the duration of a ``with`` block, restoring the previous tracer after."""
    previous = install(tracer)
    try:
        yield tracer
    finally:
        install(previous)


class Nesting:
    """Which span a new span hangs under, for a tracer that records one question at a time: the innermost span open
    in the current context; in a worker thread, which does not inherit context variables from its pool (HubLink's
    parallel partial answers), the innermost span open in the thread that opened the question's root span; else
    none: the new span starts a trace."""

    def __init__(self) -> None:
        self._current: ContextVar[Any] = ContextVar(f"hublab_span_{id(self)}", default=None)
        self._lock = threading.Lock()
        self._owner: int | None = None  # thread that opened the current trace's root span
        self._stack: list[Any] = []  # spans open in that thread, innermost last

    def parent(self) -> Any:
        parent = self._current.get()
        if parent is not None:
            return parent
        with self._lock:
            if self._stack and threading.get_ident() != self._owner:
                return self._stack[-1]
        return None

    @contextlib.contextmanager
    def entered(self, span: Any, parent: Any) -> Iterator[None]:
        """``span`` (opened under ``parent``) is the innermost one of this context inside the block."""
        me = threading.get_ident()
        with self._lock:
            if parent is None:
                self._owner, self._stack = me, []
            owned = me == self._owner
            if owned:
                self._stack.append(span)
        token = self._current.set(span)
        try:
            yield
        finally:
            self._current.reset(token)
            if owned:
                with self._lock:
                    if self._stack and self._stack[-1] is span:
                        self._stack.pop()


@dataclass
class RecordedSpan:
    """A span kept as data (:class:`SpanBuffer`): what a tracer is told about it, with its wall-clock times."""

    name: str
    kind: str
    inputs: Any
    attributes: dict[str, Any]
    start_ns: int
    end_ns: int = 0
    outputs: Any = None
    token_usage: tuple[int, int] | None = None
    error: BaseException | None = None
    children: list[RecordedSpan] = field(default_factory=list)
    recording = True

    def set_inputs(self, inputs: Any) -> None:
        self.inputs = inputs

    def set_outputs(self, outputs: Any) -> None:
        self.outputs = outputs

    def set_attributes(self, attributes: dict[str, Any]) -> None:
        self.attributes = {**self.attributes, **attributes}

    def set_token_usage(self, input_tokens: int, output_tokens: int) -> None:
        self.token_usage = (int(input_tokens), int(output_tokens))


class SpanBuffer:
    """A tracer that keeps every trace as a :class:`RecordedSpan` tree until a real tracer takes them
    (:meth:`take`): ``hublab run`` answers its first question before the tracking store is open, and that
    question's trace is written into the run afterwards, with its own times."""

    def __init__(self) -> None:
        self.traces: list[RecordedSpan] = []
        self._nesting = Nesting()
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def span(self, name: str, kind: str = CHAIN, inputs: Any = None,
             attributes: dict[str, Any] | None = None) -> Iterator[RecordedSpan]:
        parent = self._nesting.parent()
        rec = RecordedSpan(name, kind, inputs, dict(attributes or {}), time.time_ns())
        with self._lock:
            (self.traces if parent is None else parent.children).append(rec)
        with self._nesting.entered(rec, parent):
            try:
                yield rec
            except BaseException as exc:
                rec.error = exc
                raise
            finally:
                rec.end_ns = time.time_ns()

    def take(self) -> list[RecordedSpan]:
        """The traces recorded so far (the buffer is empty after)."""
        with self._lock:
            out, self.traces = self.traces, []
        return out
