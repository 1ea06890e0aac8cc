"""Helpers for the kill -9 reliability suite: a small real project, the ``hublab`` CLI in a subprocess, and
SIGKILL at a point chosen by polling on-disk progress (index manifest, checkpoint lines) rather than sleeps."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from conftest import share_embedding_cache

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src"
INJECT = Path(__file__).resolve().parent / "inject"
GRAPH = "gv3_orkg"
N_PAPERS = 10
N_QUESTIONS = 8
INDEX_ARGS = ("index", "--pipeline", "pipelines/hublink_local.yaml", "--graph", GRAPH)
RUN_ARGS = ("run", "pipelines/hublink_local.yaml", "--graph", GRAPH, "--dataset", GRAPH, "--limit", str(N_QUESTIONS),
            "--no-carbon", "--json")


def build_project(root: Path, shared: Path, full_graph) -> Path:
    """params.yaml (paths inside ``root``), a 10-paper GV3 subgraph as the gv3_orkg snapshot, KGQA rows about
    those papers first (so metrics are not all zero), and copies of the two LLM-free pipelines."""
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.datasets.model import write_jsonl
    from hublab.graph.rdf import RdfKnowledgeGraph

    triples = paper_triples(full_graph, N_PAPERS)
    graph = RdfKnowledgeGraph.from_triples(list(triples.values()), name=GRAPH)
    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")
    about = [p for p in pairs if any(g in triples for g in p.golden_triples)]
    rest = [p for p in pairs if p not in about]
    chosen = (about + rest)[: N_QUESTIONS + 2]

    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["paths"].update({"shared": str(shared), "thesis_results": str(shared / "reference/thesis_results")})
    root.mkdir(parents=True, exist_ok=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    share_embedding_cache(root)
    graph.save(root / "data/snapshots/gv3_orkg.ttl")
    write_jsonl(chosen, root / "data/kgqa/gv3_orkg.jsonl")
    (root / "pipelines").mkdir(exist_ok=True)
    for name in ("hublink_local", "difar_local"):
        (root / "pipelines" / f"{name}.yaml").write_text((REPO / "pipelines" / f"{name}.yaml").read_text())
    return root


def paper_triples(full_graph, n: int) -> dict[str, Any]:
    """rendered triple → triple for every triple on the hub paths of the first ``n`` papers under R659055."""
    from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths

    det = HubDetector(full_graph, ["Paper"])
    papers = all_hub_roots(full_graph, det, ["R659055"])[:n]
    return {t.render(): t for p in papers for hp in hub_paths(full_graph, det, p) for t in hp.triples}


def env(root: Path) -> dict[str, str]:
    inherited = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}  # the project's own store
    return {**inherited, "PYTHONPATH": str(SRC), "HUBLAB_ROOT": str(root), "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true", "DO_NOT_TRACK": "true",
            "PYTHONUNBUFFERED": "1", "TOKENIZERS_PARALLELISM": "false",
            "HUBLAB_INDEX_BATCH_HUBS": "1"}  # one commit per hub: ten kill points on ten hubs


def cli_args(*args: str) -> list[str]:
    return [sys.executable, "-m", "hublab.cli", *args]


def hublab(root: Path, *args: str, timeout: float = 240, **extra_env: str) -> subprocess.CompletedProcess:
    """Run ``hublab ARGS`` to completion; fails the test with its output on a non-zero exit."""
    full_env = {**env(root), **extra_env}
    if "HUBLAB_KILL_AT" in extra_env:
        full_env["PYTHONPATH"] = f"{INJECT}{os.pathsep}{SRC}"
        p = subprocess.run(cli_args(*args), cwd=root, env=full_env, capture_output=True, text=True, timeout=timeout)
        assert p.returncode == -9, f"expected a SIGKILL at {extra_env['HUBLAB_KILL_AT']}: {p.returncode}\n{p.stderr}"
        return p
    p = subprocess.run(cli_args(*args), cwd=root, env=full_env, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"hublab {' '.join(args)} exited {p.returncode}\n{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def spawn(root: Path, *args: str, log: Path | None = None) -> subprocess.Popen:
    out = open(log or os.devnull, "w")  # noqa: SIM115 - handed to the child
    return subprocess.Popen(cli_args(*args), cwd=root, env=env(root), stdout=out, stderr=subprocess.STDOUT)


def kill_when(proc: subprocess.Popen, ready: Callable[[], bool], *, timeout: float = 180,
              poll: float = 0.005) -> bool:
    """SIGKILL ``proc`` as soon as ``ready()`` holds. False when the process ended first (nothing killed)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        if ready():
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            return True
        time.sleep(poll)
    proc.kill()
    proc.wait()
    raise AssertionError(f"kill point not reached within {timeout}s")


def kill_after(proc: subprocess.Popen, seconds: float) -> bool:
    try:
        proc.wait(timeout=seconds)
        return False
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        return True


# ------------------------------------------------------------------ index state
def index_dir(root: Path, retriever: str) -> Path:
    return root / "models" / f"{GRAPH}__{retriever}"


def manifest_file(root: Path) -> Path | None:
    found = sorted(index_dir(root, "hublink").glob("*.manifest.json"))
    return found[0] if found else None


def manifest(root: Path) -> dict[str, list[str]]:
    f = manifest_file(root)
    if f is None:
        return {}
    try:
        return json.loads(f.read_text())["hubs"]
    except (OSError, ValueError, KeyError):
        return {}


def committed_hubs(root: Path) -> int:
    return len(manifest(root))


def collection_rows(root: Path, retriever: str, fields: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Every row of every collection in the index's Milvus Lite file (opened in this process; the file must not
    be held by a running hublab process)."""
    from pymilvus import MilvusClient

    db = index_dir(root, retriever) / "index.db"
    client = MilvusClient(uri=str(db))
    try:
        out: dict[str, list[dict[str, Any]]] = {}
        for name in client.list_collections():
            client.load_collection(name)
            it = client.query_iterator(name, batch_size=4000, filter="", output_fields=fields)
            rows: list[dict[str, Any]] = []
            while True:
                batch = it.next()
                if not batch:
                    it.close()
                    break
                rows.extend({f: r.get(f) for f in fields} for r in batch)
            out[name] = rows
        return out
    finally:
        client.close()


# ------------------------------------------------------------------ run state
def checkpoint_file(root: Path) -> Path | None:
    found = sorted((root / "outputs" / "runs").glob("*/predictions.jsonl"))
    return found[0] if found else None


def checkpoint_lines(root: Path) -> int:
    f = checkpoint_file(root)
    if f is None:
        return 0
    try:
        return f.read_bytes().count(b"\n")
    except OSError:
        return 0


def checkpoint_records(root: Path) -> list[dict[str, Any]]:
    f = checkpoint_file(root)
    assert f is not None, "no checkpoint written"
    return [json.loads(line) for line in f.read_text().splitlines() if line.strip()]


def mlflow_runs(root: Path) -> list[tuple[str, str, str]]:
    """(run_id, status, config_hash tag) of every run in the project's sqlite store, read with plain sqlite so
    the check does not depend on the MLflow client's caching."""
    db = root / "mlruns" / "mlflow.db"
    if not db.exists():
        return []
    con = sqlite3.connect(db)
    try:
        rows = con.execute("select run_uuid, status from runs where lifecycle_stage = 'active'").fetchall()
        tags = dict(con.execute("select run_uuid, value from tags where key = 'hublab.config_hash'").fetchall())
    finally:
        con.close()
    return [(r, s, tags.get(r, "")) for r, s in rows]


# ------------------------------------------------------------------ what an index answers
ROW_FIELDS = ["hub_root", "path_hash", "level", "text", "subject", "path_text", "triples"]


def index_snapshot(root: Path, n_questions: int = 4) -> dict[str, Any]:
    """Open the project's HubLink index in this (test) process — not the process that built it — and return its
    manifest, every row (all fields but the generation tag, the auto id and the vector) and the retrieval results
    of a few dataset questions, half with their topic entity (graph traversal), half without (direct search)."""
    from hublab.config import settings
    from hublab.datasets.model import read_jsonl
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.pipeline import build_pipeline

    st = settings(root)
    pipe = build_pipeline(load_pipeline(root / "pipelines/hublink_local.yaml"), GRAPH, st)
    hub_index = pipe.retriever.hub_index
    assert hub_index.is_built(), "index not built"
    client = hub_index.store.client
    client.load_collection(hub_index.collection)
    it = client.query_iterator(hub_index.collection, batch_size=4000, filter="", output_fields=ROW_FIELDS)
    rows: list[tuple] = []
    while batch := it.next():
        rows.extend(tuple(r.get(f) for f in ROW_FIELDS) for r in batch)
    it.close()
    results = []
    for i, q in enumerate(read_jsonl(st.dataset_file(GRAPH))[:n_questions]):
        topic = q.topic_entity_id if i % 2 else None
        out = pipe.run(q.question, topic, q.topic_entity_value if topic else None)
        results.append({"question": q.question, "topic": topic, "contexts": out.context_strings,
                        "answer": out.answer, "sources": out.sources, "reason": out.reason})
    return {"collection": hub_index.collection, "manifest": hub_index.manifest(),
            "collections": sorted(client.list_collections()), "rows": rows, "results": results}


# ------------------------------------------------------------------ what a run leaves
# wall-clock measurements: differ between any two runs
VOLATILE = ("runtime", "index_build_s", "tracking_open_s", "emission", "energy", "session_")


def stable(metrics: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in metrics.items() if not any(w in k for w in VOLATILE)}


def run_outcome(root: Path, stdout: str) -> dict[str, Any]:
    """Per-question records (checkpoint and the MLflow predictions.csv), aggregate metrics (CLI JSON and the
    MLflow run) and the MLflow runs of the project, for comparison with an uninterrupted run."""
    import csv

    from mlflow.tracking import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    out = json.loads(stdout[stdout.index("{"):])
    records = checkpoint_records(root)
    keys = [r["key"] for r in records]
    assert len(keys) == len(set(keys)), f"duplicate checkpoint rows: {keys}"
    run = MlflowClient(tracking_uri(root)).get_run(out["run_id"])
    csv_path = root / "mlruns/artifacts/hublab" / out["run_id"] / "artifacts/predictions.csv"
    with csv_path.open(encoding="utf-8") as fh:
        csv_rows = list(csv.DictReader(fh))
    return {
        "run_id": out["run_id"],
        "records": {r["key"]: {"question": r["question"], "retrieved_context": r["retrieved_context"],
                               "generated_answer": r["generated_answer"], "metrics": r["metrics"],
                               "error": r["error"]} for r in records},
        "n_records": len(records),
        "csv_questions": sorted(r.get("question", "") for r in csv_rows),
        "metrics": stable(out["metrics"]),
        "mlflow_metrics": stable(dict(run.data.metrics)),
        "mlflow_status": run.info.status,
        "runs": mlflow_runs(root),
        "traced": traced_questions(root, out["run_id"], run.info.experiment_id),
    }


def traced_questions(root: Path, run_id: str, experiment_id: str) -> list[str]:
    """The questions (root span names) that have a trace in the run: every answered question must have one."""
    from mlflow import MlflowClient

    from hublab.tracking.mlflow_log import tracking_uri

    found = MlflowClient(tracking_uri(root)).search_traces(locations=[experiment_id], run_id=run_id, max_results=500)
    return sorted({s.name for tr in found for s in tr.data.spans if s.parent_id is None})
