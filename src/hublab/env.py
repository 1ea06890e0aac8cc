"""Process-wide offline/telemetry/threading settings. Called by the CLI and tests before heavy imports."""

from __future__ import annotations

import os

OFFLINE_DEFAULTS = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "MLFLOW_DISABLE_TELEMETRY": "true",
    "RAGAS_DO_NOT_TRACK": "true",
    "DO_NOT_TRACK": "true",
    "DVC_NO_ANALYTICS": "1",
    "TOKENIZERS_PARALLELISM": "false",
    "MLFLOW_SERVER_ENABLE_JOB_EXECUTION": "false",
    # numpy's BLAS scores the exact vector search; its last bits depend on the thread count (from ~400 rows),
    # which re-orders exact ties between machines. One thread gives the same numbers on 2 or 64 cores, and is
    # also faster for HubLab's small products (direct strategy, median: 0.092 s/question with
    # 2 threads, 0.030 with 1 on 2 cores; bench/bench_hublink.py).
    # Torch (embeddings) keeps its own threads.
    "OPENBLAS_NUM_THREADS": "1",
}


def apply_offline_defaults() -> None:
    """Set offline/no-telemetry env vars unless the user already chose otherwise."""
    user_blas = "OPENBLAS_NUM_THREADS" in os.environ
    for key, value in OFFLINE_DEFAULTS.items():
        os.environ.setdefault(key, value)
    if not user_blas:
        _limit_loaded_blas(int(OFFLINE_DEFAULTS["OPENBLAS_NUM_THREADS"]))


def _limit_loaded_blas(threads: int) -> None:
    """The env var only acts on a BLAS loaded after it is set: limit one numpy already loaded (tests, notebooks)."""
    import sys

    if "numpy" not in sys.modules:
        return
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - threadpoolctl comes with scikit-learn (sentence-transformers)
        return
    threadpool_limits(limits=threads, user_api="blas")
