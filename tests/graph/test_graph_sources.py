"""The graph door (``hublab.graph.backends``): each backend claims exactly the arguments given its way, the door
opens a Turtle file, an N-Triples file, a built-in name and an ``rdflib.Graph`` alike, and a file keeps the
content-keyed name indices and runs were built under."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
from rdflib import Graph

from hublab.config import Settings
from hublab.errors import InputError
from hublab.graph.backends import (
    BuiltinGraph,
    DeclaredGraph,
    InMemoryGraph,
    RdfFileGraph,
    SparqlEndpointGraph,
    backend_for,
    backends,
    guess_backend,
    is_url,
    load_source,
    open_file,
    open_graph,
    resolve_graph,
)
from hublab.graph.rdf import RdfKnowledgeGraph

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph" / "graph.ttl"
TURTLE = """@prefix ex: <https://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:a a ex:Paper ; rdfs:label "Graph doors" ; ex:cites ex:b .
ex:b a ex:Paper ; rdfs:label "Backends" .
"""
#: sha256 of TURTLE's bytes: a file's digest and name are its content's, as they always were (indices key on them)
TURTLE_SHA = "711761e257ab7f8c265514e37984260036c29d3ffc9bbe9c78e79eba49737ae5"


@pytest.fixture()
def st(tmp_path: Path, monkeypatch) -> Settings:
    """A project whose built-in ``gv1`` is the example graph and which declares ``mine`` (an N-Triples file)."""
    (tmp_path / "g").mkdir()
    shutil.copy(EXAMPLE, tmp_path / "g" / "gv1.ttl")
    Graph().parse(EXAMPLE).serialize(tmp_path / "mine.nt", format="nt", encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return Settings(tmp_path, {"paths": {"graphs": "g", "snapshots": "s", "indices": "models", "cache": ".cache"},
                               "user_graphs": {"graphs": {"mine": {"source": "mine.nt", "hub_types": []}}}})


def _claims(arg: object, st: Settings) -> list[type]:
    return [type(b) for b in backends() if b.guess_can_open(arg, st)]


def _dump(kg: RdfKnowledgeGraph) -> list[str]:
    return sorted(t.render() for t in kg.triples())


@pytest.mark.parametrize(("arg", "backend"), [
    ("gv1", BuiltinGraph),
    ("mine", DeclaredGraph),
    ("http://127.0.0.1:7878/query", SparqlEndpointGraph),
    ("HTTPS://example.org/sparql", SparqlEndpointGraph),
    ("graph.ttl", RdfFileGraph),
    ("graph.nt.gz", RdfFileGraph),
    ("export.json", RdfFileGraph),
    ("some/folder/graph", RdfFileGraph),
])
def test_each_backend_claims_exactly_what_is_given_its_way(st, arg, backend):
    assert _claims(arg, st) == [backend]
    assert type(guess_backend(arg, st)) is backend


def test_an_rdflib_graph_is_claimed_by_the_in_memory_backend_only(st):
    assert _claims(Graph(), st) == [InMemoryGraph]
    assert _claims(str(Graph()), st) == []  # its text is no graph


def test_an_argument_nobody_claims_is_the_unknown_graph_error(st):
    assert _claims("gv11", st) == []
    with pytest.raises(InputError, match=r"unknown graph 'gv11'; did you mean 'gv1'\?.*SPARQL endpoint URL"):
        resolve_graph("gv11", st)


def test_is_url_is_http_or_https_in_any_case():
    assert is_url("http://h/q") and is_url("HTTPS://h/q")
    assert not any(is_url(x) for x in ("graph.ttl", "ftp://h/g.ttl", "/data/http://x", None, Path("http:/x")))


def test_the_door_opens_turtle_and_n_triples_files_alike(st, tmp_path):
    turtle = open_graph(str(EXAMPLE), st)
    assert _dump(turtle) == _dump(RdfKnowledgeGraph.load(EXAMPLE))
    nt = open_graph("mine.nt", st)
    assert _dump(nt) == _dump(turtle)
    assert nt.name == resolve_graph("mine.nt", st).name and nt.name.startswith("mine-")


def test_the_door_opens_a_built_in_name(st):
    src = resolve_graph("gv1", st)
    assert (src.kind, src.name, src.index_name) == ("builtin", "gv1", "gv1")
    kg = load_source(src, st)
    assert kg.name == "gv1" and _dump(kg) == _dump(RdfKnowledgeGraph.load(EXAMPLE))


def test_a_built_in_graph_not_built_yet_says_so(st):
    (st.root / "g" / "gv1.ttl").unlink()
    with pytest.raises(InputError, match="not built yet"):
        open_graph("gv1", st)


def test_the_door_opens_an_rdflib_graph_as_its_cached_file(st):
    graph = Graph().parse(EXAMPLE)
    src = resolve_graph(graph, st)
    location = InMemoryGraph().location(graph, st)
    assert src == resolve_graph(location, st) and src.kind == "file"
    assert Path(location).parent == st.cache_dir() / "graphs"
    assert _dump(open_graph(graph, st)) == _dump(RdfKnowledgeGraph.load(EXAMPLE))


def test_a_file_keeps_its_content_keyed_name(st, tmp_path):
    path = tmp_path / "papers.ttl"
    path.write_text(TURTLE)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == TURTLE_SHA
    src = resolve_graph(str(path), st)
    assert (src.kind, src.digest, src.name, src.index_name, src.model) == (
        "file", TURTLE_SHA, "papers-711761e257ab", "papers-711761e257ab", "")
    relative = resolve_graph("papers.ttl", st)  # relative to the working folder
    assert (relative.location, relative.name, relative.digest) == (src.location, src.name, src.digest)


def test_a_declared_name_resolves_relative_to_the_project_and_reads_as_its_file(st):
    src = resolve_graph("mine", st)
    assert (src.kind, src.name, src.location) == ("declared", "mine", str((st.root / "mine.nt").resolve()))
    assert type(backend_for(src)) is RdfFileGraph
    assert src.digest == resolve_graph("mine.nt", st).digest


def test_each_resolved_kind_is_read_by_its_backend():
    kinds = {kind: type(b) for b in backends() for kind in b.kinds}
    assert kinds == {"builtin": BuiltinGraph, "file": RdfFileGraph, "declared": RdfFileGraph,
                     "endpoint": SparqlEndpointGraph}


def test_a_file_outside_any_project_is_read_with_the_defaults():
    assert _dump(open_file(EXAMPLE)) == _dump(RdfKnowledgeGraph.load(EXAMPLE))


def test_a_live_endpoint_is_a_store_without_an_index():
    kg = RdfKnowledgeGraph.from_sparql_endpoint("http://127.0.0.1:9/sparql", name="far")
    assert kg.name == "far" and not kg._use_index
