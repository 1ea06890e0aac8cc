"""The Python API (issue #43): ``import hublab`` exposes a small documented surface; a pipeline loads by its CLI
name on any graph and returns ranked triples with float scores; ``hublab.run`` reports what ``hublab run`` does."""

from __future__ import annotations

import inspect
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import hublab
from hublab.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(yaml.safe_load((ROOT / "params.yaml").read_text())))
    (root / "pipelines" / "bm25.yaml").write_text((ROOT / "pipelines" / "bm25.yaml").read_text())
    return root


def test_the_public_names_are_exported_typed_and_documented():
    public = [n for n in hublab.__all__ if n != "__version__"]
    assert set(public) == {"load_pipeline", "run", "evaluate", "compare", "LoadedPipeline", "RankedTriple",
                           "RunResult"}
    for name in public:
        obj = getattr(hublab, name)
        assert (obj.__doc__ or "").strip(), name
        if inspect.isfunction(obj):
            sig = inspect.signature(obj)
            assert sig.return_annotation is not inspect.Signature.empty, name
            assert all(p.annotation is not inspect.Parameter.empty for p in sig.parameters.values()), name
    with pytest.raises(AttributeError):
        hublab.nothing_here  # noqa: B018


def test_import_hublab_loads_no_heavy_library():
    code = "import sys, hublab; print(sorted(m for m in ('torch', 'mlflow', 'rdflib', 'optuna') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_a_pipeline_by_name_on_a_graph_file_returns_ranked_scored_triples(project: Path, tmp_path: Path):
    p = hublab.load_pipeline("bm25", graph=str(EXAMPLE / "graph.ttl"), root=project)
    got = p.retrieve("Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?")
    assert [t.rank for t in got] == list(range(1, len(got) + 1)) and len(got) >= 3
    assert all(isinstance(t.score, float) for t in got)
    assert [t.score for t in got] == sorted((t.score for t in got), reverse=True)
    assert got[0].triple.startswith("(R") and got[0].subject and got[0].predicate
    assert any(t.object == "Grace Hopper" for t in got[:5])


def test_a_folder_without_params_is_a_project_with_the_shipped_defaults(tmp_path: Path):
    """An empty folder: the shipped pipelines and parameters are read, everything is written under the folder."""
    p = hublab.load_pipeline("bm25", graph=str(EXAMPLE / "graph.ttl"), root=tmp_path)
    assert any(t.object == "Grace Hopper" for t in p.retrieve("Who wrote 'Reproducible Pipelines for Knowledge "
                                                              "Graph Experiments'?")[:5])
    assert not (tmp_path / "params.yaml").exists() and not (tmp_path / "pipelines").exists()
    with pytest.raises(InputError, match="not built yet"):  # the thesis's graphs are the repository's DVC outputs
        hublab.load_pipeline("bm25", graph="gv3_orkg", root=tmp_path)


@pytest.mark.slow  # an MLflow store and a whole run
def test_run_reports_what_the_cli_reports(project: Path):
    res = hublab.run("bm25", str(EXAMPLE / "graph.ttl"), str(EXAMPLE / "questions.csv"), root=project)
    assert res.n_questions == 5 and not res.failed and res.mlflow_run_id
    assert res.metrics["hit_at_10_triples"] == 1.0 and len(res.per_question) == 5
    m = hublab.evaluate([r for r in res.per_question[0]["retrieved_context"]], res.per_question[0]["golden_triples"])
    assert m["hit_at_10_triples"] == 1.0


def test_retrieve_top_k_many_iris_and_statements(project: Path):
    p = hublab.load_pipeline("bm25", graph=str(EXAMPLE / "graph.ttl"), root=project)
    question = "Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?"
    top = p.retrieve(question, top_k=2)
    assert len(top) == 2 and [t.rank for t in top] == [1, 2]
    hit = next(t for t in p.retrieve(question) if t.object == "Grace Hopper")
    assert (hit.subject_iri, hit.predicate_iri, hit.object_iri) == (
        "https://example.org/kg/article2", "https://schema.org/author", "https://example.org/kg/grace")
    assert hit.statement == ("<https://example.org/kg/article2> <https://schema.org/author> "
                             "<https://example.org/kg/grace> .")
    many = p.retrieve_many([question, "Which tool does the reproducible pipelines article use?"], top_k=3)
    assert len(many) == 2 and all(len(r) <= 3 for r in many) and many[0] == p.retrieve(question, top_k=3)
    with pytest.raises(InputError, match="retrieve_many"):
        p.retrieve([question])  # type: ignore[arg-type]
    with pytest.raises(InputError, match="list of questions"):
        p.retrieve_many(question)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="positive"):
        p.retrieve(question, top_k=0)


def test_evaluate_scores_n_triples_golden_triples_through_the_ranked_results(project: Path):
    p = hublab.load_pipeline("bm25", graph=str(EXAMPLE / "graph.ttl"), root=project)
    got = p.retrieve("Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?")
    golden = ["<https://example.org/kg/article2>  <https://schema.org/author> <https://example.org/kg/grace>."]
    scored = hublab.evaluate(got, golden)
    hit = next(t for t in got if t.object == "Grace Hopper")
    assert scored == hublab.evaluate([t.triple for t in got], [hit.triple]) and scored["hit_at_10_triples"] == 1.0
    with pytest.raises(InputError, match="N-Triples statements"):
        hublab.evaluate([t.triple for t in got], golden)
    with pytest.raises(InputError, match="both forms"):
        hublab.evaluate(got, [*golden, hit.triple])


def test_an_rdflib_graph_is_a_graph(project: Path):
    import rdflib

    g = rdflib.Graph().parse(EXAMPLE / "graph.ttl")
    question = "Who wrote 'Reproducible Pipelines for Knowledge Graph Experiments'?"
    from_graph = hublab.load_pipeline("bm25", graph=g, root=project).retrieve(question)
    from_file = hublab.load_pipeline("bm25", graph=str(EXAMPLE / "graph.ttl"), root=project).retrieve(question)
    assert [t.statement for t in from_graph] == [t.statement for t in from_file]
    again = rdflib.Graph().parse(EXAMPLE / "graph.ttl")  # other blank-node labels: the same content, the same file
    hublab.load_pipeline("bm25", graph=again, root=project)
    assert len(list((project / ".cache" / "graphs").glob("rdflib-*.nt"))) == 1
    with pytest.raises(InputError, match="rdflib.Graph"):
        hublab.load_pipeline("bm25", graph=42, root=project)
