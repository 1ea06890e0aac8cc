"""The scale generator keeps the real graph's shape: k copies of every paper subgraph, shared nodes shared."""

from __future__ import annotations

from collections import Counter

from hublab.graph.synthetic import replicate


def _shape(graph, paper: str) -> Counter:
    return Counter(t.predicate for t in graph.subgraph(paper))


def test_replicate_keeps_schema_and_value_distributions(gv3_orkg_graph):
    g3 = replicate(gv3_orkg_graph, 3)
    papers = sorted(e.uid for e in gv3_orkg_graph.entities_by_type("Paper"))
    assert len(g3.entities_by_type("Paper")) == 3 * len(papers)
    shared = len(gv3_orkg_graph) * 3 - len(g3)
    assert 0 < shared < len(gv3_orkg_graph) * 0.05 * 3  # only triples between shared nodes exist once
    p = papers[7]
    for c in (1, 2):
        copy = f"{p}x{c}"
        assert g3.entity(copy).text == f"{gv3_orkg_graph.entity(p).text} (copy {c})"
        assert _shape(g3, copy) == _shape(gv3_orkg_graph, p)
        venue = {t.object.uid for t in g3.outgoing(copy) if t.predicate == "venue"}
        assert venue == {t.object.uid for t in gv3_orkg_graph.outgoing(p) if t.predicate == "venue"}  # shared
    values = Counter(t.object.text for t in gv3_orkg_graph.triples() if t.predicate == "research method")
    values3 = Counter(t.object.text for t in g3.triples() if t.predicate == "research method")
    assert values3 == Counter({k: 3 * v for k, v in values.items()})
    assert len(replicate(gv3_orkg_graph, 1)) == len(gv3_orkg_graph)
