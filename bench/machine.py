"""The machine a benchmark ran on, as every ``reports/bench/*.json`` records it and ``docs/benchmarks.md`` prints it
beside each figure: CPU model, cores, Python, the date, and a pure-Python reference loop (10^7 squares) that lets a
reader scale a figure to their own machine."""

from __future__ import annotations

import os
import platform
import time
from pathlib import Path


def machine() -> dict:
    try:
        cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                    if ln.startswith("model name")), platform.processor())
    except OSError:
        cpu = platform.processor()
    t = time.perf_counter()
    sum(i * i for i in range(10_000_000))  # the reference loop docs/benchmarks.md puts beside every figure
    return {"cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version(),
            "reference_loop_s": round(time.perf_counter() - t, 3), "date": time.strftime("%Y-%m-%d")}
