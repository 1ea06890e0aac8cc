"""Wall time of the equal-budget study (issue #22): every LLM-free method, the same TPE budget on reduced GV1.

    PYTHONPATH=src .venv/bin/python bench/bench_tune_all.py --n-trials 40 --json reports/bench/tune_all.json

With ``--fresh --jobs 2 --report reports/tune/fair/studies.md`` it writes exactly what ``dvc repro tune_all`` writes
(then ``dvc commit tune_all`` records it), timed.

Runs :func:`hublab.tuning.fair.tune_all` exactly as ``hublab tune-all`` does (same studies in the project's
Optuna storage, same tuned files: the benchmark *is* the tuning run) and reports wall time per method, trials per
second and the machine's load. Target (issue #22): all ten methods x 40 trials <= 30 min on 2 cores. A rerun
resumes finished studies (0 new trials, ~seconds); ``--fresh`` measures from scratch.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pipelines", nargs="*", type=Path, help="default: every LLM-free pipeline")
    ap.add_argument("--n-trials", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--fresh", action="store_true", help="restart every study (measure from scratch)")
    ap.add_argument("--json", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=2, help="studies at once (dvc.yaml: 2)")
    ap.add_argument("--report", type=Path, default=None, help="the per-method table, as `hublab tune-all --report`")
    ap.add_argument("--cold", action="store_true", help="from a cold cache: an empty embedding cache and empty "
                    "index folders (a temporary folder for paths.cache and paths.indices), every text embedded anew")
    ap.add_argument("--pruner", default="wilcoxon", help="wilcoxon (dvc.yaml) or none")
    args = ap.parse_args()

    from hublab.config import settings
    from hublab.retrievers.registry import default_pipelines
    from hublab.tuning.fair import TuneAllRequest, markdown, tune_all

    st = settings()
    project = st.root
    cold = None
    if args.cold:  # what a fresh clone has: no embedding cache, no indices (the studies are --fresh ones)
        import tempfile

        from hublab.config import Settings

        cold = tempfile.TemporaryDirectory(prefix="hublab-cold-")
        # a project rooted in an empty folder that reads the checkout's data: no embedding cache, no indices and no
        # run checkpoints (outputs/runs/ under the root: a trial of an earlier run would resume, not compute)
        paths = {k: str(st.path(k).resolve()) for k in st.section("paths")}
        paths.update({"cache": f"{cold.name}/cache", "indices": f"{cold.name}/models"})
        st = Settings(Path(cold.name), {**st.params, "paths": paths})
        # the project's studies, tuned files and reports stay as `dvc repro tune_all` left them: the same choices
        # come out (same seed, code and vectors), only the time differs
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{cold.name}/mlflow.db"
    pipes = args.pipelines or default_pipelines(project)
    load0 = os.getloadavg()
    t0 = time.perf_counter()
    rows = []

    def said(o) -> None:
        rows.append({"method": o.plan.method, "pipeline": o.plan.pipeline.as_posix(), "study": o.study,
                     "trials": o.trials, "wall_s": round(o.wall_s, 1),
                     "s_per_trial": round(o.wall_s / max(o.trials + o.pruned, 1), 2),
                     "default_map10": o.default_value, "best_map10": o.best_value, "flat": o.flat,
                     "pruned": o.pruned, **o.reuse,
                     "load_avg_1m_after": round(os.getloadavg()[0], 2)})
        print(f"{o.plan.method}: {o.trials} trials, {o.wall_s:.0f} s", flush=True)

    where = {"out_dir": Path(cold.name) / "tuned", "storage": f"sqlite:///{cold.name}/optuna.db",
             "reports_dir": Path(cold.name) / "reports"} if cold is not None else {}
    outcomes = tune_all(TuneAllRequest(pipes, n_trials=args.n_trials, seed=args.seed, fresh=args.fresh,
                                       progress=False, jobs=args.jobs, pruner=args.pruner, **where), settings=st,
                        on_method=said)
    if cold is not None:  # the cold run's choices against the committed tuned files
        import yaml

        for o in outcomes:
            mine = yaml.safe_load(o.tuned_file.read_text())["tuned"]["params"]
            committed = project / "pipelines" / "tuned" / o.tuned_file.name
            theirs = yaml.safe_load(committed.read_text())["tuned"]["params"] if committed.exists() else None
            next(r for r in rows if r["method"] == o.plan.method)["same_choice_as_committed"] = mine == theirs
    total = time.perf_counter() - t0
    table = markdown(outcomes)
    print(table)
    if args.report:
        args.report.parent.mkdir(parents=True, exist_ok=True)
        args.report.write_text(table)
    print(f"total {total:.0f} s ({total / 60:.1f} min) for {len(outcomes)} methods x {args.n_trials} trials; "
          f"cpus {os.cpu_count()}, load avg before {load0[0]:.1f}, after {os.getloadavg()[0]:.1f}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"n_trials": args.n_trials, "seed": args.seed, "total_s": round(total, 1),
                                         "jobs": args.jobs, "pruner": args.pruner, "cold_cache": args.cold,
                                         "cpus": os.cpu_count(), "load_avg_before": load0,
                                         "methods": rows},
                                        indent=1))


if __name__ == "__main__":
    main()
