"""HubLink fixtures shared by the retriever tests (imported by the root conftest, like llm_servers: a
tests/retrievers/conftest.py would shadow the root conftest for `from conftest import make_project`)."""

from __future__ import annotations

import pytest

from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Resources
from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths
from hublab.retrievers.registry import get_retriever_class


@pytest.fixture(scope="module")
def hublink_gv3_small(gv3_orkg_graph, tmp_path_factory, minilm):
    """A 10-paper subgraph of the ORKG GV3 export (every triple on the papers' hub paths, which includes the
    edge to the research field R659055) indexed once with the pipeline's factories."""
    from hublab.llm.factory import build_llm
    from hublab.vectorstore.factory import build_vector_store

    full = gv3_orkg_graph
    det = HubDetector(full, ["Paper"])
    papers = all_hub_roots(full, det, ["R659055"])[:10]
    triples = {t.render(): t for p in papers for hp in hub_paths(full, det, p) for t in hp.triples}
    g = RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_small")
    tmp = tmp_path_factory.mktemp("gv3_small")
    res = Resources(graph=g, root_entity_ids=["R659055"],
                    embedder=minilm,
                    llm=build_llm({"backend": "none"}), vector_store=build_vector_store(None, tmp / "x.db"),
                    index_name="gv3_small", cache_dir=str(tmp))
    r = get_retriever_class("hublink")(res)
    stats = r.index(progress=False)
    return g, papers, r, stats
