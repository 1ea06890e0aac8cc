"""A real MLflow tracking server for platform tests, on 127.0.0.1 only.

- ``mlflow_server`` (session fixture): ``mlflow server`` (the venv's MLflow) with a throwaway sqlite store and
  artifact folder, started once and stopped after the session.
- ``mlflow_project`` (session fixture): a small real HubLab project (10 GV3 papers, 10 KGQA rows, two LLM-free
  BM25 pipelines); tests copy it (``copy_project``) and run ``hublab run`` subprocesses in the copies with
  ``MLFLOW_TRACKING_URI`` pointing at the server (``run_env``).

(Fixtures live here and are imported by ``tests/conftest.py``: a second ``conftest.py`` in a folder without
``__init__.py`` would shadow the root one for ``from conftest import make_project``.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from support.local_procs import free_port, stop_group

REPO = Path(__file__).resolve().parents[2]  # tests/support/ -> the repository
SRC = REPO / "src"
MLFLOW = Path(sys.executable).parent / "mlflow"
GRAPH = "gv3_orkg"
N_PAPERS = 10


@dataclass
class MlflowServer:
    url: str
    db: Path
    artifacts: Path
    log: Path
    proc: subprocess.Popen

    def command(self) -> list[str]:
        return list(self.proc.args)  # type: ignore[arg-type]


def start_mlflow_server(base: Path, *, timeout: float = 120, backend_store_uri: str | None = None) -> MlflowServer:
    """``mlflow server --backend-store-uri sqlite:///<base>/mlflow.db --artifacts-destination <base>/mlartifacts
    --host 127.0.0.1 --port <free port> --workers 2``; returns once ``/health`` answers. The server runs in its
    own process group (its uvicorn workers are stopped with it). ``backend_store_uri``: another backend store
    (a PostgreSQL database) instead of the sqlite file."""
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    db, artifacts, log = base / "mlflow.db", base / "mlartifacts", base / "server.log"
    cmd = [str(MLFLOW), "server", "--backend-store-uri", backend_store_uri or f"sqlite:///{db}",
           "--artifacts-destination", str(artifacts),
           "--host", "127.0.0.1", "--port", str(port), "--workers", "2"]
    env = {**os.environ, "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true"}
    env.pop("MLFLOW_TRACKING_URI", None)
    out = open(log, "w")  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(cmd, cwd=base, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    server = MlflowServer(f"http://127.0.0.1:{port}", db, artifacts, log, proc)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(f"{server.url}/health", timeout=2) as r:
                if r.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.3)
    stop_mlflow_server(server)
    raise RuntimeError(f"mlflow server did not answer /health within {timeout} s:\n{log.read_text()[-3000:]}")


def stop_mlflow_server(server: MlflowServer) -> None:
    """Stop the server and its uvicorn workers (its process group)."""
    stop_group(server.proc, timeout=15)


# ------------------------------------------------------------------ a small real project
def build_project(root: Path, shared: Path, full_graph, n_questions: int = 10) -> Path:
    """params.yaml (paths inside ``root``), the first ``N_PAPERS`` GV3 papers as the gv3_orkg snapshot, KGQA
    rows about those papers first (so metrics are not all zero) and two LLM-free, index-free pipelines:
    ``bm25`` (the repo's) and ``bm25_k10`` (the same with ``n_results: 10``)."""
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.datasets.model import write_jsonl
    from hublab.graph.rdf import RdfKnowledgeGraph

    papers = [e.uid for e in full_graph.entities_by_type("Paper")][:N_PAPERS]
    triples = {t.render(): t for p in papers for t in full_graph.subgraph(p)}
    graph = RdfKnowledgeGraph.from_triples(list(triples.values()), name=GRAPH)
    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")
    about = [p for p in pairs if any(g in triples for g in p.golden_triples)]
    rest = [p for p in pairs if p not in about]
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["paths"].update({"shared": str(shared), "thesis_results": str(shared / "reference/thesis_results")})
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    graph.save(root / "data/snapshots/gv3_orkg.ttl")
    write_jsonl((about + rest)[:n_questions], root / "data/kgqa/gv3_orkg.jsonl")
    (root / "pipelines").mkdir(exist_ok=True)
    bm25 = yaml.safe_load((REPO / "pipelines/bm25.yaml").read_text())
    (root / "pipelines/bm25.yaml").write_text(yaml.safe_dump(bm25))
    bm25.update(name="bm25_k10")
    bm25["retriever"]["params"]["n_results"] = 10
    (root / "pipelines/bm25_k10.yaml").write_text(yaml.safe_dump(bm25))
    return root


def copy_project(template: Path, root: Path) -> Path:
    """A copy of the project without index, run outputs or MLflow store: each ``hublab run`` process gets its own
    checkout (a Milvus Lite index file admits one process at a time)."""
    import shutil

    shutil.copytree(template, root, ignore=shutil.ignore_patterns("models", "outputs", "mlruns"))
    return root


def run_env(root: Path, tracking_uri: str) -> dict[str, str]:
    """The environment of a ``hublab run`` subprocess: this checkout's sources, offline, the server as the
    tracking URI (``$MLFLOW_TRACKING_URI`` wins over the project's sqlite store, tracking/mlflow_log.py)."""
    path = os.pathsep.join(p for p in (str(SRC), os.environ.get("PYTHONPATH", "")) if p)
    return {**os.environ, "PYTHONPATH": path, "HUBLAB_ROOT": str(root), "MLFLOW_TRACKING_URI": tracking_uri,
            "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
            "DO_NOT_TRACK": "true", "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false"}


def run_args(pipeline: str, limit: int, experiment: str) -> list[str]:
    return [sys.executable, "-m", "hublab.cli", "run", f"pipelines/{pipeline}.yaml", "--graph", GRAPH, "--dataset",
            GRAPH, "--limit", str(limit), "--experiment", experiment, "--no-carbon", "--json"]


def parse_run_json(stdout: str) -> dict:
    return json.loads(stdout[stdout.index("{"):])


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory):
    server = start_mlflow_server(tmp_path_factory.mktemp("mlflow_server"))
    try:
        yield server
    finally:
        stop_mlflow_server(server)


@pytest.fixture(scope="session")
def mlflow_project(tmp_path_factory, shared: Path, gv3_orkg_graph) -> Path:
    """The template project; copy it (``copy_project``) before running anything in it."""
    return build_project(tmp_path_factory.mktemp("mlflow_project") / "proj", shared, gv3_orkg_graph)
