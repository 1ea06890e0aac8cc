"""Fixtures of the platform tests that need an MLflow tracking server: one ``mlflow server`` process for the
session (started on 127.0.0.1, stopped after) and one small real project for ``hublab run`` subprocesses."""

from __future__ import annotations

from pathlib import Path

import mlflow_support as M
import pytest


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    server = M.start_mlflow_server(tmp_path_factory.mktemp("mlflow_server"))
    try:
        yield server
    finally:
        M.stop_mlflow_server(server)


@pytest.fixture(scope="session")
def small_project(tmp_path_factory, shared: Path, gv3_orkg_graph) -> Path:
    return M.build_project(tmp_path_factory.mktemp("mlflow_project") / "proj", shared, gv3_orkg_graph)
