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
