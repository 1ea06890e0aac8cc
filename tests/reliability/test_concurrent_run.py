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
TIMEOUT_S = 300


def _communicate_all(procs: list[subprocess.Popen]) -> list[tuple[int, str, str]]:
    """Wait for every process; one still running after ``TIMEOUT_S`` fails the test (all are killed first)."""
    deadline = time.monotonic() + TIMEOUT_S
    try:
        outs = [p.communicate(timeout=max(1.0, deadline - time.monotonic())) for p in procs]
    except subprocess.TimeoutExpired:
        for p in procs:
            p.kill()
            p.communicate()
        pytest.fail(f"a process did not exit within {TIMEOUT_S} s")
    return [(p.returncode, o, e) for p, (o, e) in zip(procs, outs, strict=True)]


def _start_two(root: Path) -> list[tuple[int, str, str]]:
    procs = [subprocess.Popen(K.cli_args(*K.RUN_ARGS), cwd=root, env=K.env(root), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    return _communicate_all(procs)


def test_two_concurrent_runs_one_wins_with_the_metrics_of_a_run_alone(indexed_project: Path, reference_run,
                                                                      monkeypatch):
    """The loser stops at the run lock before it creates anything: one MLflow run, and state.json names it."""
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
    assert len(got["runs"]) == 1, f"the losing process left an MLflow run: {got['runs']}"
    assert got["run_id"] in state, f"state.json does not name the winner's run {got['run_id']}: {state}"


FIRST_RUN = """
import sys, time
from pathlib import Path
import mlflow
from hublab.tracking import mlflow_log

root, me = Path(sys.argv[1]), sys.argv[2]
(root / f"ready-{me}").touch()  # a start barrier: both processes have imported mlflow and hublab
deadline = time.monotonic() + 120
while len(list(root.glob("ready-*"))) < 2 and time.monotonic() < deadline:
    time.sleep(0.005)
exp = mlflow_log.setup(root, "hublab")
with mlflow.start_run(experiment_id=exp) as run:
    mlflow.log_metric("x", 1.0)
print("RUN", exp, run.info.run_id)
"""


@pytest.mark.slow  # two interpreters
def test_two_concurrent_first_runs_on_a_fresh_mlflow_store(tmp_path: Path):
    """Two processes start their first tracked run on a project without an MLflow store at the same instant (a
    file barrier after the imports): both create or find the schema and the experiment (the sqlite migration
    and the experiment creation race), and both runs are logged to the one experiment."""
    import sys

    root = tmp_path / "proj"  # a project without an MLflow store (setup needs nothing else)
    root.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", FIRST_RUN, str(root), str(i)], cwd=root,
                              env=K.env(root), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(2)]
    results = _communicate_all(procs)
    for rc, _, err in results:
        assert rc == 0 and "alembic" not in err, err[-3000:]
    runs = [line.split()[1:] for _, out, _ in results for line in out.splitlines() if line.startswith("RUN ")]
    assert len(runs) == 2 and runs[0][0] == runs[1][0] and runs[0][1] != runs[1][1], runs
    assert sorted(r for r, _, _ in K.mlflow_runs(root)) == sorted(r for _, r in runs)
