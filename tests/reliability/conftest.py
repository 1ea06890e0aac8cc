"""Fixtures of the kill -9 suite: one small real project (10 GV3 papers, 10 KGQA rows) indexed once, without
interruption, by ``hublab index`` in a subprocess — the reference every killed-and-rerun build is compared to."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from reliability import killing as K


@pytest.fixture(scope="session")
def base_project(tmp_path_factory, shared: Path, gv3_orkg_graph) -> Path:
    """The project with its uninterrupted reference HubLink index (models/gv3_orkg__hublink/)."""
    root = K.build_project(tmp_path_factory.mktemp("kill") / "base", shared, gv3_orkg_graph)
    K.hublab(root, *K.INDEX_ARGS, HUBLAB_INDEX_BATCH_HUBS="")  # default batching: the result must not depend on it
    return root


@pytest.fixture()
def fresh_project(base_project: Path, tmp_path: Path) -> Path:
    """A copy of the project without any index, run outputs or MLflow store (embedding cache kept: reruns in
    the real world keep it too)."""
    root = tmp_path / "proj"
    shutil.copytree(base_project, root, ignore=shutil.ignore_patterns("models", "outputs", "mlruns"), symlinks=True)
    return root


@pytest.fixture()
def indexed_project(base_project: Path, tmp_path: Path) -> Path:
    """A copy of the project with the reference index, no run outputs and no MLflow store."""
    root = tmp_path / "proj"
    shutil.copytree(base_project, root, ignore=shutil.ignore_patterns("outputs", "mlruns"), symlinks=True)
    return root


@pytest.fixture(scope="session")
def reference_run(base_project: Path, tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("ref_run") / "proj"
    shutil.copytree(base_project, root, ignore=shutil.ignore_patterns("outputs", "mlruns"), symlinks=True)
    """An uninterrupted `hublab run` on a copy of the indexed project (own outputs and MLflow store)."""
    return K.run_outcome(root, K.hublab(root, *K.RUN_ARGS).stdout)


@pytest.fixture(scope="session")
def reference_index(base_project: Path) -> dict:
    """The reference index's manifest, rows and retrieval (``killing.index_snapshot``)."""
    return K.index_snapshot(base_project)
