"""Process-wide offline/telemetry/threading settings. Called by the CLI and tests before heavy imports."""

from __future__ import annotations

import gc
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
    """Set offline/no-telemetry env vars unless the user already chose otherwise; every log record scrubbed."""
    from hublab.redact import scrub_log_records

    scrub_log_records()
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


#: What the command line sets once at start-up (the user's own values win): normal output is HubLab's, not its
#: libraries' logs. gRPC's C core logs to stderr below Python (GOAWAY ``too_many_pings`` from the Milvus Lite
#: server's keepalive policy, fork-handler notices), which no Python filter reaches; ``GRPC_VERBOSITY=ERROR``
#: brings them back. Transformers' per-tensor "Loading weights" bar and load reports are progress of a model
#: load that takes seconds, not of HubLab's work (index builds show their own bar, ``hublab.progress``).
CLI_QUIET_DEFAULTS = {
    "GRPC_VERBOSITY": "NONE",
    "HF_HUB_DISABLE_PROGRESS_BARS": "1",
    "TRANSFORMERS_VERBOSITY": "error",
    # MLflow's own INFO lines ("Creating initial MLflow database tables...", "Experiment ... does not exist.
    # Creating a new experiment."): read by MLflow when it is imported; ``-v/--verbose`` brings them back
    "MLFLOW_LOGGING_LEVEL": "WARNING",
    # "🏃 View run … at: <url>" written to stdout for every run ended on a tracking server (a comparison ends one per
    # row): it broke `--json` output; hublab prints the run links it means itself
    "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    # CodeCarbon's "offline tracker init" and "Multiple instances ... allowed" lines on every run: its logger reads
    # this before a tracker's own log_level applies
    "CODECARBON_LOG_LEVEL": "error",
}
#: libraries whose INFO lines are their own progress, not HubLab's results: WARNING unless ``-v/--verbose``
LIBRARY_LOGGERS = ("mlflow", "alembic", "optuna", "httpx", "matplotlib")
#: the modules that draw HubLab's figures with matplotlib (optuna's plots and the parameter importances behind
#: them, the comparison chart): their UserWarnings (tight_layout, colorbar axes, "Parameter importances will be
#: equal") are about a PNG artifact, not the run; shown with ``-v/--verbose``
PLOT_WARNING_MODULES = r"(matplotlib|optuna\.visualization|optuna\.importance|hublab\.tuning\.report" \
                       r"|hublab\.experiment\.comparison|hublab\.tracking\.artifacts)(\.|$)"
#: Optuna's ExperimentalWarning text (``optuna._experimental``): matched by message, so that setting the filter
#: does not import Optuna (``hublab --help`` stays fast)
OPTUNA_EXPERIMENTAL = r".*(is experimental \(supported from v|is an experimental (feature|CLI command))"
#: the same plotting warnings as ``PYTHONWARNINGS`` entries (a message's start, as that variable takes them), for the
#: processes a command spawns (``tune-all --jobs``, ``compare --jobs``): they start without this module's filters
PLOT_WARNING_ENV = ("ignore:optuna.visualization", "ignore:Attempting to set identical low and high",
                    "ignore:Target and region quantiles select the same set of trials")
#: MLflow INFO lines that are not about the user's run (printed at exit of every traced run)
_QUIET_LOGGERS = ("mlflow.tracing.export.async_export_queue",)


def quiet_cli() -> None:
    """Set :data:`CLI_QUIET_DEFAULTS` (unless already set) and the warning/log filters, before heavy imports."""
    import logging
    import warnings

    for key, value in CLI_QUIET_DEFAULTS.items():
        os.environ.setdefault(key, value)
    warnings.filterwarnings("ignore", message=OPTUNA_EXPERIMENTAL)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    set_verbosity(False)


def set_verbosity(verbose: bool) -> None:
    """Quiet (the default of the command line and the examples): libraries' INFO lines and the plotting code's
    layout warnings off, unless the user set ``MLFLOW_LOGGING_LEVEL`` themselves. ``verbose`` (``-v/--verbose``):
    INFO lines of HubLab and its libraries on stderr, and every warning."""
    import logging
    import warnings

    if verbose:
        os.environ["MLFLOW_LOGGING_LEVEL"] = "INFO"
        os.environ["CODECARBON_LOG_LEVEL"] = "info"
        for name in (*LIBRARY_LOGGERS, *_QUIET_LOGGERS):
            logging.getLogger(name).setLevel(logging.INFO)
        logging.getLogger("matplotlib").setLevel(logging.WARNING)  # its INFO/DEBUG is font-cache chatter
        log = logging.getLogger("hublab")
        log.setLevel(logging.INFO)
        if not any(getattr(h, "_hublab_verbose", False) for h in log.handlers):
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(asctime)s INFO %(name)s: %(message)s", "%Y/%m/%d %H:%M:%S"))
            handler._hublab_verbose = True  # type: ignore[attr-defined]
            log.addHandler(handler)
        warnings.filterwarnings("default", category=UserWarning, module=PLOT_WARNING_MODULES)
        _spawned_warnings(quiet=False)
        return
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    level = os.environ["MLFLOW_LOGGING_LEVEL"].upper()
    logging.getLogger("mlflow").setLevel(level if level in logging.getLevelNamesMapping() else logging.WARNING)
    for name in LIBRARY_LOGGERS[1:]:
        logging.getLogger(name).setLevel(logging.ERROR if name == "matplotlib" else logging.WARNING)
    warnings.filterwarnings("ignore", category=UserWarning, module=PLOT_WARNING_MODULES)
    _spawned_warnings(quiet=True)


def _spawned_warnings(*, quiet: bool) -> None:
    """Add (or, verbose, take out) :data:`PLOT_WARNING_ENV` in ``PYTHONWARNINGS``, keeping the user's own entries."""
    mine = [e for e in os.environ.get("PYTHONWARNINGS", "").split(",") if e and e not in PLOT_WARNING_ENV]
    entries = [*mine, *PLOT_WARNING_ENV] if quiet else mine
    if entries:
        os.environ["PYTHONWARNINGS"] = ",".join(entries)
    else:
        os.environ.pop("PYTHONWARNINGS", None)


#: CPython scans its youngest generation every 700 new container objects, and the older ones every 10 scans of the
#: younger: while a command starts (imports, the graph, the pipeline: about a million objects, all kept) it scanned
#: a growing heap again and again and freed almost nothing (~0.2 s before ``hublab run``'s first question on 2
#: cores). Until :func:`settle_heap`, the youngest generation is scanned every this many objects.
START_GC_THRESHOLD = 100_000
_saved_threshold: tuple[int, int, int] | None = None


def quick_start_gc() -> None:
    """Fewer collections while the command starts (:data:`START_GC_THRESHOLD`), until :func:`settle_heap`."""
    global _saved_threshold
    gen0, gen1, gen2 = gc.get_threshold()
    if _saved_threshold is None and 0 < gen0 < START_GC_THRESHOLD:
        _saved_threshold = (gen0, gen1, gen2)
        gc.set_threshold(START_GC_THRESHOLD, gen1, gen2)


def settle_heap() -> None:
    """Start-up is over: what exists now (modules, the graph, the pipeline and its index) stays until the run ends,
    so it leaves the collector's scans (``gc.freeze``), and the start's threshold is undone. Without it a full
    collection in the middle of a run scanned all of it (~0.25 s, on the tenth question of ``--limit 10``)."""
    global _saved_threshold
    gc.freeze()
    if _saved_threshold is not None:
        gc.set_threshold(*_saved_threshold)
        _saved_threshold = None


def release_heap() -> None:
    """The run is over: what :func:`settle_heap` froze is collectable again (a tuning process runs many)."""
    gc.unfreeze()
