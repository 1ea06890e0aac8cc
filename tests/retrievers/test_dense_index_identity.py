"""A dense collection is reused only for the texts it was built from: VSS with and without relations in its node
documents (``add_rel``) has the same unit keys, so a key-only identity searched the other configuration's vectors
(found in the fair comparison: VSS on GV1 changed with the order its configurations ran in)."""

from __future__ import annotations

from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Resources
from hublab.retrievers.registry import build_retriever


def _graph() -> RdfKnowledgeGraph:
    def e(uid: str, label: str) -> Knowledge:
        return Knowledge(uid=uid, text=label)

    paper, method, venue = e("R1", "Graph retrieval paper"), e("R2", "Case Study"), e("R3", "ICSA")
    triples = [Triple(paper, "evaluation method", method), Triple(paper, "published in", venue)]
    return RdfKnowledgeGraph.from_triples(triples, name="tiny")


def _ranked(res: Resources, add_rel: bool) -> list[tuple[str, float]]:
    r = build_retriever("vss", res, {"units": "nodes", "add_rel": add_rel, "n_results": 3})
    r.index()
    return [(u.key, round(score, 6)) for u, score in r.indexes()["nodes"].search("Case Study evaluation method", 3)]


def test_vss_node_documents_with_and_without_relations_get_their_own_vectors(tmp_path, hashing):
    from hublab.vectorstore.factory import build_vector_store

    def resources(path):
        return Resources(graph=_graph(), embedder=hashing, vector_store=build_vector_store({"uri": None}, path),
                         index_name="tiny")

    shared = resources(tmp_path / "shared.db")
    with_rel = _ranked(shared, True)
    without = _ranked(shared, False)  # same keys, other texts: must rebuild, not search the first collection
    assert without == _ranked(resources(tmp_path / "alone.db"), False)  # as if it had its own index
    assert without != with_rel  # the relations change the scores on this graph (else the test proves nothing)
    assert _ranked(shared, True) == with_rel  # and back again
