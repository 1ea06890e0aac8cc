import pytest

from hublab.graph.model import Knowledge, Triple, TripleParseError, parse_triple_string


def test_render_matches_thesis_format():
    t = Triple(Knowledge("R872741", "A, B: title"), "venue", Knowledge("R820814", "ICSA"))
    assert t.render() == "(R872741:A, B: title, venue, R820814:ICSA)"


def test_parse_inverts_render_with_commas_and_colons_in_labels():
    s = "(R1:Foo, Bar: baz, Has Evaluation Guideline, L2:x, y: z)"
    p = parse_triple_string(s)
    assert (p.subject_id, p.subject_label, p.predicate, p.object_id, p.object_label) == (
        "R1", "Foo, Bar: baz", "Has Evaluation Guideline", "L2", "x, y: z")
    assert p.render() == s


@pytest.mark.parametrize("bad", ["None", "(foo, bar, baz)", "(R1:a, b)", "R1:a, p, L2:b"])
def test_parse_rejects_malformed(bad):
    with pytest.raises(TripleParseError):
        parse_triple_string(bad)


def test_export_graph_queries(gv3_orkg_graph):
    kg = gv3_orkg_graph
    assert len(kg.entities_by_type("Paper")) == 153
    out = {t.predicate: t.object.text for t in kg.outgoing("R872741")}
    assert out["venue"] == "International Conference on Software Architecture (ICSA)"
    assert kg.entity("R659055").types == ("ResearchField",)
    assert any(t.subject.uid == "R872741" for t in kg.incoming("R820814"))
    assert kg.paper_of("L1529102").uid == "R872741"
    rows = kg.sparql(
        "PREFIX rdfs: <http://www.w3.org/2000/01/rdf-schema#> "
        "SELECT ?l WHERE { <http://orkg.org/orkg/resource/R872741> rdfs:label ?l }")
    assert rows[0]["l"].startswith("Availability-Driven")


def test_turtle_round_trip(tmp_path, gv3_orkg_graph):
    from hublab.graph.rdf import RdfKnowledgeGraph

    p = tmp_path / "g.ttl"
    gv3_orkg_graph.save(p)
    back = RdfKnowledgeGraph.load(p)
    assert {t.render() for t in back.triples()} == {t.render() for t in gv3_orkg_graph.triples()}
    # store-backed (non-indexed) access, as over a remote SPARQL store, gives the same answers
    remote_like = RdfKnowledgeGraph(back.graph, index=False)
    assert {t.render() for t in remote_like.outgoing("R872741")} == {t.render() for t in back.outgoing("R872741")}
