"""``hublab run`` and ``mlflow.genai.evaluate`` with HubLab's scorers give the same numbers for the same retriever
(issue #21 item 3): the pipeline runs once through the runner and once as a ``predict_fn``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hublab.mlflow_eval import HEADLINE, retrieval_scorers
from hublab.mlflow_eval.data import eval_rows, load_questions
from hublab.mlflow_eval.predict import pipeline_predict_fn

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow  # a whole `hublab run` and an MLflow evaluation


def test_hublab_run_and_mlflow_evaluate_agree(tmp_path, shared, gv3_orkg_graph, monkeypatch):
    import mlflow

    from conftest import small_gv3_project
    from hublab.tracking.mlflow_log import tracking_uri

    root = small_gv3_project(tmp_path / "proj", shared, gv3_orkg_graph, monkeypatch)
    monkeypatch.chdir(root)
    (root / "pipelines").mkdir()
    shutil.copyfile(REPO / "pipelines" / "bm25.yaml", root / "pipelines" / "bm25.yaml")
    # `hublab run` as its own process (as a user runs it): in-process, its MLflow set-up inside CliRunner's swapped
    # streams left this process's later MLflow logging writing to a closed stderr
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    res = subprocess.run([sys.executable, "-m", "hublab.cli", "run", "pipelines/bm25.yaml", "--graph", "gv3_orkg",
                          "--dataset", "gv3_orkg", "--no-carbon", "--no-trace", "--json"], cwd=root, env=env,
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    ran = json.loads(res.stdout[res.stdout.index("{"):])["metrics"]

    mlflow.set_tracking_uri(tracking_uri(root))  # the project's store, next to the `hublab run` run
    mlflow.set_experiment("mlflow-evaluate")
    pairs = load_questions("gv3_orkg")
    result = mlflow.genai.evaluate(data=eval_rows(pairs, topic=True), scorers=retrieval_scorers(),
                                   predict_fn=pipeline_predict_fn(root / "pipelines" / "bm25.yaml", "gv3_orkg"))
    assert ran["n_questions"] == len(pairs) == 5
    assert ran["hit_at_10_triples"] > 0  # a comparison of zeros would prove nothing
    for m in HEADLINE:
        assert abs(result.metrics[f"{m}/mean"] - ran[m]) <= 1e-9, (m, result.metrics[f"{m}/mean"], ran[m])
