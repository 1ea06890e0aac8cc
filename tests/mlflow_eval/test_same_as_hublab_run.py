"""``hublab run`` and ``mlflow.genai.evaluate`` with HubLab's scorers give the same numbers for the same retriever
(issue #21 item 3): the pipeline runs once through the runner and once as a ``predict_fn``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hublab.mlflow_eval import HEADLINE, retrieval_scorers
from hublab.mlflow_eval.data import eval_rows, load_questions
from hublab.mlflow_eval.predict import pipeline_predict_fn

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # a whole `hublab run` and an MLflow evaluation


def test_hublab_run_and_mlflow_evaluate_agree(tmp_path, shared, gv3_orkg_graph, monkeypatch):
    import mlflow
    from typer.testing import CliRunner

    from conftest import small_gv3_project
    from hublab.cli import app

    root = small_gv3_project(tmp_path / "proj", shared, gv3_orkg_graph, monkeypatch)
    monkeypatch.chdir(root)
    (root / "pipelines").mkdir()
    shutil.copyfile(REPO / "pipelines" / "bm25.yaml", root / "pipelines" / "bm25.yaml")
    res = CliRunner().invoke(app, ["run", "pipelines/bm25.yaml", "--graph", "gv3_orkg", "--dataset", "gv3_orkg",
                                   "--no-carbon", "--no-trace", "--json"])
    assert res.exit_code == 0, res.output
    ran = json.loads(res.stdout[res.stdout.index("{"):])["metrics"]

    mlflow.set_experiment("mlflow-evaluate")  # the project's store, which `hublab run` pointed MLflow at
    pairs = load_questions("gv3_orkg")
    result = mlflow.genai.evaluate(data=eval_rows(pairs, topic=True), scorers=retrieval_scorers(),
                                   predict_fn=pipeline_predict_fn(root / "pipelines" / "bm25.yaml", "gv3_orkg"))
    assert ran["n_questions"] == len(pairs) == 5
    assert ran["hit_at_10_triples"] > 0  # a comparison of zeros would prove nothing
    for m in HEADLINE:
        assert abs(result.metrics[f"{m}/mean"] - ran[m]) <= 1e-9, (m, result.metrics[f"{m}/mean"], ran[m])
