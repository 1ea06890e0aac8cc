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


def make_project(root: Path, shared: Path, graph, pairs, monkeypatch) -> Path:
    """A throwaway HubLab project: params.yaml from the repo's (paths inside ``root``), the graph as the
    gv3_orkg snapshot and ``pairs`` as the gv3_orkg dataset; HUBLAB_ROOT points at it."""
    import yaml

    from hublab.config import _load_params
    from hublab.datasets.model import write_jsonl

    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["paths"].update({"shared": str(shared), "thesis_results": str(shared / "reference/thesis_results")})
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    graph.save(root / "data/snapshots/gv3_orkg.ttl")
    write_jsonl(pairs, root / "data/kgqa/gv3_orkg.jsonl")
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    _load_params.cache_clear()
    return root
