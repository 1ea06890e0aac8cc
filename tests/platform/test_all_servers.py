"""The team set-up, all at once on 127.0.0.1 (docs/scale-out.md, "The whole stack on servers"): an MLflow tracking
server with a PostgreSQL backend store, a Milvus standalone server holding the index, and two ``hublab tune``
workers sharing one Optuna study on PostgreSQL. The doc's commands are the ones run here: ``COMMANDS`` and
``PIPELINE`` must appear in docs/scale-out.md verbatim (the first test checks that), and the second runs them
with the shell variables filled in.

Asserted: every planned trial finished exactly once (COMPLETE, distinct numbers, as many as planned, split over
both workers), each trial's MLflow run is on the tracking server (FINISHED, under the study's one parent), and
nothing was written to the project's local stores (no ``mlruns/mlflow.db``, no ``mlruns/optuna.db``, no Milvus
Lite file under ``models/``)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from string import Template

import pytest

from hublab.tuning.study import trial_metrics
from support.mlflow_servers import MLFLOW, start_mlflow_server, stop_mlflow_server
from support.real_parts import need_module

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "scale-out.md"
INJECT = Path(__file__).resolve().parent / "inject"  # HUBLAB_TEST_TRIAL_DELAY (sitecustomize.py)
BIN = Path(sys.executable).parent

# the doc's pipeline: VSS (LLM-free) with its index on the Milvus server; the study varies only what is not
# indexed (n_results), so both workers search the one collection `hublab index` built
PIPELINE = """\
name: vss_server
retriever:
  type: vss
  params: {units: nodes, add_rel: false, n_results: 30}
llm: {backend: none}
embedder: {model: all-MiniLM-L6-v2, device: cpu}
vector_store:
  uri: http://127.0.0.1:19530
  token_env: MILVUS_TOKEN
  index: {type: HNSW, M: 16, efConstruction: 200, ef: 64}
generation: {enabled: false}
evaluation: {k: 10}
search_space:
  retriever.params.n_results: {values: [10, 20, 50]}
"""
PLANNED = ["base", "retriever.params.n_results=10", "retriever.params.n_results=20", "retriever.params.n_results=50"]
LIMIT = 3  # questions per trial

# the doc's commands, in order (servers, then the index, then the workers); $VARS as in the doc
COMMANDS = {
    "mlflow": "mlflow server --backend-store-uri $MLFLOW_DB --artifacts-destination $ARTIFACTS "
              "--host 127.0.0.1 --port $MLFLOW_PORT --workers 2",
    "milvus": "milvus-server --data $MILVUS_DATA --proxy-port $MILVUS_PORT --authorization-enabled true",
    "index": "hublab index --pipeline pipelines/vss_server.yaml --graph gv3_orkg",
    "tune": f"hublab tune pipelines/vss_server.yaml --study team --mode ofat --dataset gv3_orkg --limit {LIMIT} "
            "--storage $OPTUNA_DB --no-carbon --no-progress",
}
ENV = {"MLFLOW_TRACKING_URI": "http://127.0.0.1:$MLFLOW_PORT", "MILVUS_TOKEN": "root:Milvus"}


def test_the_doc_gives_these_commands():
    doc = DOC.read_text()
    missing = [c for c in [PIPELINE.rstrip(), *COMMANDS.values(), *(f"export {k}={v}" for k, v in ENV.items())]
               if c not in doc]
    assert not missing, f"docs/scale-out.md lacks what tests/platform/test_all_servers.py runs: {missing}"


def _argv(line: str, values: dict[str, str]) -> list[str]:
    """A doc command line as argv: variables filled in, `hublab`/`mlflow` as this venv's."""
    argv = shlex.split(Template(line).substitute(values))
    if argv[0] == "hublab":
        return [sys.executable, "-m", "hublab.cli", *argv[1:]]
    return [str(BIN / argv[0]), *argv[1:]]


def _create_databases(url: str, *names: str) -> dict[str, str]:
    """New databases on the test's PostgreSQL server (MLflow and Optuna each keep an ``alembic_version`` table, so
    they cannot share one): name -> URL."""
    need_module("psycopg2", "psycopg2 (the dev extra)")
    import sqlalchemy

    base = sqlalchemy.engine.make_url(url)
    engine = sqlalchemy.create_engine(base, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as con:
            for n in names:
                con.execute(sqlalchemy.text(f'CREATE DATABASE "{n}"'))
    finally:
        engine.dispose()
    url_of = base.set(drivername="postgresql+psycopg2")
    return {n: url_of.set(database=n).render_as_string(hide_password=False) for n in names}


def _local_stores(root: Path) -> list[str]:
    """What the project's own stores would hold had anything been written locally."""
    found = [p for p in (root / "mlruns" / "mlflow.db", root / "mlruns" / "optuna.db") if p.exists()]
    found += list((root / "mlruns").glob("artifacts/*")) if (root / "mlruns").is_dir() else []
    found += [p for p in root.rglob("*.db") if "models" in p.relative_to(root).parts[:1]]
    return [str(p.relative_to(root)) for p in found]


@pytest.mark.slow
def test_tune_workers_with_mlflow_milvus_and_optuna_on_servers(tmp_path, shared, gv3_orkg_graph, postgres_url,
                                                               milvus_standalone, monkeypatch):
    import optuna
    from mlflow.tracking import MlflowClient

    from conftest import small_gv3_project

    t0 = time.monotonic()
    root = small_gv3_project(tmp_path / "proj", shared, gv3_orkg_graph, monkeypatch, min_papers=12, n_questions=LIMIT,
                             mlflow_store=False)
    (root / "pipelines").mkdir(exist_ok=True)
    (root / "pipelines" / "vss_server.yaml").write_text(PIPELINE.replace("http://127.0.0.1:19530",
                                                                         milvus_standalone.uri))
    tag = uuid.uuid4().hex[:8]
    dbs = _create_databases(postgres_url, f"mlflow_{tag}", f"optuna_{tag}")
    values = {"MLFLOW_DB": dbs[f"mlflow_{tag}"], "OPTUNA_DB": dbs[f"optuna_{tag}"],
              "ARTIFACTS": str(tmp_path / "mlartifacts"), "MILVUS_DATA": str(milvus_standalone.data),
              "MILVUS_PORT": milvus_standalone.uri.rsplit(":", 1)[1]}
    # the Milvus server is the session's (tests/support/milvus_servers.py): the doc's command plus free etcd ports
    assert list(milvus_standalone.proc.args)[:5] == _argv(COMMANDS["milvus"], values)[:5]
    mlflow_server = start_mlflow_server(tmp_path / "mlflow", backend_store_uri=values["MLFLOW_DB"])
    procs: list[subprocess.Popen] = []
    try:
        values["MLFLOW_PORT"] = mlflow_server.url.rsplit(":", 1)[1]
        server_argv = _argv(COMMANDS["mlflow"], {**values, "ARTIFACTS": str(mlflow_server.artifacts)})
        assert mlflow_server.command() == [str(MLFLOW), *server_argv[1:]]
        print(f"servers up after {time.monotonic() - t0:.0f} s")
        path = os.pathsep.join([str(INJECT), str(REPO / "src"), os.environ.get("PYTHONPATH", "")])
        env = {**os.environ, **{k: Template(v).substitute(values) for k, v in ENV.items()}, "PYTHONPATH": path,
               "HUBLAB_ROOT": str(root), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
               "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true", "TOKENIZERS_PARALLELISM": "false",
               "HUBLAB_TEST_TRIAL_DELAY": "4"}  # trials overlap, so both workers take some
        idx = subprocess.run(_argv(COMMANDS["index"], values), cwd=root, env=env, capture_output=True, text=True,
                             timeout=300)
        assert idx.returncode == 0, idx.stdout[-2000:] + idx.stderr[-3000:]
        print(f"index built after {time.monotonic() - t0:.0f} s")
        for w in ("a", "b"):
            log = (tmp_path / f"worker-{w}.log").open("w")
            procs.append(subprocess.Popen(_argv(COMMANDS["tune"], values), cwd=root, env=env, stdout=log,
                                          stderr=subprocess.STDOUT, text=True, start_new_session=True))
        rcs = [p.wait(timeout=420) for p in procs]
        outs = [(tmp_path / f"worker-{w}.log").read_text() for w in ("a", "b")]
        assert rcs == [0, 0], "\n\n".join(o[-3000:] for o in outs)
        print(f"both workers done after {time.monotonic() - t0:.0f} s")

        study = optuna.load_study(study_name="team", storage=values["OPTUNA_DB"])
        trials = study.get_trials()
        assert [t.state for t in trials] == [optuna.trial.TrialState.COMPLETE] * len(PLANNED), \
            [(t.number, t.state.name, t.user_attrs.get("ofat_key")) for t in trials]
        assert len({t.number for t in trials}) == len(PLANNED)
        assert sorted(t.user_attrs["ofat_key"] for t in trials) == sorted(PLANNED)  # each planned trial once
        assert len({t.user_attrs["worker"] for t in trials}) == 2  # the workers shared the study

        client = MlflowClient(mlflow_server.url)
        exp = client.get_experiment_by_name("tune-team")
        assert exp is not None and exp.artifact_location.startswith("mlflow-artifacts:")
        runs = client.search_runs([exp.experiment_id])
        parents = [r for r in runs if "mlflow.parentRunId" not in r.data.tags]
        children = [r for r in runs if "mlflow.parentRunId" in r.data.tags]
        assert len(parents) == 1 and parents[0].info.status == "FINISHED"
        assert parents[0].info.run_id == study.user_attrs["mlflow_parent_run_id"]
        assert sorted(r.info.run_name for r in children) == sorted(PLANNED)
        assert {r.info.status for r in children} == {"FINISHED"}
        assert {r.data.tags["mlflow.parentRunId"] for r in children} == {parents[0].info.run_id}
        for t in trials:  # each trial's metrics are its run's
            run = next(r for r in children if r.info.run_name == t.user_attrs["ofat_key"])
            assert run.data.metrics["recall_triples"] == pytest.approx(trial_metrics(t)["recall_triples"])
            assert run.data.params["vector_store.uri"] == milvus_standalone.uri
        assert not _local_stores(root), _local_stores(root)
        print(f"total {time.monotonic() - t0:.0f} s")
    finally:
        for p in procs:
            if p.poll() is None:
                os.killpg(p.pid, 9)
                p.wait()
        stop_mlflow_server(mlflow_server)
