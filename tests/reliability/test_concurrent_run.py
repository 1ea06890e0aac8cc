"""Two ``hublab run`` processes on one pipeline/graph/dataset at once. A Milvus Lite file admits one process:
the loser must exit with a clear error (or, having found every question done, succeed identically), and the
winner must finish with exactly the metrics of a run alone, its checkpoint and MLflow run intact."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from reliability import killing as K

# the run lock (taken first) or, for a different run on the same index, the Milvus Lite file lock
LOCK_MSGS = ("being run by another process", "another hublab process")
XFAIL_IDENTITY = ("runner bug (experiment/runner.py): the MLflow run is created and state.json written before the "
                  "pipeline opens the Milvus Lite file, so the losing process leaves a second, FAILED MLflow run for "
                  "the config and may overwrite state.json with its id (a later resume reopens the FAILED run)")
XFAIL_MIGRATION = ("tracking bug (tracking/mlflow_log.setup): two first runs on a fresh project race MLflow's sqlite "
                   "schema migration; the loser dies with alembic CommandError 'expected to match one row'")


def _start_two(root: Path) -> list[tuple[int, str, str]]:
    procs = [subprocess.Popen(K.cli_args(*K.RUN_ARGS), cwd=root, env=K.env(root), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs, strict=True)]


def test_two_concurrent_runs_one_wins_with_the_metrics_of_a_run_alone(indexed_project: Path, reference_run,
                                                                      monkeypatch):
    root = indexed_project
    from hublab.tracking import mlflow_log

    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    mlflow_log.setup(root, "hublab")  # an existing store (the usual case); the fresh-store race is tested below
    results = _start_two(root)
    codes = [rc for rc, _, _ in results]
    assert 0 in codes, [(rc, err[-2000:]) for rc, _, err in results]
    for rc, _, err in results:
        if rc != 0:
            assert any(m in err for m in LOCK_MSGS), err[-2000:]
    got = K.run_outcome(root, next(out for rc, out, _ in results if rc == 0))
    assert got["n_records"] == K.N_QUESTIONS
    assert got["records"] == reference_run["records"]
    assert got["metrics"] == reference_run["metrics"]
    assert got["mlflow_metrics"] == reference_run["mlflow_metrics"]
    assert got["mlflow_status"] == "FINISHED"
    state = (K.checkpoint_file(root).parent / "state.json").read_text()
    if len(got["runs"]) != 1 or got["run_id"] not in state:
        pytest.xfail(f"{XFAIL_IDENTITY}; runs={got['runs']} state={state}")


def test_two_concurrent_first_runs_on_a_fresh_mlflow_store(indexed_project: Path):
    root = indexed_project
    procs = [subprocess.Popen(K.cli_args(*K.RUN_ARGS), cwd=root, env=K.env(root), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    deadline = time.monotonic() + 300
    while all(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    first = next((p for p in procs if p.poll() is not None), None)
    for p in procs:
        if p.poll() is None:
            p.kill()  # the survivor's result is covered by the test above
    outs = [p.communicate()[0] for p in procs]
    crashed = first is not None and first.returncode != 0 and "alembic" in outs[procs.index(first)]
    if first is not None and first.returncode != 0 and not crashed:
        assert any(m in outs[procs.index(first)] for m in LOCK_MSGS), outs[procs.index(first)][-2000:]
    if crashed:
        pytest.xfail(XFAIL_MIGRATION)
