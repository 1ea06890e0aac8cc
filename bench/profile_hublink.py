"""Profile warm LLM-free HubLink retrieval on the project's built index (cProfile).

    PYTHONPATH=src .venv/bin/python bench/profile_hublink.py [--graph gv3_orkg] [--limit 40] [--repeat 3] [--top 25]

Builds the retriever of ``pipelines/hublink_local.yaml`` on the project's index (``hublab index`` /
``dvc repro``), warms it up (model, path records, exact mirror) on every question once, then
* times ``--repeat`` passes over the first ``--limit`` questions (wall and process-CPU time per question:
  median and p95 of the per-question median over the passes; CPU time is far less sensitive to other load
  on the machine than wall time),
* runs one pass under cProfile and prints the total number of Python function calls (deterministic for the
  same inputs and code: a load-independent measure of the work done) and the top entries by own time.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):
    sys.path.insert(0, str(ROOT / "src"))

from hublab.env import apply_offline_defaults  # noqa: E402

apply_offline_defaults()


def p95(xs: list[float]) -> float:
    xs = sorted(xs)
    return xs[int(0.95 * (len(xs) - 1))]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--graph", default="gv3_orkg")
    ap.add_argument("--dataset", default=None)
    ap.add_argument("--pipeline", default=str(ROOT / "pipelines" / "hublink_local.yaml"))
    ap.add_argument("--limit", type=int, default=40)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--top", type=int, default=25)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--stats-out", default=None, help="write the raw cProfile stats here")
    args = ap.parse_args()

    sys.path.insert(0, str(ROOT / "bench"))
    from hublink_equivalence import build

    from hublab.datasets.catalog import load_dataset

    st, retr = build(args.pipeline, args.graph)
    pairs = load_dataset(st, args.dataset or args.graph)[: args.limit]

    def one(p):
        return retr.retrieve(p.question, p.topic_entity_id, p.topic_entity_value)

    for p in pairs:  # warm-up: model, embedding cache, path records, mirror
        one(p)
    wall: list[list[float]] = [[] for _ in pairs]
    cpu: list[list[float]] = [[] for _ in pairs]
    for _ in range(args.repeat):
        for i, p in enumerate(pairs):
            t, c = time.perf_counter(), time.process_time()
            one(p)
            cpu[i].append(time.process_time() - c)
            wall[i].append(time.perf_counter() - t)
    w = [statistics.median(x) for x in wall]
    c = [statistics.median(x) for x in cpu]
    print(f"{len(pairs)} questions ({args.graph}), {args.repeat} passes, warm")
    print(f"wall s/question: median {statistics.median(w):.4f}  p95 {p95(w):.4f}")
    print(f"CPU  s/question: median {statistics.median(c):.4f}  p95 {p95(c):.4f}  (target 0.05)")
    prof = cProfile.Profile()
    prof.enable()
    for p in pairs:
        one(p)
    prof.disable()
    stats = pstats.Stats(prof)
    print(f"cProfile, one pass: {stats.total_calls} function calls ({stats.prim_calls} primitive), "
          f"{stats.total_calls / len(pairs):.0f} per question; {stats.total_tt:.2f} s profiled")
    if args.stats_out:
        stats.dump_stats(args.stats_out)
    buf = io.StringIO()
    pstats.Stats(prof, stream=buf).strip_dirs().sort_stats(args.sort).print_stats(args.top)
    print(buf.getvalue())


if __name__ == "__main__":
    main()
