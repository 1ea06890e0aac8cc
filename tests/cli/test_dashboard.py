"""``hublab dashboard`` (issue #30 item 2): the README's ``optuna-dashboard sqlite:///mlruns/optuna.db`` crashed on a
quick-started checkout (no studies yet) and left a 0-byte database behind. The command checks the storage first
(exit 2, one line naming what creates it, nothing created), then serves the studies with optuna-dashboard."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from support.local_procs import free_port, stop_group

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture()
def project(tmp_path, shared, monkeypatch) -> Path:
    from conftest import shared_params_project

    return shared_params_project(tmp_path, shared, monkeypatch)


def _one_error_line(err: str) -> str:
    lines = [ln for ln in err.splitlines() if ln.startswith("error: ")]
    assert len(lines) == 1, err
    return lines[0]


def test_no_studies_yet_exits_2_naming_what_creates_them_and_creates_nothing(project):
    from conftest import invoke_cli

    code, out, err = invoke_cli(["dashboard"])
    assert code == 2, (out, err)
    line = _one_error_line(err)
    db = project / "mlruns" / "optuna.db"
    assert f"{db} does not exist" in line and "hublab tune-all" in line and "dvc repro tune_all" in line
    assert not (project / "mlruns").exists()  # neither the file nor its folder
    code, out, err = invoke_cli(["dashboard", "--storage", f"sqlite:///{project / 'elsewhere.db'}"])
    assert code == 2 and "elsewhere.db does not exist" in _one_error_line(err)
    assert not (project / "elsewhere.db").exists()


def test_an_empty_or_foreign_database_is_refused_untouched(project):
    from conftest import invoke_cli

    (project / "mlruns").mkdir()
    empty = project / "mlruns" / "optuna.db"
    empty.touch()  # what the crashed optuna-dashboard left behind
    code, out, err = invoke_cli(["dashboard"])
    assert code == 2 and "is empty (0 bytes" in _one_error_line(err) and "delete it" in err
    assert empty.stat().st_size == 0
    other = project / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE experiments (id INTEGER)")
    con.commit()
    con.close()
    before = other.read_bytes()
    code, out, err = invoke_cli(["dashboard", "--storage", f"sqlite:///{other}"])
    assert code == 2 and "holds no Optuna storage" in _one_error_line(err)
    assert other.read_bytes() == before


@pytest.mark.slow  # starts an optuna-dashboard server process
def test_a_real_study_is_served_by_optuna_dashboard(tmp_path):
    import optuna

    storage = f"sqlite:///{tmp_path / 'optuna.db'}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(storage=storage, study_name="fair-bm25-reduced_gv1", direction="maximize")
    study.optimize(lambda t: t.suggest_float("k1", 0.2, 3.0), n_trials=3)
    port = free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(SRC), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "hublab.cli", "dashboard", "--storage", storage, "--port",
                             str(port)], env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    try:
        status, studies, deadline = None, None, time.monotonic() + 120
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as resp:
                    status = resp.status
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/studies", timeout=10) as resp:
                    studies = json.loads(resp.read())
                break
            except OSError:
                time.sleep(0.5)
        assert status == 200, (proc.poll(), proc.stderr.read().decode()[-2000:] if proc.poll() is not None else "")
        assert [s["study_name"] for s in studies["study_summaries"]] == ["fair-bm25-reduced_gv1"]
    finally:
        stop_group(proc)
        proc.stdout.close()
        proc.stderr.close()


def test_the_wait_it_names_is_the_measured_one(tmp_path: Path):
    """The time ``hublab tune-all`` takes comes from its benchmark's file, not from a figure written in the code."""
    from hublab.cli.dashboard import TUNE_ALL_BENCH, tune_all_estimate

    assert tune_all_estimate(tmp_path) == ""  # never measured here: no figure at all
    (tmp_path / TUNE_ALL_BENCH).parent.mkdir(parents=True)
    (tmp_path / TUNE_ALL_BENCH).write_text(json.dumps({"total_s": 612.0, "jobs": 2, "cpus": 2}))
    assert tune_all_estimate(tmp_path) == ", ~10 min with 2 jobs on 2 cores as last measured"
