"""HubLab: MLOps-tracked experimentation platform for LLM retrieval over research knowledge graphs.

The Python API (``hublab.api``): ``load_pipeline``, ``run``, ``evaluate``, ``compare`` and the types they
return. They are imported on first use, so ``import hublab`` stays instant and the command line loads only what
a command needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"
__all__ = ["LoadedPipeline", "RankedTriple", "RunResult", "__version__", "compare", "evaluate", "load_pipeline",
           "run"]

if TYPE_CHECKING:  # pragma: no cover
    from hublab.api import LoadedPipeline, RankedTriple, RunResult, compare, evaluate, load_pipeline, run


def __getattr__(name: str) -> Any:
    if name in __all__ and name != "__version__":
        from hublab import api

        return getattr(api, name)
    raise AttributeError(f"module 'hublab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
