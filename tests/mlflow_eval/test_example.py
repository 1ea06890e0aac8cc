"""``examples/evaluate_with_mlflow.py``: a plain BM25 function scored by ``mlflow.genai.evaluate`` with HubLab's
scorers leaves one MLflow run with a trace and the thesis metrics per question, and its means are the ones
HubLab's own metric code gives for the same triples."""

from __future__ import annotations

import os
import runpy
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hublab.evaluation import names
from hublab.evaluation.retrieval import aggregate, retrieval_metrics
from hublab.mlflow_eval import HEADLINE
from hublab.mlflow_eval.data import load_questions, triple_texts

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "evaluate_with_mlflow.py"

pytestmark = pytest.mark.slow  # an MLflow store, a run and a trace per question: 10-40 s on a busy 2-core machine


def _run_example(tmp_path: Path, capsys, *args: str) -> tuple[dict, dict, str, dict]:
    """Run the example's ``main`` into a fresh store: its means, its per-question assessments, its output."""
    import mlflow

    from conftest import migrated_mlflow_store

    shutil.copyfile(migrated_mlflow_store(), tmp_path / "mlflow.db")
    example = runpy.run_path(str(EXAMPLE), run_name="example")
    metrics = example["main"]([*args, "--store-dir", str(tmp_path), "--experiment", "example-test"])
    out = capsys.readouterr().out
    exp = mlflow.get_experiment_by_name("example-test")
    assert exp.artifact_location == (tmp_path / "artifacts").resolve().as_uri()  # traces stay in the store folder
    runs = mlflow.search_runs([exp.experiment_id], output_format="list")
    assert len(runs) == 1
    traces = mlflow.search_traces(locations=[exp.experiment_id], run_id=runs[0].info.run_id, return_type="list")
    per_q = {t.data.request: {a.name: a for a in t.info.assessments} for t in traces}
    return metrics, per_q, out, example


def _check(metrics: dict, per_q: dict, example: dict, questions, texts: list[str]) -> None:
    retrieve = example["bm25_search"](texts)
    want = aggregate([{**retrieval_metrics(retrieve(p.question), list(p.golden_triples)),
                       names.TRIPLES_PER_QUESTION: float(len(retrieve(p.question)))} for p in questions])
    assert set(metrics) == {f"{m}/mean" for m in HEADLINE}
    for m in HEADLINE:
        assert abs(metrics[f"{m}/mean"] - want[m]) <= 1e-9, m
    assert len(per_q) == len(questions)  # one trace per question, each with every metric as an assessment
    for assessments in per_q.values():
        assert set(HEADLINE) <= set(assessments)
        assert all(assessments[m].error is None for m in HEADLINE)
        assert assessments["uid"].value in {p.uid for p in questions}  # joinable with hublab run's records


def test_example_on_the_shipped_gv3_export(tmp_path, capsys, shared):
    dataset = shared / "data/kgqa/flat_distributed.csv"
    graph = shared / "data/orkg/gv3_flat_distributed.json"
    metrics, per_q, _, example = _run_example(tmp_path, capsys, "--dataset", str(dataset), "--graph", str(graph),
                                              "--limit", "4")
    _check(metrics, per_q, example, load_questions(str(dataset))[:4], triple_texts(str(graph)))
    assert metrics[f"{names.HITS_AT_10}/mean"] > 0  # BM25 finds some golden triples of these questions


@pytest.fixture(scope="module")
def gv1_project(tmp_path_factory, shared: Path) -> Path:
    """The data stages as a fresh clone runs them (``hublab data snapshot/graphs/datasets``, ~25 s)."""
    root = tmp_path_factory.mktemp("gv1")
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for key, val in params["paths"].items():
        if isinstance(val, str) and val.startswith("../shared"):
            params["paths"][key] = str(shared) + val[len("../shared"):]
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    env = {k: v for k, v in os.environ.items() if k not in ("HUBLAB_ROOT", "MLFLOW_TRACKING_URI")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")])
    for stage in ("snapshot", "graphs", "datasets"):
        res = subprocess.run([sys.executable, "-m", "hublab.cli", "data", stage], cwd=root, env=env,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stderr[-3000:]
    return root


def test_example_on_reduced_gv1(tmp_path, capsys, gv1_project, monkeypatch):
    """The example's defaults: the reduced GV1 set on the GV1 graph, as ``hublab run`` names them."""
    monkeypatch.setenv("HUBLAB_ROOT", str(gv1_project))
    metrics, per_q, out, example = _run_example(tmp_path, capsys, "--limit", "5")
    _check(metrics, per_q, example, load_questions("reduced_gv1")[:5], triple_texts("gv1"))
    assert "hit_at_10_triples/mean" in out and "mlflow ui --backend-store-uri sqlite:///" in out
