"""Overhead of MLflow tracing on an LLM-free ``hublab run`` (docs/runner.md, "Traces").

    HUBLAB_ROOT=PROJECT .venv/bin/python bench/bench_tracing.py [--limit 20] [--repeats 2] [--modes trace,no-trace]

PROJECT is a HubLab project with the gv3_orkg snapshot, dataset and HubLink index built (``dvc repro index`` or a
copy of ``data/`` and ``models/``). One process: a warm-up question first (models, graph, index loaded), then per
repeat and mode a fresh run (``resume=False``) of the first ``--limit`` questions of gv3_orkg with
``pipelines/hublink_local.yaml``, no CodeCarbon. Prints, per mode, the wall time of ``run_experiment`` and the
median per-question pipeline runtime. Mode ``trace`` needs a checkout with tracing; ``no-trace`` on an older
checkout (``PYTHONPATH=<other>/src``) measures the code before tracing existed.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--modes", default="trace,no-trace")
    ap.add_argument("--pipeline", default=str(ROOT / "pipelines" / "hublink_local.yaml"))
    ap.add_argument("--paired", action="store_true",
                    help="each question untraced and traced, alternating order, one pipeline")
    args = ap.parse_args()

    from hublab.env import apply_offline_defaults

    apply_offline_defaults()
    import hublab
    from hublab.experiment.runner import run_experiment
    from hublab.pipeline.config import load_pipeline

    cfg = load_pipeline(args.pipeline)
    if args.paired:
        paired(cfg, args.limit, args.repeats)
        return
    # a run's options live on RunRequest; older checkouts took them as run_experiment's own parameters
    try:
        from hublab.experiment.request import RunRequest

        has_trace = "trace" in inspect.signature(RunRequest).parameters
    except ImportError:
        RunRequest = None  # type: ignore[assignment,misc]
        has_trace = "trace" in inspect.signature(run_experiment).parameters
    print(f"hublab from {Path(hublab.__file__).parent}; tracing support: {has_trace}", file=sys.stderr)

    def once(mode: str, limit: int, experiment: str) -> tuple[float, list[float]]:
        kw = {"trace": mode == "trace"} if has_trace else {}
        if mode == "trace" and not has_trace:
            raise SystemExit("this checkout has no tracing")
        t0 = time.perf_counter()
        options = {"limit": limit, "experiment": experiment, "resume": False, "progress": False,
                   "track_carbon": False, **kw}
        if RunRequest is None:  # an older checkout: run_experiment's own parameters were the only form
            s = run_experiment(cfg, "gv3_orkg", "gv3_orkg", **options)
        else:
            s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", **options))
        return time.perf_counter() - t0, [r["runtime"] for r in s.per_question if r.get("runtime") is not None]

    once("no-trace", 1, "bench-tracing-warmup")
    results: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.repeats):
        for mode in args.modes.split(","):
            wall, per_q = once(mode, args.limit, f"bench-tracing-{mode}")
            r = results.setdefault(mode, {"wall_s": [], "median_question_s": []})
            r["wall_s"].append(round(wall, 2))
            r["median_question_s"].append(round(statistics.median(per_q), 3))
    print(json.dumps({"limit": args.limit, "tracing_support": has_trace, "results": results}, indent=1))


def paired(cfg, limit: int, repeats: int) -> None:
    """Per question, the runner's ``run_question`` untraced and traced (order alternating), on one loaded
    pipeline, inside one MLflow run; then the wait for the export queue."""
    import mlflow

    from hublab import observability
    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset
    from hublab.experiment.question import run_question
    from hublab.pipeline.pipeline import build_pipeline
    from hublab.tracking import mlflow_log, traces

    st = settings()
    pairs = load_dataset(st, "gv3_orkg")[:limit]
    pipe = build_pipeline(cfg, "gv3_orkg", st)
    run_question(pipe, None, 0, pairs[0], 10)  # warm-up: models, graph, index
    exp = mlflow_log.setup(st.root, "bench-tracing-paired")
    off: list[float] = []
    on: list[float] = []
    with mlflow.start_run(experiment_id=exp) as run, \
            traces.run_tracer(run.info.run_id, exp) as tracer:
        for _ in range(repeats):
            for i, p in enumerate(pairs):
                for traced in ((False, True) if i % 2 == 0 else (True, False)):
                    with observability.installed(tracer if traced else None):
                        t0 = time.perf_counter()
                        run_question(pipe, None, i, p, 10)
                        (on if traced else off).append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        traces.flush()
        flush_s = time.perf_counter() - t0
    diffs = [b - a for a, b in zip(off, on, strict=True)]
    print(json.dumps({"questions": len(pairs), "repeats": repeats, "untraced_total_s": round(sum(off), 2),
                      "traced_total_s": round(sum(on), 2), "median_overhead_per_question_s":
                      round(statistics.median(diffs), 4), "mean_overhead_per_question_s":
                      round(statistics.mean(diffs), 4), "final_flush_s": round(flush_s, 2),
                      "n_traces": tracer.n_traces, "untraced_s": [round(x, 3) for x in off],
                      "traced_s": [round(x, 3) for x in on]}, indent=1))


if __name__ == "__main__":
    main()
