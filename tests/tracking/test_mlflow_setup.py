"""``mlflow_log.setup`` is asked once per run, so once per trial of a study: a process remembers the experiment it
set up in a store, and another store (another project, or another file at the same path) gets its own, never an
id from the first."""

from __future__ import annotations

from pathlib import Path

import pytest

from hublab.tracking import mlflow_log


def test_an_experiment_is_set_up_once_per_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    import mlflow

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    one, two = tmp_path / "one", tmp_path / "two"
    first = mlflow_log.setup(one, "a")
    assert mlflow_log.setup(one, "a") == first
    assert mlflow.get_experiment(first).name == "a"
    b = mlflow_log.setup(two, "b")  # in the second store "b" comes first, so "a" gets another id there
    a_two = mlflow_log.setup(two, "a")
    assert a_two != first and mlflow.get_experiment(a_two).name == "a"
    assert mlflow.get_experiment(b).name == "b"
    assert mlflow_log.setup(one, "a") == first
    mlflow.set_tracking_uri(mlflow_log.tracking_uri(one))
    assert mlflow.get_experiment(first).name == "a"
