"""HubLink's path records for the answer step, chosen by size: all at once for a small index, per answered hub
for a large one; either way split into queries that the store's query limit cannot truncate (a single query of
the whole index returned only the first 16,384 paths, e.g. GV3 ×10 with 35,130)."""

from __future__ import annotations

from hublab.embedding.hashing import HashingEmbedder
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Resources
from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths
from hublab.retrievers.methods.hublink.indexing import HubIndex
from hublab.retrievers.registry import build_retriever
from hublab.vectorstore.factory import build_vector_store


def test_path_records_eager_lazy_and_split_agree(tmp_path, gv3_orkg_graph, monkeypatch):
    det = HubDetector(gv3_orkg_graph, ["Paper"])
    papers = all_hub_roots(gv3_orkg_graph, det, ["R659055"])[:6]
    triples = {t.render(): t for p in papers for hp in hub_paths(gv3_orkg_graph, det, p) for t in hp.triples}
    graph = RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_six")
    res = Resources(graph=graph, embedder=HashingEmbedder(32), vector_store=build_vector_store({}, tmp_path / "ix.db"),
                    index_name="pr", cache_dir=str(tmp_path), index_dir=str(tmp_path), root_entity_ids=["R659055"])
    r = build_retriever("hublink", res, {})
    stats = r.index(progress=False)
    hi = r.hub_index
    full = hi.path_records()
    assert len(full) == stats["paths"] and {rec["hub_root"] for rec in full.values()} == set(hi.manifest())
    per_hub = {h: sum(1 for rec in full.values() if rec["hub_root"] == h) for h in hi.manifest()}

    # a large index: only the answered hubs are fetched, and queries are split below the limit
    queries: list[str] = []
    query = res.vector_store.query

    def spy(name, **kw):
        queries.append(kw["filter"])
        return query(name, **kw)

    monkeypatch.setattr(res.vector_store, "query", spy)
    monkeypatch.setattr(HubIndex, "EAGER_PATH_RECORDS_MAX", 0)
    monkeypatch.setattr(HubIndex, "QUERY_LIMIT", max(per_hub.values()) + 1)  # one hub fits, all do not
    hi._paths = None
    two = sorted(per_hub)[1:3]
    got = hi.path_records(two)
    assert got == {h: rec for h, rec in full.items() if rec["hub_root"] in two}
    n = len(queries)
    assert hi.path_records(two) == got and len(queries) == n  # kept: no second query for the same hubs
    assert hi.path_records() == full  # all hubs, in split queries
    assert len(queries) > n + 1
    # a small index: everything at the first call
    monkeypatch.setattr(HubIndex, "EAGER_PATH_RECORDS_MAX", 10**9)
    hi._paths = None
    assert hi.path_records(two) == got and hi.path_records() == full
