"""Committed reports hold only what is the same on every machine (issue #42): a run's seconds, energy and emissions
go to the git-ignored timings.json beside them, so a rerun elsewhere with the same results leaves git clean."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from hublab.experiment.dvc_report import machine_dependent, write_dvc_report

ROOT = Path(__file__).resolve().parents[2]


def test_reports_split_quality_from_the_machines_figures(tmp_path: Path):
    metrics = {"hit_at_10_triples": 0.5, "map_at_10_triples": 0.25, "triples_per_question": 3.0, "runtime": 0.12,
               "index_build_s": 4.0, "cpu_energy_consumption": 1e-5, "emissions": 2e-6, "session_energy_total": 3e-4,
               "llm_tokens": 0.0, "n_questions": 2.0, "n_errors": 0.0}
    write_dvc_report(metrics, [{"retrieved_context": ["a", "b", "c"]}], tmp_path)
    head = json.loads((tmp_path / "metrics.json").read_text())
    every = json.loads((tmp_path / "all_metrics.json").read_text())
    timings = json.loads((tmp_path / "timings.json").read_text())
    assert "runtime" not in head and head["map_at_10_triples"] == 0.25 and head["n_questions"] == 2.0
    assert set(timings) == {"runtime", "index_build_s", "cpu_energy_consumption", "emissions", "session_energy_total"}
    assert set(every) == set(metrics) - set(timings)
    assert not machine_dependent("hit_at_10_triples") and not machine_dependent("n_timeouts")


def test_git_ignores_the_timings_and_no_committed_report_holds_one():
    ignored = subprocess.run(["git", "check-ignore", "reports/eval/bm25-gv3_orkg/timings.json"], cwd=ROOT,
                             capture_output=True, text=True)
    assert ignored.returncode == 0
    for f in sorted((ROOT / "reports" / "eval").glob("*/*metrics.json")):
        assert not [k for k in json.loads(f.read_text()) if machine_dependent(k)], f
