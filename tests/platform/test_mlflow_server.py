"""MLflow by URI against a separate tracking server (``mlflow server`` on 127.0.0.1, sqlite backend, artifacts
proxied by the server): two ``hublab run`` processes (two checkouts of one small project, two configs) log to it
at the same time, and each run arrives whole — its status, params, metrics and artifacts, none lost, none mixed
with the other's."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

import support.mlflow_servers as M

pytestmark = pytest.mark.slow  # mlflow server and hublab run subprocesses

INJECT = Path(__file__).resolve().parent / "inject"
JOBS = {"bm25": 3, "bm25_k10": 5}  # pipeline → --limit: two different runs (different configs and scopes)


def _questions(root: Path, n: int) -> list[str]:
    from hublab.datasets.model import read_jsonl

    return [p.question for p in read_jsonl(root / "data/kgqa/gv3_orkg.jsonl")[:n]]


def test_two_concurrent_hublab_runs_log_whole_runs_to_one_mlflow_server(mlflow_server, mlflow_project: Path,
                                                                        tmp_path: Path):
    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import finite_metrics

    experiment = f"concurrent-{uuid.uuid4().hex[:8]}"
    roots = {name: M.copy_project(mlflow_project, tmp_path / name / "proj") for name in JOBS}
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = {}
    for name, limit in JOBS.items():
        env = M.run_env(roots[name], mlflow_server.url)
        # both MLflow runs RUNNING on the server at once, whatever each process's start-up time
        env.update(PYTHONPATH=os.pathsep.join([str(INJECT), env["PYTHONPATH"]]),
                   HUBLAB_TEST_BARRIER=f"{barrier}:{len(JOBS)}")
        procs[name] = subprocess.Popen(M.run_args(name, limit, experiment), cwd=roots[name], env=env,
                                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outs = {name: p.communicate(timeout=300) for name, p in procs.items()}
    for name, p in procs.items():
        assert p.returncode == 0, f"{name} exited {p.returncode}:\n{outs[name][1][-3000:]}"
    assert len(list(barrier.glob("*.started"))) == len(JOBS)
    results = {name: M.parse_run_json(out) for name, (out, _) in outs.items()}
    ids = {name: r["run_id"] for name, r in results.items()}
    assert len(set(ids.values())) == len(JOBS)

    client = MlflowClient(mlflow_server.url)
    exp = client.get_experiment_by_name(experiment)
    assert exp is not None, f"experiment {experiment} not on the server"
    runs = {r.info.run_id: r for r in client.search_runs([exp.experiment_id])}
    assert set(runs) == set(ids.values()), f"runs on the server {sorted(runs)} != runs made {ids}"
    a, b = runs.values()
    assert a.info.start_time < b.info.end_time and b.info.start_time < a.info.end_time  # they did overlap

    for name, limit in JOBS.items():
        run, res = runs[ids[name]], results[name]
        assert run.info.status == "FINISHED"
        assert run.data.params["name"] == name and run.data.tags["hublab.pipeline"] == name
        assert run.data.params["limit"] == str(limit)
        assert run.data.params["retriever.params.n_results"] == ("10" if name == "bm25_k10" else "30")
        from hublab.tracking.run_page import headline

        expected = finite_metrics(headline(res["metrics"]))  # the run page's metrics; all of them in metrics.json
        assert expected, res
        missing = sorted(set(expected) - set(run.data.metrics))
        assert not missing, f"{name}: metrics lost on the server: {missing}"
        for key, value in expected.items():
            assert run.data.metrics[key] == pytest.approx(value, rel=1e-9, abs=1e-12), key
        arts = {f.path for f in client.list_artifacts(run.info.run_id)}
        assert {"predictions.csv", "pipeline.yaml", "metrics.json"} <= arts, arts
        # proxied through the server into its --artifacts-destination, not written into the project
        stored = mlflow_server.artifacts / exp.experiment_id / run.info.run_id / "artifacts"
        assert (stored / "predictions.csv").is_file(), sorted(mlflow_server.artifacts.rglob("*"))[:20]
        dl = str(tmp_path / name / "dl")
        got = Path(client.download_artifacts(run.info.run_id, "predictions.csv", dl))
        with got.open(encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
        assert [r["question"] for r in rows] == _questions(roots[name], limit)  # this run's questions, no other's
        saved = json.loads(Path(client.download_artifacts(run.info.run_id, "metrics.json", dl))
                           .read_text())
        assert saved["recall_triples"] == pytest.approx(res["metrics"]["recall_triples"])
        pipe = Path(client.download_artifacts(run.info.run_id, "pipeline.yaml", dl)).read_text()
        assert yaml.safe_load(pipe)["name"] == name
        assert not (roots[name] / "mlruns" / "mlflow.db").exists()  # nothing went to the project's own store
