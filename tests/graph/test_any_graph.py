"""Any RDF graph as HubLab's model (issue #41): the example graph of examples/your-graph (schema.org, Dublin Core,
FOAF, SKOS: not ORKG) read in every supported format, its labels, types and ids; golden triples written as N-Triples
statements; what --graph accepts; a hub type without instances; an endpoint that is down or failing."""

from __future__ import annotations

import gzip
import threading
import time
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
from rdflib import Dataset, Graph, Literal, URIRef

from hublab.config import Settings
from hublab.datasets.catalog import resolve_statements
from hublab.datasets.kgqa_csv import load_kgqa_csv
from hublab.errors import InputError
from hublab.graph.backends import resolve_graph
from hublab.graph.endpoint import EndpointError, EndpointSettings, SparqlEndpoint
from hublab.graph.model import Knowledge
from hublab.graph.profile import hub_type_problem, profile
from hublab.graph.rdf import RdfKnowledgeGraph, node_iri, predicate_iri
from hublab.graph.vocabulary import Vocabulary, node_uid

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "your-graph"
EX = "https://example.org/kg/"
ARTICLE = "https://schema.org/ScholarlyArticle"


@pytest.fixture(scope="module")
def example() -> RdfKnowledgeGraph:
    return RdfKnowledgeGraph.load(EXAMPLE / "graph.ttl")


def _dump(kg: RdfKnowledgeGraph) -> tuple[list, list]:
    return [repr(e) for e in kg.entities()], [t.render() for t in kg.triples()]


def test_labels_types_and_ids_in_any_vocabulary(example):
    ent = example.entity(node_uid(URIRef(EX + "article2")))
    assert ent.text == "Reproducible Pipelines for Knowledge Graph Experiments"  # dcterms:title
    assert ent.types == (ARTICLE,)
    assert example.label(node_uid(URIRef(EX + "grace"))) == "Grace Hopper"  # foaf:name
    assert example.label(node_uid(URIRef(EX + "dvc"))) == "Data Version Control"  # skos:prefLabel
    assert example.label(node_uid(URIRef(EX + "icsa"))).startswith("International Conference")  # rdfs:label
    assert example.label(node_uid(URIRef("https://dvc.org"))) == "dvc.org"  # no label: the IRI's local name
    # a literal is one node per value (datatype and language included), with an id from its content
    year = Literal("2023", datatype=URIRef("http://www.w3.org/2001/XMLSchema#gYear"))
    assert example.entity(node_uid(year)).text == "2023" and node_uid(year).startswith("L")
    keywords = {t.object.text: t.object.uid for t in example.outgoing(node_uid(URIRef(EX + "article2")))
                if t.predicate == "keywords"}
    assert set(keywords) == {"reproducibility", "Reproduzierbarkeit"} and len(set(keywords.values())) == 2
    # blank nodes: labelled by their type, ids from their content (the same in every parse)
    results = example.entities_by_type(EX + "Result")
    assert [r.text for r in results] == ["Result", "Result"] and len({r.uid for r in results}) == 2
    assert {r.uid for r in results} == {r.uid for r in RdfKnowledgeGraph.load(EXAMPLE / "graph.ttl")
                                        .entities_by_type(EX + "Result")}
    # label and type statements describe nodes; they are not triples
    assert {t.predicate for t in example.triples()}.isdisjoint({"title", "name", "prefLabel", "label", "type"})


def test_label_predicates_are_configurable(example):
    foaf_only = RdfKnowledgeGraph.load(EXAMPLE / "graph.ttl",
                                       vocabulary=Vocabulary.from_iris(["http://xmlns.com/foaf/0.1/name"]))
    assert foaf_only.label(node_uid(URIRef(EX + "article2"))) == "article2"
    assert foaf_only.label(node_uid(URIRef(EX + "grace"))) == "Grace Hopper"


@pytest.mark.parametrize("suffix,fmt", [(".nt", "nt"), (".nt.gz", "nt"), (".nq", "nquads"), (".rdf", "xml"),
                                        (".jsonld", "json-ld"), (".ttl.gz", "turtle")])
def test_every_format_reads_as_the_same_graph(example, tmp_path: Path, suffix: str, fmt: str):
    g = Dataset() if fmt == "nquads" else Graph()
    (g.graph(URIRef("https://example.org/named")) if fmt == "nquads" else g).parse(EXAMPLE / "graph.ttl")
    data = g.serialize(format=fmt, encoding="utf-8")
    path = tmp_path / f"graph{suffix}"
    path.write_bytes(gzip.compress(data) if suffix.endswith(".gz") else data)
    assert _dump(RdfKnowledgeGraph.load(path)) == _dump(example)


def test_the_orkg_mapping_reads_as_before(gv3_orkg_graph, tmp_path: Path):
    """GV3 in HubLab's own mapping: the entities and triples of the graph built from the export, ordered by their
    IRIs as the loader always ordered them (the order of node units and of their ties)."""
    path = tmp_path / "gv3.ttl"
    gv3_orkg_graph.save(path)
    back = RdfKnowledgeGraph.load(path)
    ents = [Knowledge(e.uid, e.text, tuple(sorted(e.types)))  # a loaded node's types are sorted too
            for e in sorted(gv3_orkg_graph.entities(), key=lambda e: str(node_iri(e.uid)))]
    triples = sorted(gv3_orkg_graph.triples(), key=lambda t: (str(node_iri(t.subject.uid)), str(
        predicate_iri(t.predicate, t.predicate_id)), str(node_iri(t.object.uid))))
    assert _dump(back) == ([repr(e) for e in ents], [t.render() for t in triples])
    assert back.entity("R872741") == gv3_orkg_graph.entity("R872741")
    t = back.outgoing("R872741")[0]
    assert back.statement(t).startswith("<http://orkg.org/orkg/resource/R872741> <https://hublab.dev/predicate/")


def test_a_file_that_does_not_parse_is_one_located_error(tmp_path: Path):
    bad = tmp_path / "bad.ttl"
    bad.write_text("@prefix ex: <https://example.org/> .\nex:a ex:b .\n")
    with pytest.raises(InputError, match=r"file .*bad.ttl.*not valid turtle"):
        RdfKnowledgeGraph.load(bad)
    with pytest.raises(InputError, match="unknown RDF file type"):
        RdfKnowledgeGraph.load(tmp_path / "graph.xyz")


def test_golden_statements_become_the_graphs_triple_strings(example):
    pairs = load_kgqa_csv(EXAMPLE / "questions.csv")
    resolved, missing = resolve_statements(pairs, example)
    assert missing == {}
    rendered = {t.render() for t in example.triples()}
    assert all(g in rendered for p in resolved for g in p.golden_triples)
    assert resolved[2].golden_triples[0].endswith(", datePublished, " + node_uid(
        Literal("2025", datatype=URIRef("http://www.w3.org/2001/XMLSchema#gYear"))) + ":2025)")
    # a statement the graph lacks stays in its row and is reported with it
    lacking = pairs[0].__class__(**{**pairs[0].to_dict(), "golden_triples": [
        f"<{EX}article2> <https://schema.org/author> <{EX}alan> ."]})
    _, missing = resolve_statements([pairs[1], lacking], example)
    assert list(missing) == [lacking.row] and "alan" in missing[lacking.row][0]


def test_a_statement_that_is_not_n_triples_is_a_located_error(tmp_path: Path):
    f = tmp_path / "q.csv"
    f.write_text('uid,question,golden_triples\nq1,Who?,"[\'<https://example.org/a> <https://example.org/b> .\']"\n')
    with pytest.raises(InputError, match=r"row 1.*golden_triples.*N-Triples"):
        load_kgqa_csv(f)


def test_what_graph_accepts(tmp_path: Path):
    st = Settings(tmp_path, {"graphs": {"variants": ["gv1"]}, "user_graphs": {"graphs": {
        "mine": {"source": str(EXAMPLE / "graph.ttl"), "hub_types": [ARTICLE]}}}, "snapshot": {"name": "gv3_orkg"},
        "paths": {"graphs": "data/graphs", "snapshots": "data/snapshots"}})
    with pytest.raises(InputError, match=r"unknown graph 'gv11'; did you mean 'gv1'\?.*SPARQL endpoint URL"):
        resolve_graph("gv11", st)
    src = resolve_graph(str(EXAMPLE / "graph.ttl"), st)
    assert src.kind == "file" and src.name.startswith("graph-") and len(src.name) == len("graph-") + 12
    copy = tmp_path / "graph.ttl"
    copy.write_bytes((EXAMPLE / "graph.ttl").read_bytes())
    assert resolve_graph(str(copy), st).name == src.name  # keyed by content, not by path
    copy.write_text(copy.read_text() + "\n<https://example.org/kg/x> <https://example.org/kg/y> \"z\" .\n")
    assert resolve_graph(str(copy), st).name != src.name
    declared = resolve_graph("mine", st)
    assert (declared.name, declared.hub_types, declared.digest) == ("mine", (ARTICLE,), src.digest)
    with pytest.raises(InputError, match="graph file not found"):
        resolve_graph(str(tmp_path / "nope.ttl"), st)


def test_a_hub_type_without_instances_names_the_graphs_types(example):
    why = hub_type_problem(example, ["Paper"], "graph.ttl")
    assert why and "'Paper' has no instances" in why and f"{ARTICLE} (3)" in why and "--hub-type" in why
    assert hub_type_problem(example, [ARTICLE], "graph.ttl") is None
    pr = profile(example)
    assert pr.suggested[0].name == ARTICLE and pr.triples == len(example) and 0 < pr.label_coverage < 1


def test_an_endpoint_that_is_down_is_one_line_in_bounded_time():
    from support.local_procs import free_port

    url = f"http://reader:s3cret-pass@127.0.0.1:{free_port()}/query"
    start = time.monotonic()
    with pytest.raises(EndpointError) as err:
        SparqlEndpoint(url, EndpointSettings(retries=2)).fingerprint()
    assert time.monotonic() - start < 10
    msg = str(err.value)
    assert "s3cret" not in msg and "***@127.0.0.1" in msg and "3 tries" in msg and "\n" not in msg


def test_an_endpoint_answering_errors_is_retried_a_bounded_number_of_times():
    calls = []

    class Failing(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_POST(self):  # noqa: N802
            calls.append(1)
            self.send_response(500)
            self.end_headers()

    srv = HTTPServer(("127.0.0.1", 0), Failing)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        with pytest.raises(EndpointError, match=r"HTTP 500 after 2 tries"):
            SparqlEndpoint(f"http://127.0.0.1:{srv.server_port}/q", EndpointSettings(retries=1)).fingerprint()
    finally:
        srv.shutdown()
    assert len(calls) == 2


def test_instances_of_a_class_are_the_same_read_from_the_store():
    """A graph read where it lives (no in-memory index, as a live endpoint is) finds a class's instances by the
    class's IRI, not as an ORKG class of that name: both paths give the same instances."""
    indexed = RdfKnowledgeGraph.load(EXAMPLE / "graph.ttl")
    kept = RdfKnowledgeGraph(indexed.graph, name="store", index=False, vocabulary=indexed.vocabulary)
    for cls in (EX + "Result", ARTICLE):
        assert sorted(e.uid for e in kept.entities_by_type(cls)) == sorted(e.uid for e in indexed.entities_by_type(cls))
        assert kept.entities_by_type(cls), cls
