"""Shared fixtures: paths to the real reference data in ../shared and offline settings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hublab.env import apply_offline_defaults

apply_offline_defaults()

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("HUBLAB_SHARED", ROOT.parent / "shared"))


@pytest.fixture(scope="session")
def shared() -> Path:
    if not SHARED.exists():
        pytest.fail(f"reference data not found at {SHARED} (set HUBLAB_SHARED)")
    return SHARED


@pytest.fixture(scope="session")
def gv3_export(shared: Path) -> Path:
    return shared / "data" / "orkg" / "gv3_flat_distributed.json"


@pytest.fixture(scope="session")
def gv3_orkg_graph(gv3_export: Path):
    from hublab.graph.rdf import RdfKnowledgeGraph

    return RdfKnowledgeGraph.load(gv3_export, name="gv3_orkg")
