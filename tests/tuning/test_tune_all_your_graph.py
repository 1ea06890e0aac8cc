"""`hublab tune-all --graph` (issue #41): the equal-budget study on a user's own Turtle file and CSV of questions
(examples/your-graph: schema.org, golden triples as N-Triples statements), typed from the user's folder. The
study is named by the questions' stem and content and by the graph's content-hashed name (a path is no MLflow
experiment name), HubLink's hub types come from ``--hub-type``, and each tuned file says which graph it was
tuned on."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"
ARTICLE = "https://schema.org/ScholarlyArticle"


@pytest.fixture()
def mine(tmp_path: Path, monkeypatch) -> Path:
    from conftest import share_embedding_cache

    root = tmp_path / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    for name in ("hublink_local", "bm25"):
        (root / "pipelines" / f"{name}.yaml").write_text((ROOT / "pipelines" / f"{name}.yaml").read_text())
    share_embedding_cache(root)
    folder = tmp_path / "mine"
    folder.mkdir()
    for f in ("graph.ttl", "questions.csv"):
        (folder / f).write_bytes((EXAMPLE / f).read_bytes())
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.slow  # two studies with MiniLM and a HubLink index (~20 s): full tier
def test_tune_all_on_a_users_file_and_questions(mine: Path):
    from typer.testing import CliRunner

    from hublab.cli import app

    res = CliRunner().invoke(app, ["tune-all", "bm25", "hublink_local", "--graph", "graph.ttl", "--dataset",
                                   "questions.csv", "--hub-type", ARTICLE, "--n-trials", "2", "--out", "tuned",
                                   "--no-progress"])
    assert res.exit_code == 0, res.output
    for method, pipe in (("bm25", "bm25"), ("hublink", "hublink_local")):
        meta = yaml.safe_load((mine / "tuned" / f"{method}.yaml").read_text())["tuned"]
        # named by the questions' stem + content and the graph's content-hashed source name, never by a path
        assert meta["study"].startswith(f"fair-{pipe}-questions-") and "-on-graph-" in meta["study"], meta
        assert "/" not in meta["study"] and meta["graph"].startswith("graph-"), meta
        assert meta["trials_finished"] == 2 and meta["best_value"] > 0, meta  # every question scored, not zeros
    hub = yaml.safe_load((mine / "tuned" / "hublink.yaml").read_text())
    assert hub["retriever"]["params"]["hub_types"] == [ARTICLE]  # the tuned file runs on this graph as tuned


def test_a_changed_questions_file_is_a_new_study(mine: Path):
    """A study resumes by name: the same file name with other questions must not resume the old study."""
    from hublab.tuning.fair import MethodPlan, study_name

    plan = MethodPlan(Path("bm25.yaml"), "bm25", "bm25", [])
    before = study_name(plan, "questions.csv", "graph.ttl")
    (mine / "questions.csv").write_text((mine / "questions.csv").read_text() + "\n")
    assert study_name(plan, "questions.csv", "graph.ttl") != before
    assert study_name(plan, "reduced_gv1") == "fair-bm25-reduced_gv1"  # the built-in studies keep their names
    assert study_name(plan, "reduced_gv1", "gv1") == "fair-bm25-reduced_gv1"


def test_a_study_is_not_resumed_on_another_graph_model(mine: Path):
    """`hublab tune` takes the label and type predicates per call, as `run` does; a study measured with one list is
    refused when resumed with another (its trials scored another graph model), not silently topped up."""
    from typer.testing import CliRunner

    from hublab.cli import app

    base = ["tune", "bm25", "--study", "s", "--mode", "tpe", "--n-trials", "1", "--graph", "graph.ttl", "--dataset",
            "questions.csv", "--limit", "2", "--no-progress", "--no-carbon"]
    first = CliRunner().invoke(app, base)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, [*base, "--n-trials", "2", "--label-predicate", "https://schema.org/headline"])
    assert again.exit_code != 0
    assert "label or type predicates" in str(again.exception) and "--fresh" in str(again.exception), again.output
    typed = CliRunner().invoke(app, [*base, "--type-predicate", "https://schema.org/additionalType"])
    assert typed.exit_code != 0 and "label or type predicates" in str(typed.exception), typed.output
    same = CliRunner().invoke(app, [*base, "--n-trials", "2"])  # the same graph model tops the study up
    assert same.exit_code == 0, same.output
