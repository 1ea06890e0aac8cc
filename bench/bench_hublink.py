"""HubLink benchmark on the real ORKG GV3 export, LLM-free (issue #4 targets).

    .venv/bin/python bench/bench_hublink.py [--graph-file EXPORT.json|GRAPH.ttl] [--dataset-csv KGQA.csv] [--limit N]
        [--fresh | --fresh-index]

Prints index build time and vectors/s, peak RSS, retrieval latency (median, p95; wall and process CPU time)
for the direct and the traversal strategy next to the 0.05 s/question target, and Recall (full list) / MAP@10
with the thesis's definitions. Uses a scratch project under .cache/bench so it never touches your real index.
A benchmark, not a test: on a shared machine wall time moves with the load, CPU time much less; for a profile
of where the time goes see bench/profile_hublink.py.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import sys
import time
from pathlib import Path

TARGET_S = 0.05  # s/question, LLM-free retrieval on 2 cores (median)

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):  # PYTHONPATH=<other checkout>/src measures that revision's code
    sys.path.insert(0, str(ROOT / "src"))

from hublab.env import apply_offline_defaults  # noqa: E402

apply_offline_defaults()


def metrics(retrieved: list[str], golden: list[str]) -> tuple[float, float]:
    try:
        from hublab.evaluation import names
        from hublab.evaluation.retrieval import retrieval_metrics

        m = retrieval_metrics(retrieved, golden, k=10)
        return m[names.RECALL], m[names.MAP_AT_10]
    except ImportError:  # thesis definitions, as a fallback
        g = set(golden)
        recall = len(set(retrieved) & g) / len(g) if g else float(not retrieved)
        found: set[str] = set()
        ap = 0.0
        for i, r in enumerate(retrieved[:10], start=1):
            hit = next((x for x in golden if x not in found and x.lower() in r.lower()), None)
            if hit:
                found.add(hit)
                ap += len(found) / i
        return recall, ap / min(len(golden), 10) if golden else 0.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--fresh", action="store_true", help="drop the scratch project first (measure a cold build)")
    ap.add_argument("--fresh-index", action="store_true",
                    help="drop only the scratch index (a real build from cached embeddings: what follows a build)")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--graph-file", default=None, help="ORKG export JSON (default: GV3 in --shared)")
    ap.add_argument("--dataset-csv", default=None, help="KGQA CSV (default: <shared>/data/kgqa/flat_distributed.csv)")
    ap.add_argument("--pipeline", default=str(ROOT / "pipelines" / "hublink_local.yaml"))
    args = ap.parse_args()
    shared = Path(args.shared)
    graph_file = Path(args.graph_file or shared / "data/orkg/gv3_flat_distributed.json")
    dataset_csv = Path(args.dataset_csv or shared / "data/kgqa/flat_distributed.csv")
    work = ROOT / ".cache" / "bench"
    if args.fresh and work.exists():
        shutil.rmtree(work)
    if args.fresh_index and (work / "models").exists():
        shutil.rmtree(work / "models")
    work.mkdir(parents=True, exist_ok=True)

    from hublab.config import Settings
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.resources import build_resources
    from hublab.retrievers.registry import build_retriever

    snap = work / "data" / "snapshots" / "gv3_orkg.ttl"
    if not snap.exists():
        RdfKnowledgeGraph.load(graph_file).save(snap)
    params = {"paths": {"snapshots": "data/snapshots", "graphs": "data/graphs", "datasets": "data/kgqa",
                        "indices": "models", "cache": ".cache"}, "snapshot": {"name": "gv3_orkg"}}
    st = Settings(work, params)
    cfg = load_pipeline(args.pipeline)
    cfg.retriever_params["auto_index"] = False
    res = build_resources(cfg, "gv3_orkg", settings=st)
    retr = build_retriever(cfg.retriever_type, res, cfg.retriever_params)
    t0 = time.perf_counter()
    stats = retr.index(progress=False)
    build_s = time.perf_counter() - t0
    pairs = load_kgqa_csv(dataset_csv)[: args.limit]
    out = {"index": stats, "index_build_s": round(build_s, 2), "questions": len(pairs)}
    for strategy in ("direct", "traversal"):
        retr.use_topic = strategy == "traversal"
        retr.retrieve(pairs[0].question, pairs[0].topic_entity_id)  # warm-up (model, path records)
        lat, cpu, rec, maps, n_ctx = [], [], [], [], []
        for p in pairs:
            t, c = time.perf_counter(), time.process_time()
            r = retr.retrieve(p.question, p.topic_entity_id, p.topic_entity_value)
            cpu.append(time.process_time() - c)
            lat.append(time.perf_counter() - t)
            n_ctx.append(len(r.contexts))
            a, b = metrics(r.context_strings, list(p.golden_triples))
            rec.append(a)
            maps.append(b)
        lat.sort()
        cpu.sort()
        out[strategy] = {"latency_median_s": round(statistics.median(lat), 3),
                         "latency_p95_s": round(lat[int(0.95 * (len(lat) - 1))], 3),
                         "cpu_median_s": round(statistics.median(cpu), 3),
                         "cpu_p95_s": round(cpu[int(0.95 * (len(cpu) - 1))], 3),
                         "target_median_s": TARGET_S,
                         "recall_triples": round(statistics.mean(rec), 4),
                         "map_at_10_triples": round(statistics.mean(maps), 4),
                         "mean_contexts": round(statistics.mean(n_ctx), 1)}
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    print(json.dumps(out, indent=1))
    for strategy in ("direct", "traversal"):
        o = out[strategy]
        verdict = "meets" if o["latency_median_s"] <= TARGET_S else "misses"
        print(f"{strategy:9s} s/question: median {o['latency_median_s']:.3f} (CPU {o['cpu_median_s']:.3f}), "
              f"p95 {o['latency_p95_s']:.3f} (CPU {o['cpu_p95_s']:.3f}) | target median <= {TARGET_S}: {verdict}")


if __name__ == "__main__":
    main()
