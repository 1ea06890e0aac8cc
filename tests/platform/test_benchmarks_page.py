"""docs/benchmarks.md is generated from reports/bench/*.json (issue #43): a re-measured file without the page
regenerated fails here, so no figure in the docs outlives its measurement."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_benchmarks_page_is_generated_from_the_bench_files():
    p = subprocess.run([sys.executable, "scripts/benchmarks_md.py", "--check"], cwd=ROOT, capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stderr
    text = (ROOT / "docs" / "benchmarks.md").read_text()
    for f in sorted((ROOT / "reports" / "bench").glob("*.json")):
        assert f"reports/bench/{f.name}" in text, f.name


def test_the_readmes_tuning_wait_is_the_measured_one():
    """Issue #46: the README's estimate of `hublab tune-all` comes from reports/bench/tune_all.json (re-measured, the
    sentence must follow)."""
    import json
    import re

    measured = json.loads((ROOT / "reports" / "bench" / "tune_all.json").read_text())
    said = re.search(r"`hublab tune-all` took about (\d+) minutes on (\d+) cores", (ROOT / "README.md").read_text())
    assert said, "README: the tune-all estimate sentence is missing"
    assert int(said.group(1)) == max(1, round(measured["total_s"] / 60)) and int(said.group(2)) == measured["cpus"]
