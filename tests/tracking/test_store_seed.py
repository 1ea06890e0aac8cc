"""A new project's MLflow store is a copy of an empty, migrated one (hublab.tracking.store_seed): it must be the store
MLflow would have made itself, and a cache that cannot be written must leave MLflow to make it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest


def _schema(db: Path) -> tuple[list[str], list[tuple]]:
    con = sqlite3.connect(db)
    try:
        ddl = sorted(row[0] for row in con.execute("SELECT sql FROM sqlite_master WHERE sql IS NOT NULL"))
        return ddl, con.execute("SELECT version_num FROM alembic_version").fetchall()
    finally:
        con.close()


def _default_experiment(uri: str):
    from mlflow.tracking import MlflowClient

    exp = MlflowClient(tracking_uri=uri).get_experiment("0")
    return exp.name, exp.artifact_location, exp.lifecycle_stage


def test_a_seeded_store_is_the_store_mlflow_migrates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from hublab.tracking.store_seed import seed_store, template_dir

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.chdir(tmp_path)  # MLflow places the Default experiment under the working folder's mlruns/
    seeded, migrated = tmp_path / "a" / "mlflow.db", tmp_path / "b" / "mlflow.db"
    seeded.parent.mkdir()
    migrated.parent.mkdir()
    assert seed_store(seeded) and any(template_dir().glob("mlflow-*.db"))
    assert not seed_store(seeded)  # an existing store is never replaced
    assert _default_experiment(f"sqlite:///{seeded}") == _default_experiment(f"sqlite:///{migrated}")
    assert _schema(seeded) == _schema(migrated)
    assert oct(seeded.stat().st_mode & 0o777) == oct(migrated.stat().st_mode & 0o777)  # not the temp file's 0600


def test_a_cache_that_cannot_be_written_leaves_the_store_to_mlflow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    from hublab.tracking.store_seed import seed_store

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    db = tmp_path / "mlflow.db"
    assert not seed_store(db) and not db.exists()
    assert _default_experiment(f"sqlite:///{db}")[0] == "Default"


def test_hublab_runs_in_a_seeded_project_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The project store setup() opens is seeded, and an experiment and a run are logged in it."""
    import mlflow

    from hublab.tracking.mlflow_log import setup

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    exp_id = setup(tmp_path, "seeded")
    with mlflow.start_run(experiment_id=exp_id) as run:
        mlflow.log_metric("m", 1.0)
    got = mlflow.get_run(run.info.run_id)
    assert got.data.metrics == {"m": 1.0}
    assert got.info.artifact_uri.startswith((tmp_path / "mlruns" / "artifacts").resolve().as_uri())
    assert any((tmp_path / "cache" / "hublab" / "mlflow-store").glob("mlflow-*.db"))
