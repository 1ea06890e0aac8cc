"""Graphs over a real SPARQL engine (issue #41): Oxigraph servers on 127.0.0.1 holding the GV3 export and the
example graph of examples/your-graph (schema.org, not ORKG). Over the endpoint, HubLab reads the same graph as from
the file (same nodes, triples and order), so HubLink (both strategies) and every LLM-free baseline return the same
triples and metrics; and the user's commands of docs/your-graph.md score every question, over the file and over
the endpoint alike.

Slow tier: it starts Oxigraph servers and, in the last test, four ``hublab run`` processes with MiniLM (~60 s)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hublab.config import Settings
from hublab.datasets.catalog import resolve_statements
from hublab.datasets.kgqa_csv import load_kgqa_csv
from hublab.embedding.hashing import HashingEmbedder
from hublab.evaluation.retrieval import retrieval_metrics
from hublab.graph.backends import load_source, resolve_graph
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.pipeline.config import load_pipeline
from hublab.retrievers.base import Resources
from hublab.retrievers.registry import build_retriever, default_pipelines
from hublab.vectorstore.factory import build_vector_store

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"
ARTICLE = "https://schema.org/ScholarlyArticle"
pytestmark = pytest.mark.slow


def _dump(kg: RdfKnowledgeGraph) -> tuple[list, list, dict]:
    return ([repr(e) for e in kg.entities()], [t.render() for t in kg.triples()],
            {t: [e.uid for e in kg.entities_by_type(t)] for t in sorted(kg._by_type)})


@pytest.fixture(scope="module")
def gv3_file(gv3_orkg_graph, tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("gv3") / "gv3_orkg.ttl"
    gv3_orkg_graph.save(path)
    return path


def _settings(tmp: Path) -> Settings:
    return Settings(tmp, {"paths": {"graphs": "g", "snapshots": "s", "indices": "models", "cache": ".cache"}})


def test_gv3_over_the_endpoint_is_the_file_graph(oxigraph, gv3_file: Path, tmp_path: Path):
    url = oxigraph(gv3_file)
    st = _settings(tmp_path)
    src = resolve_graph(url, st)
    assert src.kind == "endpoint" and src.triples and src.name.startswith("sparql-")
    assert resolve_graph(url, st).name == src.name  # the fingerprint is stable
    over = load_source(src, st)
    assert _dump(over) == _dump(RdfKnowledgeGraph.load(gv3_file))
    _kept_on_disk_is_the_same(url, over, tmp_path)
    other = resolve_graph(oxigraph(EXAMPLE / "graph.ttl"), st)
    assert other.name != src.name and other.digest != src.digest


def _on_disk(tmp: Path) -> Settings:
    st = _settings(tmp)
    return Settings(tmp, {**st.params, "user_graphs": {"store": {"mode": "disk"}}})


def _kept_on_disk_is_the_same(url: str, in_memory, tmp: Path) -> None:
    """With ``user_graphs.store.mode: disk`` the endpoint's graph is read once into the on-disk store: the same
    entities, triples, orders and types; a second open (another process, a later run) reads no page again."""
    from hublab.graph.endpoint import SparqlEndpoint
    from hublab.graph.store import StoreKnowledgeGraph

    st = _on_disk(tmp)
    kept = load_source(resolve_graph(url, st), st)
    assert isinstance(kept, StoreKnowledgeGraph)
    assert ([repr(e) for e in kept.entities()], [t.render() for t in kept.triples()]) == _dump(in_memory)[:2]
    assert all(kept.entities_by_type(t) == in_memory.entities_by_type(t) for t in _dump(in_memory)[2])
    assert kept.sparql("SELECT (COUNT(*) AS ?n) WHERE { ?s ?p ?o }")[0]["n"] == str(len(in_memory.graph))
    real = SparqlEndpoint.read
    try:
        SparqlEndpoint.read = lambda *a, **kw: (_ for _ in ()).throw(AssertionError("read again"))  # type: ignore
        again = load_source(resolve_graph(url, st), st)
    finally:
        SparqlEndpoint.read = real  # type: ignore[method-assign]
    assert again.folder == kept.folder and len(again) == len(kept)


def test_the_same_graph_on_two_ports_reuses_one_index(oxigraph, gv3_file: Path, tmp_path: Path):
    """Issue #56: an endpoint's index is keyed by its content, not its URL: a second server (another port) holding
    the same graph finds the first one's VSS index (Milvus Lite, on disk) and builds nothing."""
    from hublab.pipeline.resources import index_path

    copy = tmp_path / "same.ttl"
    copy.write_bytes(gv3_file.read_bytes())
    first, second = oxigraph(gv3_file), oxigraph(copy)
    assert first != second
    st = _settings(tmp_path)
    a, b = resolve_graph(first, st), resolve_graph(second, st)
    assert (a.name, a.digest, a.index_name) == (b.name, b.digest, b.index_name)
    assert index_path(st, first, "vss") == index_path(st, second, "vss")

    def index(url: str) -> dict:
        path = index_path(st, url, "vss")
        vs = build_vector_store({"uri": None}, path)
        res = Resources(graph=load_source(resolve_graph(url, st), st), embedder=HashingEmbedder(), llm=None,
                        vector_store=vs, index_name=f"vss_{resolve_graph(url, st).index_name}",
                        cache_dir=str(tmp_path / ".cache"), index_dir=str(path.parent), root_entity_ids=[])
        try:
            return build_retriever("vss", res, {}, source="test").index(progress=False)
        finally:
            vs.close()

    built, again = index(first), index(second)
    assert [s["skipped"] for s in built.values()] == [False] * len(built)
    assert [s["skipped"] for s in again.values()] == [True] * len(again)


def _methods() -> list[tuple[str, str, dict]]:
    """(label, retriever type, params) of every LLM-free default pipeline, HubLink in both strategies."""
    out = []
    for path in default_pipelines(ROOT):
        cfg = load_pipeline(path)
        if cfg.retriever_uses_llm:
            continue
        if cfg.retriever_type == "hublink":
            out += [("hublink-traversal", "hublink", {**cfg.retriever_params, "use_topic_if_given": True}),
                    ("hublink-direct", "hublink", {**cfg.retriever_params, "use_topic_if_given": False})]
        else:
            out.append((cfg.retriever_type, cfg.retriever_type, dict(cfg.retriever_params)))
    return out


def _answers(kg, method: str, params: dict, pairs, tmp: Path, roots: list[str]) -> list[tuple[list[str], dict]]:
    res = Resources(graph=kg, embedder=HashingEmbedder(), llm=None,
                    vector_store=build_vector_store({"uri": None}, tmp / "index.db"), index_name=f"eq_{method}",
                    cache_dir=str(tmp), index_dir=str(tmp), root_entity_ids=roots)
    r = build_retriever(method, res, params, source="test")
    r.index(progress=False)
    out = []
    for p in pairs:
        got = r.retrieve(p.question, topic_entity_id=p.topic_entity_id, topic_entity_value=p.topic_entity_value)
        ranked = got.context_strings
        m = retrieval_metrics(ranked, p.golden_triples, k=10)
        out.append((ranked, {"hits@10": m["hit_at_10_triples"], "map@10": m["map_at_10_triples"]}))
    return out


@pytest.mark.parametrize("graph", ["example", "gv3"])
def test_every_llm_free_method_answers_the_same_over_the_endpoint(oxigraph, gv3_file: Path, shared: Path,
                                                                  tmp_path: Path, graph: str):
    """Every LLM-free method (HubLink in both strategies) over the endpoint returns the file's triples, in the same
    order, for every question (hashing embedder: the graph is what is compared, not the model); on the example
    graph, also with the endpoint's graph kept in the on-disk store."""
    st = _settings(tmp_path)
    if graph == "example":
        file, pairs, roots = EXAMPLE / "graph.ttl", load_kgqa_csv(EXAMPLE / "questions.csv"), []
        hub = {"hub_types": [ARTICLE]}
    else:
        file, roots, hub = gv3_file, ["R659055"], {}
        pairs = [p for p in load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")][:12]
    on_file = RdfKnowledgeGraph.load(file)
    url = oxigraph(file)
    over = load_source(resolve_graph(url, st), st)
    kept = load_source(resolve_graph(url, _on_disk(tmp_path)), _on_disk(tmp_path)) if graph == "example" else None
    pairs, missing = resolve_statements(pairs, on_file)
    assert not missing
    for label, method, params in _methods():
        params = {**params, **(hub if method == "hublink" else {})}
        a = _answers(on_file, method, params, pairs, tmp_path / label / "file", roots)
        b = _answers(over, method, params, pairs, tmp_path / label / "endpoint", roots)
        assert a == b, label
        if kept is not None:  # the endpoint's graph kept in the on-disk store answers the same
            assert _answers(kept, method, params, pairs, tmp_path / label / "store", roots) == a, label
        if graph == "example" and method in ("bm25", "hublink"):
            assert any(m["hits@10"] > 0 for _, m in a), label  # the comparison is not between empty lists


def _project(tmp: Path) -> Path:
    """A HubLab project of its own (params.yaml, the two pipelines, the run's shared embedding cache)."""
    from conftest import share_embedding_cache

    root = tmp / "project"
    (root / "pipelines").mkdir(parents=True)
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    for name in ("hublink_local", "bm25"):
        (root / "pipelines" / f"{name}.yaml").write_text((ROOT / "pipelines" / f"{name}.yaml").read_text())
    share_embedding_cache(root)
    return root


def test_a_users_graph_and_questions_from_their_own_folder(oxigraph, tmp_path: Path):
    """docs/your-graph.md's commands as a user types them, in a folder holding only their Turtle file and CSV
    (golden triples as N-Triples statements): every question scored, and the same Hits@10 and MAP@10 over the
    Oxigraph endpoint loaded with that file."""
    root = _project(tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    for f in ("graph.ttl", "questions.csv"):
        (mine / f).write_bytes((EXAMPLE / f).read_bytes())
    url = oxigraph(mine / "graph.ttl")
    env = {**{k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}, "HUBLAB_ROOT": str(root),
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "MLFLOW_DISABLE_TELEMETRY": "true",
           "PYTHONPATH": str(ROOT / "src")}
    got = {}
    for where in ("graph.ttl", url):
        for method, extra in (("hublink_local", ["--hub-type", ARTICLE]), ("bm25", [])):
            p = subprocess.run([sys.executable, "-m", "hublab.cli", "run", method, "--graph", where, "--dataset",
                                "questions.csv", "--no-carbon", "--json", *extra], cwd=mine, env=env,
                               capture_output=True, text=True, timeout=300)
            assert p.returncode == 0, p.stderr[-3000:]
            out = json.loads(p.stdout[p.stdout.index("{"):])
            assert out["n_questions"] == 5 and out["metrics"]["n_errors"] == 0, out
            got[(where, method)] = {k: out["metrics"][k] for k in ("hit_at_10_triples", "map_at_10_triples")}
    for method in ("hublink_local", "bm25"):
        assert got[("graph.ttl", method)] == got[(url, method)], method
    assert got[("graph.ttl", "bm25")]["hit_at_10_triples"] == 1.0
    assert got[("graph.ttl", "hublink_local")]["hit_at_10_triples"] > 0
    # the project's indices are keyed by the graph's content: the file's and the endpoint's are two indices
    hub = sorted(p.name for p in (root / "models").iterdir() if p.name.endswith("__hublink"))
    assert len(hub) == 2 and hub[0].startswith("graph_") and hub[1].startswith("sparql_"), hub
