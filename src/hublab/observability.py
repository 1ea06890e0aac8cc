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
from collections.abc import Iterator
from contextlib import AbstractContextManager as ContextManager
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
