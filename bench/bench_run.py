"""What a user's ``hublab run`` costs: start-up before the first question, seconds per question, and the same
questions timed warm in one process through the run's own per-question code (issue #28).

    .venv/bin/python bench/bench_run.py [--pipeline hublink_local] [--graph gv3_orkg] [--dataset gv3_orkg]
        [--limits 10,60] [--repeats 3] [--in-process-limit 60] [--json reports/bench/run.json]

1. **The command** (cold processes): ``hublab run PIPELINE --graph G --dataset D --limit N --no-resume --no-carbon
   --no-trace`` for each N, on the project's built index (``dvc repro`` or the quick start builds it). Per N: wall
   and CPU time of the process, **start-up** = the moment its first question's record reaches the run's checkpoint
   minus that question's own runtime and the MLflow run's opening, which comes between the two since issue #43
   (``tracking_open_s``): imports, graph, embedder, store, everything before the first question starts; and the
   run's own mean per-question runtime. The **slope** between the two limits is the marginal
   cost of a question in the command (each limit run ``--repeats`` times, the median run kept).
2. **Warm, in-process**: the same pipeline built the way the run builds it (``build_pipeline``: same resources,
   same store class, same strategy selection), one warm-up question, then each question through
   ``hublab.experiment.question.run_question`` and a checkpoint append (what the runner does per question, the
   fsync included), wall and CPU time, for the pipeline's
   strategy and for the other one (HubLink: traversal when a topic entity is given, or direct always).

Prints a table and the ratio of the command's slope to the warm mean (the two agree when it is near 1). Runs are
logged to the MLflow experiment ``hublab-bench`` (not your experiments). A benchmark, not a test: wall time moves
with the machine's load; CPU time much less.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT / "src"))

from hublab.env import apply_offline_defaults  # noqa: E402

apply_offline_defaults()
EXPERIMENT = "hublab-bench"


def _newest_checkpoint(since: float) -> Path | None:
    runs = ROOT / "outputs" / "runs"
    found = [p for p in runs.glob("*/predictions.jsonl") if p.stat().st_mtime >= since] if runs.is_dir() else []
    return max(found, key=lambda p: p.stat().st_mtime) if found else None


def time_command(pipeline: str, graph: str, dataset: str, limit: int) -> dict[str, float]:
    """One cold ``hublab run`` process: wall, CPU, start-up before the first question, mean runtime per question."""
    out = ROOT / ".cache" / "bench" / f"run_{limit}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = [str(ROOT / ".venv" / "bin" / "hublab"), "run", pipeline, "--graph", graph, "--dataset", dataset,
           "--limit", str(limit), "--no-resume", "--no-carbon", "--no-trace", "--experiment", EXPERIMENT,
           "--output", str(out)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    since = time.time() - 1.0  # mtime resolution
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    first_at: float | None = None
    first_runtime = 0.0
    while proc.poll() is None:
        if first_at is None:
            ckpt = _newest_checkpoint(since)
            line = ckpt.read_text().split("\n", 1)[0] if ckpt else ""
            if line.strip():
                first_at = time.perf_counter() - t0
                first_runtime = float(json.loads(line).get("runtime") or 0.0)
        time.sleep(0.02)
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"`{' '.join(cmd)}` exited {proc.returncode}:\n{proc.stderr.read()[-2000:]}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    metrics = json.loads(out.read_text())
    return {"limit": limit, "wall_s": round(wall, 2),
            "cpu_s": round(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, 2),
            "startup_s": (round(first_at - first_runtime - float(metrics.get("tracking_open_s") or 0.0), 2)
                          if first_at is not None else float("nan")),
            "run_mean_runtime_s": round(float(metrics.get("runtime", float("nan"))), 4)}


def time_in_process(pipeline: str, graph: str, dataset: str, limit: int) -> dict[str, dict[str, float]]:
    """Warm per-question wall/CPU time through the runner's per-question code, for each strategy."""
    import dataclasses
    import shutil
    import tempfile

    from hublab.config import settings as load_settings
    from hublab.datasets.catalog import load_dataset
    from hublab.experiment.checkpoint import Checkpoint
    from hublab.experiment.question import run_question
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.pipeline import build_pipeline

    st = load_settings(ROOT)
    cfg = load_pipeline(st.pipeline_file(pipeline))
    pairs = load_dataset(st, dataset)[:limit]
    pipe = build_pipeline(cfg, graph, st)
    pipe.retriever.ensure_ready(progress=False)
    k = int(cfg.evaluation.get("k", 10))
    retr = pipe.retriever
    # HubLink's strategy is its parameter ``use_topic_if_given`` (traversal from a given topic entity, else direct)
    configured = getattr(retr.config, "use_topic_if_given", None)
    strategies = {"as configured": configured}
    if configured is not None:
        strategies["traversal" if not configured else "direct"] = not configured
    out: dict[str, dict[str, float]] = {}
    for name, use_topic in strategies.items():
        if use_topic is not None:
            retr.config = dataclasses.replace(retr.config, use_topic_if_given=use_topic)
        run_question(pipe, None, 0, pairs[0], k)  # warm-up: first-search caches, model load
        wall, cpu, maps = [], [], []
        ckpt = Checkpoint(Path(tempfile.mkdtemp(prefix="bench_run_ckpt_")))
        for i, p in enumerate(pairs):  # what the runner does per question: answer it, checkpoint it (fsync'ed)
            t, c = time.perf_counter(), time.process_time()
            rec = run_question(pipe, None, i, p, k)
            ckpt.append(rec)
            cpu.append(time.process_time() - c)
            wall.append(time.perf_counter() - t)
            maps.append(rec["metrics"].get("map_at_10_triples", float("nan")))
        shutil.rmtree(ckpt.dir, ignore_errors=True)
        wall.sort()
        cpu.sort()
        label = name if use_topic is None else f"{name} ({'traversal' if use_topic else 'direct'})"
        out[label] = {"questions": len(pairs), "wall_mean_s": round(statistics.mean(wall), 4),
                      "wall_median_s": round(statistics.median(wall), 4),
                      "wall_p95_s": round(wall[int(0.95 * (len(wall) - 1))], 4),
                      "cpu_mean_s": round(statistics.mean(cpu), 4),
                      "map_at_10_triples": round(statistics.mean(maps), 4)}
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipeline", default="hublink_local")
    ap.add_argument("--graph", default="gv3_orkg")
    ap.add_argument("--dataset", default="gv3_orkg")
    ap.add_argument("--limits", default="10,60", help="two question counts for the command's slope")
    ap.add_argument("--in-process-limit", type=int, default=60)
    ap.add_argument("--repeats", type=int, default=3, help="command runs per limit (the median run is kept)")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args()
    lo, hi = (int(x) for x in args.limits.split(","))
    # each limit timed --repeats times, the run of median wall time kept: start-up and the end of a run (MLflow,
    # artifacts) vary by ~0.5 s each on this machine, which moves a slope over 50 questions by ~0.01-0.02 s/question
    runs = {n: sorted((time_command(args.pipeline, args.graph, args.dataset, n) for _ in range(args.repeats)),
                      key=lambda c: c["wall_s"]) for n in (lo, hi)}
    cmd = [{**runs[n][len(runs[n]) // 2], "wall_s_all": [c["wall_s"] for c in runs[n]]} for n in (lo, hi)]
    slope = (cmd[1]["wall_s"] - cmd[0]["wall_s"]) / (hi - lo)
    cpu_slope = (cmd[1]["cpu_s"] - cmd[0]["cpu_s"]) / (hi - lo)
    warm = time_in_process(args.pipeline, args.graph, args.dataset, args.in_process_limit)
    configured = next(iter(warm.values()))
    from machine import machine  # bench/machine.py, beside this script

    result = {"machine": machine(), "pipeline": args.pipeline, "graph": args.graph, "dataset": args.dataset,
              "command": cmd,
              "command_slope_s_per_question": round(slope, 4), "command_cpu_slope_s_per_question": round(cpu_slope, 4),
              "in_process": warm, "slope_over_warm_mean": round(slope / configured["wall_mean_s"], 2)}
    print(json.dumps(result, indent=1))
    print(f"\n`hublab run {args.pipeline} --graph {args.graph} --dataset {args.dataset}` (cold process, --no-trace):")
    for c in cmd:
        print(f"  --limit {c['limit']:>3}: wall {c['wall_s']:6.2f} s, CPU {c['cpu_s']:6.2f} s, start-up before the "
              f"first question {c['startup_s']:5.2f} s, the run's own mean runtime {c['run_mean_runtime_s']:.3f} s/q")
    print(f"  slope {lo}→{hi}: {slope:.3f} s/question wall, {cpu_slope:.3f} s CPU")
    print(f"warm, in-process ({args.in_process_limit} questions, the runner's per-question code):")
    for name, o in warm.items():
        print(f"  {name:28s} mean {o['wall_mean_s']:.3f} s (CPU {o['cpu_mean_s']:.3f}), median {o['wall_median_s']:.3f}"
              f", p95 {o['wall_p95_s']:.3f}; MAP@10 {o['map_at_10_triples']:.4f}")
    print(f"command slope / warm mean: {result['slope_over_warm_mean']:.2f}")
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
