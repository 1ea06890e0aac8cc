"""Wall time of the fair comparison on a user's graph (`hublab compare`), every LLM-free method, from a cold cache.

    PYTHONPATH=src .venv/bin/python bench/bench_compare.py --n-trials 20 --json reports/bench/compare.json

For each example graph under ``examples/graphs/`` (their README names the hub type) it runs
:func:`hublab.tuning.graph_comparison.compare_graph` exactly as ``hublab compare --graph G --dataset Q --hub-type H
--n-trials N`` does, in a project rooted in an empty temporary folder that reads the checkout's pipelines: no
embedding cache, no indices, no run checkpoints, no Optuna studies, no MLflow store (a cold start, as on a new
machine with the packages installed). It records the whole command's wall time, the studies' trials and pruned
trials, the best pooled row with its interval, and the machine. Target: at most 10 minutes per graph on 2 cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

#: graph folder -> its hub type (also in each folder's README)
GRAPHS = {"catalogue": "https://schema.org/SoftwareApplication", "concepts": "http://xmlns.com/foaf/0.1/Document",
          "events": "https://example.org/events#Event"}


def hub_type(folder: Path) -> str:
    """The hub type the folder's README names (``--hub-type IRI``), else the table above."""
    readme = (folder / "README.md").read_text(encoding="utf-8") if (folder / "README.md").exists() else ""
    found = re.search(r"--hub-type\s+`?<?([^\s`>]+)", readme)
    return found.group(1) if found else GRAPHS[folder.name]


def one(folder: Path, n_trials: int, jobs: int, folds: int | None) -> dict:
    from hublab.config import Settings
    from hublab.config import settings as load_settings
    from hublab.tuning.graph_comparison import CompareRequest, compare_graph

    project = load_settings(ROOT)
    graph = next(p for p in sorted(folder.iterdir()) if p.name.startswith("graph."))
    questions = next(p for p in sorted(folder.iterdir()) if p.name.startswith("questions."))
    with tempfile.TemporaryDirectory(prefix="hublab-cold-") as cold:
        paths = {k: str(project.path(k).resolve()) for k in project.section("paths")}
        paths.update({"cache": f"{cold}/cache", "indices": f"{cold}/models"})
        st = Settings(Path(cold), {**project.params, "paths": paths})
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{cold}/mlflow.db"
        lines: list[str] = []

        def say(line: str) -> None:
            lines.append(line)
            print(f"  {line}", flush=True)

        t0 = time.perf_counter()
        res = compare_graph(CompareRequest(str(graph), str(questions), out_dir=Path(cold) / "out",
                                           pipelines=_llm_free(project), hub_types=[hub_type(folder)],
                                           n_trials=n_trials, folds=folds, jobs=jobs,
                                           storage=f"sqlite:///{cold}/optuna.db"), settings=st, say=say)
        wall = time.perf_counter() - t0
    pooled = [r for r in res.rows if r.subset == "pooled"]
    best = next(r for r in pooled if r.best)
    studies = [o for fold in res.studies for o in fold]
    by_method = {}
    for r in pooled:
        by_method.setdefault(r.method, {})[r.config] = round(r.metrics["map_at_10_triples"], 4)
    return {"graph": folder.name, "questions": res.split.n_questions, "folds": len(res.split.folds),
            "methods": len(by_method), "wall_s": round(wall, 1),
            "trials": sum(o.trials for o in studies), "pruned": sum(o.pruned for o in studies),
            "best": f"{best.method} ({best.config})", "best_map10": round(best.metrics["map_at_10_triples"], 4),
            "best_map10_ci": [round(x, 4) for x in best.ci["map_at_10_triples"]],
            "map10": by_method, "failed": res.failed}


def _llm_free(st) -> list[Path]:
    from hublab.retrievers.registry import default_pipelines

    return default_pipelines(st.root)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("graphs", nargs="*", help="folders under examples/graphs (default: all three)")
    ap.add_argument("--n-trials", type=int, default=20)
    ap.add_argument("--jobs", type=int, default=2, help="studies at once (2 cores)")
    ap.add_argument("--folds", type=int, default=None, help="default: hublab compare's (5 below 100 questions)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    from machine import machine

    here = machine()
    load0 = os.getloadavg()
    rows = []
    for name in args.graphs or list(GRAPHS):
        print(f"{name}:", flush=True)
        rows.append(one(ROOT / "examples" / "graphs" / name, args.n_trials, args.jobs, args.folds))
        print(f"{name}: {rows[-1]['wall_s']:.0f} s, best {rows[-1]['best']} MAP@10 {rows[-1]['best_map10']} "
              f"{rows[-1]['best_map10_ci']}", flush=True)
    out = {"n_trials": args.n_trials, "jobs": args.jobs, "cold_cache": True, "machine": here,
           "load_avg_before": [round(x, 2) for x in load0], "graphs": rows}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
