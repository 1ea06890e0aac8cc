"""Studies under concurrency and crashes, with real processes: two ``hublab tune`` workers on one SQLite study,
and a worker killed with SIGKILL mid-study and rerun. BM25 (LLM-free, fast) on a 12-paper ORKG subgraph,
2 questions per trial; a small wrapper delays each trial so that trials overlap and a kill lands mid-trial.

The two-worker test also runs on PostgreSQL: a throwaway server the ``postgres_url`` fixture starts on
127.0.0.1 from the distribution's binaries (or the database HUBLAB_TEST_POSTGRES_URL names)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from conftest import small_gv3_project

pytestmark = pytest.mark.slow  # hublab tune subprocesses, kill -9

PIPELINE = """
name: bm25_tiny
retriever:
  type: bm25
  params: {n_results: 10, add_rel: true}
llm: {backend: none}
evaluation: {k: 10}
search_space:
  retriever.params.n_results: {values: [5, 10, 15, 20]}
  retriever.params.add_rel: {values: [true, false]}
"""
PLANNED = ["base", "retriever.params.n_results=5", "retriever.params.n_results=15",
           "retriever.params.n_results=20", "retriever.params.add_rel=false"]

# `hublab tune` with each trial delayed by $TUNE_TRIAL_DELAY seconds (before it runs, while it holds the trial)
SLOW_TUNE = """
import os, sys, time
import hublab.tuning.runner_eval as runner_eval

_orig = runner_eval.runner_evaluator


def slow(*args, **kwargs):
    ev = _orig(*args, **kwargs)

    def run(req):
        time.sleep(float(os.environ.get("TUNE_TRIAL_DELAY", "0")))
        return ev(req)
    return run


runner_eval.runner_evaluator = slow
from hublab.cli import main

sys.argv = ["hublab", *sys.argv[1:]]
main()
"""
SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    root = small_gv3_project(tmp_path / "proj", shared, gv3_orkg_graph, monkeypatch, min_papers=12)
    (root / "bm.yaml").write_text(PIPELINE)
    (root / "slow_tune.py").write_text(SLOW_TUNE)
    return root


_STARTED: list[subprocess.Popen] = []


@pytest.fixture(autouse=True)
def _no_worker_outlives_its_test():
    """Kill the ``hublab tune`` workers a test started and left running: a failed wait or ``finish`` timeout left one
    (a fresh-clone CI run: a worker waiting on a trial with no heartbeat ran on after the suite ended)."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def tune(root: Path, study: str, *extra: str, delay: float = 0.0) -> subprocess.Popen:
    env = {**os.environ, "HUBLAB_ROOT": str(root), "TUNE_TRIAL_DELAY": str(delay),
           "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")]),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true"}
    cmd = [sys.executable, str(root / "slow_tune.py"), "tune", "bm.yaml", "--study", study, "--mode", "ofat",
           "--dataset", "gv3_orkg", "--limit", "2", "--no-carbon", "--no-progress", "--heartbeat", "1", "--grace", "4",
           *extra]
    log = root / f"{study}-{time.monotonic_ns()}.log"
    with log.open("w") as fh:
        proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=fh, stderr=subprocess.STDOUT, text=True)
    proc.log = log  # type: ignore[attr-defined]
    _STARTED.append(proc)
    return proc


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    rc = proc.wait(timeout=timeout)
    return rc, proc.log.read_text()  # type: ignore[attr-defined]


def storage(root: Path) -> str:
    return os.environ.get("HUBLAB_TEST_STORAGE") or f"sqlite:///{root / 'mlruns/optuna.db'}"


_STORAGES: dict[str, optuna.storages.RDBStorage] = {}


def trials(root: Path, study: str) -> list[optuna.trial.FrozenTrial]:
    """The study's trials, read through one storage object per URL: the tests poll this every 0.3 s while the
    workers run, and a fresh ``load_study(storage=url)`` (a new engine and schema check each time) cost 58 ms of
    CPU a poll against 7 ms, CPU the workers under test were waiting for."""
    url = storage(root)
    try:
        if url not in _STORAGES:
            _STORAGES[url] = optuna.storages.RDBStorage(url)
        return optuna.load_study(study_name=study, storage=_STORAGES[url]).get_trials()
    except (KeyError, Exception):  # not created yet / database busy: look again
        return []


def wait_for(cond, timeout: float = 360.0, what: str = "") -> None:
    """Poll ``cond`` until it holds; the bound only stops a hung worker (a study that reaches the point passes at
    once). 180 s was too short for a whole 5-trial study on CI's 2 cores under three test workers (1 in ~3 runs)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return
        time.sleep(0.3)
    raise AssertionError(f"timed out waiting for {what}")


def complete_keys(root: Path, study: str) -> list[str]:
    return [t.user_attrs["ofat_key"] for t in trials(root, study) if t.state == optuna.trial.TrialState.COMPLETE]


def mlflow_runs(root: Path, study: str):
    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    client = MlflowClient(tracking_uri(root))
    exp = client.get_experiment_by_name(f"tune-{study}")
    runs = client.search_runs([exp.experiment_id])
    parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
    children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
    return parents, children


@pytest.mark.parametrize(("backend", "start"), [("sqlite", "while_a_runs"), ("sqlite", "together"),
                                              ("postgresql", "while_a_runs")])
def test_two_workers_split_one_ofat_study(project: Path, backend: str, start: str, monkeypatch, request):
    """Issue: a second worker marked the first worker's running trial FAIL and queued a duplicate; the first
    worker then crashed with UpdateFinishedTrialError. Now: every planned trial runs exactly once, split
    between the workers, and both exit 0 with the complete table. ``together``: both start at once on a
    new project (Optuna and MLflow tables, experiment, parent run and queue created concurrently)."""
    url = [] if backend == "sqlite" else [request.getfixturevalue("postgres_url")]
    if backend == "postgresql":
        monkeypatch.setenv("HUBLAB_TEST_STORAGE", url[0])
        optuna.delete_study(study_name="s", storage=url[0]) if "s" in optuna.get_all_study_names(url[0]) else None
    opts = [*(["--storage", url[0]] if url else [])]
    a = tune(project, "s", *opts, delay=3)
    if start == "while_a_runs":
        wait_for(lambda: any(t.state == optuna.trial.TrialState.RUNNING for t in trials(project, "s")),
                 what="worker A running a trial")
    b = tune(project, "s", *opts, "--index-dir", "models-b", delay=3)  # Milvus Lite: one process per index file
    (rc_a, out_a), (rc_b, out_b) = finish(a), finish(b)
    assert rc_a == 0, out_a
    assert rc_b == 0, out_b
    ts = trials(project, "s")
    assert sorted(complete_keys(project, "s")) == sorted(PLANNED)  # each planned trial COMPLETE exactly once
    assert len(ts) == len(PLANNED), [(t.number, t.state.name, t.user_attrs) for t in ts]  # no FAIL, no extras
    workers = {t.user_attrs["worker"] for t in ts}
    assert len(workers) == 2, workers  # both workers took trials from the shared queue
    for out in (out_a, out_b):  # each worker reports the whole table
        assert "| n_results | 10 ★ |" in out and "not finished yet" not in out
    parents, children = mlflow_runs(project, "s")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    assert sorted(r.data.tags["mlflow.runName"].split(" [")[0] for r in children) == sorted(PLANNED)
    assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}


def test_kill9_mid_study_then_rerun(project: Path):
    """Issue: a killed study left its parent run RUNNING, the rerun made a second parent (trials split over
    two parents), and a second study logged its trials into the first study's runs. Now: one parent per
    study, marked KILLED-then-resumed, each trial once, and the same table as an uninterrupted run."""
    a = tune(project, "k", delay=3)

    def mid_study() -> bool:
        ts = trials(project, "k")
        return sum(t.state == optuna.trial.TrialState.COMPLETE for t in ts) >= 2 and any(
            t.state == optuna.trial.TrialState.RUNNING for t in ts)

    wait_for(mid_study, what="2 trials done and one running")
    os.kill(a.pid, signal.SIGKILL)
    a.wait()
    parents, _ = mlflow_runs(project, "k")
    assert len(parents) == 1 and parents[0].info.status == "RUNNING"  # what the kill leaves behind
    time.sleep(5)  # past the grace period: the killed trial's heartbeat is stale
    rc, out = finish(tune(project, "k"))
    assert rc == 0, out

    ts = trials(project, "k")
    assert sorted(complete_keys(project, "k")) == sorted(PLANNED)
    failed = [t for t in ts if t.state == optuna.trial.TrialState.FAIL]
    assert len(failed) == 1  # the trial that was running at the kill ...
    retry = [t for t in ts if t.system_attrs.get("failed_trial") == failed[0].number]
    assert len(retry) == 1 and retry[0].state == optuna.trial.TrialState.COMPLETE  # ... retried once
    assert retry[0].user_attrs["ofat_key"] == failed[0].user_attrs["ofat_key"]

    # the rerun's worker ends the parent as it exits; read it once it says so (bounded), not at one instant
    wait_for(lambda: [p.info.status for p in mlflow_runs(project, "k")[0]] == ["FINISHED"], timeout=120,
             what="the study's one parent run FINISHED")
    parents, children = mlflow_runs(project, "k")
    assert len(parents) == 1, [p.info.run_id for p in parents]
    parent = parents[0]
    assert parent.info.run_id == optuna.load_study(study_name="k", storage=storage(project)).user_attrs[
        "mlflow_parent_run_id"]
    assert parent.info.status == "FINISHED" and "hublab.recovered" in parent.data.tags
    assert sorted(r.data.tags["mlflow.runName"].split(" [")[0] for r in children) == sorted(PLANNED)
    assert all(r.data.tags["mlflow.parentRunId"] == parent.info.run_id for r in children)

    # an uninterrupted study of the same grid: same choices and table, its own parent and trial runs
    rc, out = finish(tune(project, "ref"))
    assert rc == 0, out
    study_dir = project / "outputs/studies"
    assert json.loads((study_dir / "k/chosen.json").read_text()) == json.loads(
        (study_dir / "ref/chosen.json").read_text())
    assert (study_dir / "k/ofat_table.md").read_text() == (study_dir / "ref/ofat_table.md").read_text()
    ref_parents, ref_children = mlflow_runs(project, "ref")
    assert len(ref_parents) == 1 and ref_parents[0].info.run_id != parent.info.run_id
    assert sorted(r.data.tags["mlflow.runName"].split(" [")[0] for r in ref_children) == sorted(PLANNED)
    assert all(r.data.tags["mlflow.parentRunId"] == ref_parents[0].info.run_id for r in ref_children)
    _, children_after = mlflow_runs(project, "k")  # the first study's runs were not taken over
    assert sorted(r.info.run_id for r in children_after) == sorted(r.info.run_id for r in children)


def test_ofat_n_trials_limits_one_invocation(project: Path):
    """Issue: --n-trials (dvc: -S tune.n_trials=N) was silently ignored in OFAT mode. Now it caps the trials
    of one invocation; undecided factors are reported, and a rerun continues the grid."""
    rc, out = finish(tune(project, "n", "--n-trials", "2"))
    assert rc == 0, out
    assert len(complete_keys(project, "n")) == 2 and "3 of 5 OFAT trials not finished yet" in out
    pending = json.loads((project / "outputs/studies/n/pending.json").read_text())
    assert len(pending) == 3
    rc, out = finish(tune(project, "n"))
    assert rc == 0, out
    assert sorted(complete_keys(project, "n")) == sorted(PLANNED) and "not finished yet" not in out
    assert not (project / "outputs/studies/n/pending.json").exists()


def test_kill9_at_five_points_of_a_study_then_rerun(project: Path):
    """kill -9 at five points of one study (chained: each rerun is killed at the next point), then a rerun to
    the end: every planned trial COMPLETE exactly once, one parent run, the table an uninterrupted study gives."""
    TS = optuna.trial.TrialState

    def done(n: int):
        return lambda: sum(t.state == TS.COMPLETE for t in trials(project, "k5")) >= n

    def running_after(n: int):
        return lambda: done(n)() and any(t.state == TS.RUNNING for t in trials(project, "k5"))

    points = [
        ("the study exists, no trial finished", lambda: bool(trials(project, "k5"))),
        ("a trial running, none finished", running_after(0)),
        ("1 trial finished", done(1)),
        ("3 finished, one running", running_after(3)),
        ("every trial finished (writing outputs)", done(len(PLANNED))),
    ]
    for what, cond in points:
        proc = tune(project, "k5", delay=1.5)
        wait_for(cond, what=what)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        time.sleep(5)  # past the grace period: a killed trial's heartbeat is stale
    rc, out = finish(tune(project, "k5"))
    assert rc == 0, out
    assert sorted(complete_keys(project, "k5")) == sorted(PLANNED)  # each planned trial exactly once
    parents, children = mlflow_runs(project, "k5")
    assert len(parents) == 1 and parents[0].info.status == "FINISHED"
    finished = {r.data.tags["mlflow.runName"].split(" [")[0] for r in children if r.info.status == "FINISHED"}
    assert finished == set(PLANNED)  # a run name carries its scope ("[2 of 5 questions]")
    rc, ref = finish(tune(project, "k5ref"))
    assert rc == 0, ref
    table = [line for line in out.splitlines() if line.startswith("| ") and "retriever.params" not in line]
    ref_table = [line for line in ref.splitlines() if line.startswith("| ") and "retriever.params" not in line]
    assert table and table == ref_table  # same values, scores and choices as an uninterrupted study
