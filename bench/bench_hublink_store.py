"""HubLink's time a question with the graph kept on disk against the graph in memory: the same file, the same
pipeline, the same questions, each mode in a process of its own.

    .venv/bin/python bench/bench_hublink_store.py [--graph data/graphs/gv1.ttl] [--dataset data/kgqa/gv1.jsonl]
        [--pipeline hublink_local] [--json reports/bench/hublink_store.json]

Each mode runs in a project folder of its own whose ``params.yaml`` is the repository's with
``user_graphs.store.mode`` set to ``disk`` (HubLab's on-disk store, built from the file first) or ``memory``; the
hashing embedder stands in for MiniLM (no model cost, and what differs between the modes is how the graph is read).
Per mode: seconds to open the graph and to make the index ready (built cold: each project has its own), then
``LoadedPipeline.retrieve`` timed per question (direct strategy: no topic entity), p50/p95, and the process's peak
resident memory. The two modes' retrieved triples are compared question by question: they must be the same.

Why not at 10^6 or 10^7 triples: HubLink indexes ~6 vectors a triple (GV3 ×1: 26,260 for 4,488 triples), so a
10^6-triple graph is ~6 M vectors, beyond Milvus Lite on this 23 GB machine and hours to insert into a Milvus
standalone server on 2 cores (docs/scale.md: 2.6 M vectors took 19 minutes at 7.9 GB). What the store changes
for HubLink is the cost of its graph reads, which this measures.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
from bench_projects import project  # noqa: E402 - bench/ is put on the path above

WORK = ROOT / ".cache" / "bench_hublink_store"
HASH_DIM = 384


def step(mode: str, graph: str, dataset: str, pipeline: str) -> dict:
    """One mode, in this process: the pipeline loaded on the graph (index built), then every question retrieved."""
    import resource

    import hublab
    import hublab.embedding.factory as factory
    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset
    from hublab.embedding.hashing import HashingEmbedder
    from hublab.pipeline.resources import load_graph

    factory.build_embedder = lambda cfg=None, cache_dir=None: HashingEmbedder(HASH_DIM)
    root = WORK / mode
    st = settings(root)
    questions = [p.question for p in load_dataset(st, dataset)]
    t0 = time.perf_counter()
    kept = type(load_graph(graph, st)).__name__
    open_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pipe = hublab.load_pipeline(pipeline, graph, root=root)
    ready_s = time.perf_counter() - t0
    lat, got = [], []
    for q in questions:
        t = time.perf_counter()
        got.append([r.triple for r in pipe.retrieve(q)])
        lat.append(time.perf_counter() - t)
    lat.sort()
    return {"graph_kept_by": kept, "open_s": round(open_s, 1), "index_ready_s": round(ready_s, 1),
            "questions": len(questions), "p50_ms": round(statistics.median(lat) * 1000, 1),
            "p95_ms": round(lat[min(len(lat) - 1, math.ceil(0.95 * len(lat)) - 1)] * 1000, 1),
            "mean_ms": round(statistics.fmean(lat) * 1000, 1),
            "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "retrieved": got}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--graph", default=str(ROOT / "data/graphs/gv1.ttl"))
    ap.add_argument("--dataset", default=str(ROOT / "data/kgqa/gv1.jsonl"))
    ap.add_argument("--pipeline", default="hublink_local")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--step", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.step:
        print(json.dumps(step(args.step, args.graph, args.dataset, args.pipeline)))
        return
    from machine import machine

    modes = {}
    for mode in ("memory", "disk"):
        project(WORK / mode, store_mode=mode, fresh=True)
        proc = subprocess.run([sys.executable, __file__, "--step", mode, "--graph", args.graph, "--dataset",
                               args.dataset, "--pipeline", args.pipeline], cwd=ROOT, capture_output=True, text=True,
                              env={**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"})
        if proc.returncode != 0:
            raise SystemExit(f"{mode}: {proc.stderr[-2000:]}")
        modes[mode] = json.loads(proc.stdout.strip().splitlines()[-1])
        print(json.dumps({k: v for k, v in modes[mode].items() if k != "retrieved"}), file=sys.stderr, flush=True)
    same = modes["memory"].pop("retrieved") == modes["disk"].pop("retrieved")
    result = {"machine": machine(), "graph": str(Path(args.graph).relative_to(ROOT)) if args.graph.startswith(
        str(ROOT)) else args.graph, "pipeline": args.pipeline, "embedder": f"hash{HASH_DIM}", "modes": modes,
        "same_triples": same}
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
