"""An index a method builds on first use is built before the first question and counted apart (issue #21 item 5):
``index_build_s`` in the run's metrics, MLflow and ``--json``, never inside the per-question ``runtime`` (4StepFocus
showed 25.25 s/question in ``report compare`` for a 0.012 s method because its first question built the index).
And each run says where to look at it (item 7): its page on a tracking server, else the ``mlflow ui`` command,
never with the credentials of the URI."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hublab.retrievers.base import Context, RetrievalResult, Retriever
from hublab.retrievers.registry import register
from hublab.tracking.run_link import run_link

BUILD_S = 0.3


@register("lazy_index_probe")
class LazyIndexRetriever(Retriever):
    """Builds its "index" (a slow pass over the graph) on its first question unless it was built before."""

    def __init__(self, resources, **params):
        super().__init__(resources, **params)
        self._built: list | None = None
        self.built_during_question = False

    def index(self, *, progress: bool = True):
        if self._built is None:
            time.sleep(BUILD_S)
            self._built = list(self.resources.graph.outgoing("R659055"))[:5]
        return {"triples": len(self._built)}

    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        if self._built is None:
            self.built_during_question = True
            self.index(progress=False)
        return RetrievalResult([Context(t.render(), t) for t in self._built])


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    from conftest import make_project
    from hublab.config import _load_params
    from hublab.datasets.kgqa_csv import load_kgqa_csv

    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")[:3]
    yield make_project(tmp_path / "proj", shared, gv3_orkg_graph, pairs, monkeypatch)
    _load_params.cache_clear()


def test_index_build_is_timed_apart_from_the_questions(project: Path):
    from mlflow.tracking import MlflowClient

    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.pipeline.config import PipelineConfig
    from hublab.tracking.mlflow_log import tracking_uri

    cfg = PipelineConfig.from_dict({"name": "lazy", "retriever": {"type": "lazy_index_probe"}})
    s = run_experiment(RunRequest.build(cfg, "gv3_orkg", "gv3_orkg", track_carbon=False, progress=False, trace=False))
    assert s.n_questions == 3 and s.metrics["index_build_s"] >= BUILD_S
    assert s.index_build_s == s.metrics["index_build_s"]
    assert max(r["runtime"] for r in s.per_question) < BUILD_S  # no question paid for the build
    assert s.metrics["runtime"] < BUILD_S
    run = MlflowClient(tracking_uri(project)).get_run(s.run_id)
    assert run.data.metrics["index_build_s"] == pytest.approx(s.metrics["index_build_s"])


def test_cli_run_reports_the_build_and_where_to_open_the_run(project: Path, tmp_path: Path):
    from hublab.cli import app

    pipe = tmp_path / "lazy.yaml"
    pipe.write_text("name: lazy\nretriever:\n  type: lazy_index_probe\n")
    args = ["run", str(pipe), "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon", "--no-trace"]
    res = CliRunner().invoke(app, [*args, "--json"])
    assert res.exit_code == 0, res.output
    doc, _ = json.JSONDecoder().raw_decode(res.output[res.output.index("{"):])
    assert doc["index_build_s"] >= BUILD_S and doc["metrics"]["runtime"] < BUILD_S
    db = (project / "mlruns" / "mlflow.db").resolve()
    assert f"mlflow ui --backend-store-uri sqlite:///{db}" in res.output
    assert f"/runs/{doc['run_id']}" in res.output
    # the table run (resumed: nothing to build, nothing run) prints the same pointer, and no progress bar
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    assert f"MLflow run {doc['run_id']}: open it with `mlflow ui --backend-store-uri sqlite:///{db}`" in \
        res.output.replace("\n", "")
    assert "3/3" not in res.output  # no bar when stderr is not a terminal (tests, pipes) unless --progress


def test_run_link_names_the_server_page_without_credentials():
    line = run_link("https://alice:s3cret-key@mlflow.example.org/", "7", "abc123")
    assert line == "MLflow run: https://***@mlflow.example.org/#/experiments/7/runs/abc123"
    assert "s3cret" not in line and "alice" not in line
    local = run_link("sqlite:////tmp/my project/mlflow.db", "0", "abc123")
    assert "mlflow ui --backend-store-uri 'sqlite:////tmp/my project/mlflow.db'" in local
    assert local.endswith("http://127.0.0.1:5000/#/experiments/0/runs/abc123")
