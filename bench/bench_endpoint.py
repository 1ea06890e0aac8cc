"""A graph over a SPARQL endpoint against the same graph in memory (issue #41), timed on the commands a user types.

    .venv/bin/python bench/bench_endpoint.py [--factor 100] [--skip-large] [--pipelines hublink_local bm25 ...]

1. GV3 (``data/snapshots/gv3_orkg.ttl``, built by ``dvc repro snapshot``) loaded into an Oxigraph server
   (``oxigraph load``, then ``oxigraph serve-read-only`` on 127.0.0.1): the load time, and the time HubLab takes to
   read the graph over the endpoint (fingerprint query + paged CONSTRUCTs) against reading the Turtle file.
2. Every LLM-free default pipeline run as ``hublab run P --graph <endpoint URL> --dataset data/kgqa/gv3_orkg.jsonl``:
   its metrics against the committed ``reports/eval/P-gv3_orkg/metrics.json`` (they must be identical), its index
   build from the endpoint and its time per question; HubLink also over the built-in in-memory graph in the same
   session, for the ratio (goal: at most 1.5x).
3. The largest graph: GV3 replicated ``--factor`` times (``hublab.graph.synthetic``), read as a Turtle file and over
   an Oxigraph endpoint, each in a fresh process: load time and peak RSS.

Writes ``reports/bench/endpoint.json`` (machine, date, figures); ``docs/benchmarks.md`` quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "tests"))  # local_procs: free port, process-group stop

from machine import machine  # noqa: E402  (bench/machine.py, beside this script)

from support.local_procs import free_port, stop_group  # noqa: E402

PY = sys.executable
OXIGRAPH = Path(PY).parent / "oxigraph"
KEYS = ("hit_at_10_triples", "map_at_10_triples", "mrr_at_10_triples", "recall_at_10_triples", "triples_per_question")
ENV = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "HF_HUB_OFFLINE": "1",
       "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "PYTHONPATH": str(ROOT / "src")}


def serve(file: Path, work: Path) -> tuple[subprocess.Popen, str, float]:
    """An Oxigraph server holding ``file``: (process, query URL, load seconds)."""
    store = work / f"ox-{file.stem}"
    t = time.perf_counter()
    subprocess.run([str(OXIGRAPH), "load", "--location", str(store), "--file", str(file)], check=True,
                   capture_output=True)
    load_s = time.perf_counter() - t
    port = free_port()
    proc = subprocess.Popen([str(OXIGRAPH), "serve-read-only", "--location", str(store), "--bind",
                             f"127.0.0.1:{port}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    url = f"http://127.0.0.1:{port}/query"
    import requests

    for _ in range(600):
        try:
            if requests.post(url, data={"query": "ASK {}"}, timeout=2).status_code == 200:
                break
        except requests.RequestException:
            time.sleep(0.1)
    return proc, url, load_s


def in_child(code: str) -> dict:
    """Run ``code`` (which prints one JSON line, with its own peak RSS) in a fresh process."""
    p = subprocess.run([PY, "-c", code], env=ENV, capture_output=True, text=True, cwd=ROOT)
    if p.returncode != 0:
        raise SystemExit(f"child failed:\n{p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


READ = """
import json, resource, time
from hublab.config import settings
from hublab.graph.backends import resolve_graph, load_source
st = settings()
t = time.perf_counter()
kg = load_source(resolve_graph({arg!r}, st), st)
print(json.dumps({{"load_s": round(time.perf_counter() - t, 2), "triples": len(kg),
                   "entities": sum(1 for _ in kg.entities()),
                   "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}}))
"""


def hublab_run(pipeline: str, graph: str, dataset: str) -> dict:
    t = time.perf_counter()
    p = subprocess.run([PY, "-m", "hublab.cli", "run", pipeline, "--graph", graph, "--dataset", dataset, "--no-carbon",
                        "--no-resume", "--no-trace", "--experiment", "bench-endpoint", "--json"], env=ENV, cwd=ROOT,
                       capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"hublab run {pipeline} --graph {graph} failed:\n{p.stderr[-2000:]}")
    out = json.loads(p.stdout[p.stdout.index("{"):])
    m = out["metrics"]
    return {"wall_s": round(time.perf_counter() - t, 1), "s_per_question": round(m["runtime"], 4),
            "index_build_s": round(m.get("index_build_s") or 0.0, 1), **{k: m[k] for k in KEYS}}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--factor", type=int, default=100)
    ap.add_argument("--skip-large", action="store_true")
    ap.add_argument("--pipelines", nargs="*", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "reports" / "bench" / "endpoint.json")
    args = ap.parse_args()
    from hublab.retrievers.registry import default_pipelines

    gv3 = ROOT / "data" / "snapshots" / "gv3_orkg.ttl"
    dataset = "data/kgqa/gv3_orkg.jsonl"
    if not gv3.exists():
        raise SystemExit(f"{gv3} missing: run `.venv/bin/dvc repro snapshot datasets` first")
    result: dict = {"machine": machine(), "what": "issue #41: GV3 over an Oxigraph SPARQL endpoint vs in memory"}
    procs = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        try:
            proc, url, load_s = serve(gv3, work)
            procs.append(proc)
            result["gv3"] = {"oxigraph_load_s": round(load_s, 2),
                             "read_file": in_child(READ.format(arg=str(gv3))),
                             "read_endpoint": in_child(READ.format(arg=url))}
            print(json.dumps(result["gv3"]), flush=True)
            names = args.pipelines or [p.stem for p in default_pipelines(ROOT)]
            runs = {}
            for name in names:
                committed = ROOT / "reports" / "eval" / f"{name}-gv3_orkg" / "metrics.json"
                got = hublab_run(name, url, dataset)
                ref = json.loads(committed.read_text()) if committed.exists() else None
                got["committed_metrics_identical"] = None if ref is None else all(
                    abs(got[k] - ref[k]) < 1e-9 for k in KEYS)
                runs[name] = got
                print(name, json.dumps(got), flush=True)
            memory = hublab_run("hublink_local", "gv3_orkg", dataset)
            result["runs_over_endpoint"] = runs
            result["hublink_in_memory"] = memory
            if "hublink_local" in runs:
                result["hublink_endpoint_over_memory"] = round(
                    runs["hublink_local"]["s_per_question"] / memory["s_per_question"], 3)
            if not args.skip_large:
                big = work / f"gv3_x{args.factor}.ttl"
                t = time.perf_counter()
                in_child(f"""
import json
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.synthetic import replicate
replicate(RdfKnowledgeGraph.load({str(gv3)!r}), {args.factor}).save({str(big)!r})
print(json.dumps({{}}))""")
                large: dict = {"factor": args.factor, "build_s": round(time.perf_counter() - t, 1),
                               "file_mb": round(big.stat().st_size / 1e6, 1)}
                large["read_file"] = in_child(READ.format(arg=str(big)))
                proc, url, load_s = serve(big, work)
                procs.append(proc)
                large["oxigraph_load_s"] = round(load_s, 1)
                large["read_endpoint"] = in_child(READ.format(arg=url))
                result["large"] = large
                print(json.dumps(large), flush=True)
        finally:
            for p in procs:
                stop_group(p)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
