"""Timing a command in a process of its own: the wall time and the peak resident memory of that process alone
(``RUSAGE_CHILDREN`` of a measuring process whose only child it is), for the benchmarks of HubLab's commands.

    python bench/measured.py '["hublab", "graph", "check", "FILE", "--json"]'   (what ``measured`` runs)
"""

from __future__ import annotations

import json
import math
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def rss_mb(field: str = "VmRSS") -> float:
    """This process's resident memory (``VmHWM``: its peak so far) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    return math.nan


def ms(xs: list[float]) -> dict[str, float]:
    """p50 and p95 of seconds, in milliseconds."""
    xs = sorted(xs)
    return {"p50_ms": round(statistics.median(xs) * 1000, 2),
            "p95_ms": round(xs[min(len(xs) - 1, math.ceil(0.95 * len(xs)) - 1)] * 1000, 2)}


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1"}


def measured(cmd: list[str], env: dict[str, str] | None = None) -> dict:
    """``cmd`` run by a fresh measuring process whose only child it is, so that the process's RUSAGE_CHILDREN peak
    is the command's own: ``{"result": its JSON output, "wall_s", "peak_rss_mb"}``; ``env``: added to its
    environment."""
    proc = subprocess.run([sys.executable, str(Path(__file__).resolve()), json.dumps(cmd)], cwd=ROOT,
                          env={**_env(), **(env or {})}, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(proc.stderr[-2000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])


def flattened(m: dict) -> dict:
    """A :func:`measured` result as one row: the command's JSON output with its ``wall_s`` and ``peak_rss_mb``."""
    return {**m["result"], "wall_s": m["wall_s"], "peak_rss_mb": m["peak_rss_mb"]}


def _measure(cmd: list[str]) -> None:
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:5])} … exited {proc.returncode}: {err[-1500:]}")
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # the one child this process had
    try:
        payload = json.loads(out)
    except json.JSONDecodeError:
        lines = [ln for ln in out.strip().splitlines() if ln.strip()]
        payload = json.loads(lines[-1]) if lines else {}
    print(json.dumps({"result": payload, "wall_s": round(wall, 1), "peak_rss_mb": round(peak_mb)}))


if __name__ == "__main__":
    _measure(json.loads(sys.argv[1]))
