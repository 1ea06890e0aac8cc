"""The thesis's OFAT study (and a TPE study) of LLM-free HubLink on reduced GV1, on a GPU (issue #46 item 5).

    PYTHONPATH=src .venv/bin/python bench/bench_gpu_ofat.py --json reports/bench/gpu_ofat.json
    PYTHONPATH=src .venv/bin/python bench/bench_gpu_ofat.py --device cpu --limit 3 --n-trials 2   # smoke, on a CPU

Runs :func:`hublab.tuning.orchestrate.run_tune` as ``hublab tune pipelines/hublink_local.yaml --mode ofat --dataset
reduced_gv1`` does (then ``--mode tpe --n-trials N``), with ``embedder.device`` set (``auto``: CUDA when torch sees
it), from a cold start: an empty embedding cache, index folder, Optuna storage and MLflow store in a temporary
folder, so the GV1 hub index is embedded and built on the device inside the measured time. Prints and writes wall
time, trials, the chosen configuration and the device.

What it needs: HubLab's environment (``scripts/setup.sh``, with a CUDA build of torch 2.13.0 on the GPU machine) and
the project's data (``data/graphs``, ``data/kgqa``: ``dvc repro datasets``). The device machines lent to sessions
have torch and sentence-transformers only and take at most 64 MiB of carried files; HubLab's runs are tracked in
MLflow (its package alone is ~69 MiB), so this study cannot travel there as ``bench/bench_gpu.py`` does
(docs/gpu.md).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path


def _device(requested: str) -> dict[str, str]:
    import torch

    cuda = torch.cuda.is_available()
    used = "cuda" if requested == "auto" and cuda else ("cpu" if requested == "auto" else requested)
    return {"requested": requested, "used": used, "torch": torch.__version__,
            "name": torch.cuda.get_device_name(0) if used == "cuda" else f"CPU, {os.cpu_count()} cores"}


def _study(mode: str, root: Path, device: str, n_trials: int | None, limit: int | None) -> dict:
    from hublab.config import Settings, settings
    from hublab.tuning.orchestrate import TuneRequest, run_tune

    st = settings()
    paths = {**st.section("paths"), "cache": str(root / "cache"), "indices": str(root / "models")}
    st = Settings(st.root, {**st.params, "paths": paths})
    t0 = time.perf_counter()
    out = run_tune(TuneRequest(
        pipeline=st.root / "pipelines" / "hublink_local.yaml", study=f"gpu-{mode}", mode=mode, dataset="reduced_gv1",
        storage=f"sqlite:///{root / 'optuna.db'}", n_trials=n_trials, limit=limit, carbon=False, progress=False,
        output_dir=root / mode, fresh=True, trial_artifacts=False, base_overrides={"embedder.device": device},
        objectives=["recall_triples"] if mode == "ofat" else ["map_at_10_triples"]), settings=st)
    wall = time.perf_counter() - t0
    res = out.result
    return {"mode": mode, "wall_s": round(wall, 1), "trials": len(res.trials), "ran": res.ran,
            "pruned": sum(1 for t in res.trials if t["state"] == "PRUNED"),
            "chosen": res.chosen if mode == "ofat" else (res.best or {}).get("params"),
            "best": (res.best or {}).get("values"), **res.reuse}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="auto", help="auto (CUDA when present), cuda or cpu")
    ap.add_argument("--n-trials", type=int, default=40, help="the TPE study's trials")
    ap.add_argument("--limit", type=int, default=None, help="only the first N questions (a smoke run)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    dev = _device(args.device)
    with tempfile.TemporaryDirectory(prefix="hublab-gpu-ofat-") as tmp:
        os.environ["MLFLOW_TRACKING_URI"] = f"sqlite:///{tmp}/mlflow.db"  # the project's store stays untouched
        studies = [_study("ofat", Path(tmp), dev["used"], None, args.limit),
                   _study("tpe", Path(tmp), dev["used"], args.n_trials, args.limit)]
    out = {"device": dev, "limit": args.limit, "studies": studies}
    print(json.dumps(out, indent=1))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
