"""Runs: what one run is (:class:`RunRequest`), running it resumably as one MLflow run (:func:`run_experiment`) and
what it returns (:class:`RunSummary`); answering one question, budgets, checkpoints, run identity, and
the comparison reports (:mod:`hublab.experiment.comparison`).

The names are imported on first use: the runner loads the pipeline and tracking layers, and a module that
needs only ``request.py`` or ``checkpoint.py`` should not pay for them."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__all__ = ["OnQuestion", "RunRequest", "RunSummary", "run_experiment"]

#: each public name → the module that defines it
_HOMES = {"OnQuestion": "runner", "RunRequest": "request", "RunSummary": "runner", "run_experiment": "runner"}

if TYPE_CHECKING:  # pragma: no cover
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import OnQuestion, RunSummary, run_experiment


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        from importlib import import_module

        return getattr(import_module(f"{__name__}.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
