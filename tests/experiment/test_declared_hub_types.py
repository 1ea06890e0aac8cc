"""A graph declared in ``params.yaml`` with its hub types: every door runs HubLink on them, including the ones that
build their runs without the CLI's preflight (``hublab report compare --graph``, the ``compare_user`` stage), and a
declared hub type with no instances is refused there instead of scoring 0 (issue #41's review defect)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from hublab.config import Settings, _load_params
from hublab.errors import InputError
from hublab.pipeline.config import load_pipeline

ROOT = Path(__file__).resolve().parents[2]
ARTICLE = "https://schema.org/ScholarlyArticle"


def _project(tmp: Path, hub_types: list[str]) -> Settings:
    from conftest import share_embedding_cache

    root = tmp / "project"
    (root / "pipelines").mkdir(parents=True)
    shutil.copytree(ROOT / "examples" / "your-graph", root / "mine")
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["user_graphs"] = {"graphs": {"example": {"source": "mine/graph.ttl", "hub_types": hub_types}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    for name in ("hublink_local", "bm25"):
        shutil.copy(ROOT / "pipelines" / f"{name}.yaml", root / "pipelines" / f"{name}.yaml")
    share_embedding_cache(root)
    _load_params.cache_clear()
    return Settings(root, params)


def test_compare_runs_hublink_on_the_declared_hub_types(tmp_path: Path):
    """The comparison's HubLink row scores on the example graph (schema.org, no ORKG Paper), as `hublab run` does."""
    from hublab.experiment.comparison.single_graph import compare_methods

    st = _project(tmp_path, [ARTICLE])
    res = compare_methods([st.root / "pipelines" / "hublink_local.yaml"], "example", str(st.root / "mine" /
                          "questions.csv"), settings=st, limit=None, experiment="t", track_carbon=False)
    (row,) = res.rows
    assert row["n_questions"] == 5 and row["Hits@10"] > 0, row


def test_a_declared_hub_type_without_instances_is_refused_by_the_run_itself(tmp_path: Path):
    """No preflight in front: the runner refuses before any question, naming the graph's types."""
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    st = _project(tmp_path, ["https://schema.org/Nothing"])
    cfg = load_pipeline(st.root / "pipelines" / "hublink_local.yaml")
    with pytest.raises(InputError, match="has no instances.*ScholarlyArticle"):
        run_experiment(RunRequest(cfg, "example", str(st.root / "mine" / "questions.csv"), st, track_carbon=False))
    assert not list((st.root / "mlruns").glob("**/meta.yaml"))  # nothing logged
