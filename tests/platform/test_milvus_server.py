"""Milvus by URI against separate server processes on 127.0.0.1 (tests/support/milvus_servers.py): on a real Milvus
standalone server (2.3.5) the native search and filter path answers correctly and whole retrievers give the same
results as through a Lite file; behind ``milvus-lite server`` the store recognises the Lite engine (its filtered
search can be truncated, so ``exact: auto`` searches it through the exact mirror)."""

from __future__ import annotations

import numpy as np
import pytest

from hublab.retrievers.base import Resources
from hublab.retrievers.registry import build_retriever
from hublab.vectorstore.factory import build_vector_store


def test_store_by_uri_uses_native_search_with_filters(milvus_standalone, milvus_token, tmp_path):
    store = build_vector_store({"uri": milvus_standalone.uri, "token_env": milvus_token}, tmp_path / "unused.db")
    assert not store.lite and not store.local_file and not store.use_mirror  # a full Milvus: native search
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(50, 8)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    store.ensure_collection("t_native", 8, "COSINE")
    store.insert("t_native", vecs, [{"hub_root": f"H{i % 5}", "i": i} for i in range(50)])
    assert store.count("t_native") == 50
    hits = store.search("t_native", vecs[7:8], 5, filter='hub_root in ["H2", "H3"]', output_fields=["hub_root", "i"])[0]
    assert hits and all(h.fields["hub_root"] in ("H2", "H3") for h in hits)
    assert hits[0].fields["i"] == 7 or vecs[7] @ vecs[hits[0].fields["i"]] >= 0.99
    exact = sorted(((float(vecs[7] @ vecs[i]), i) for i in range(50) if i % 5 in (2, 3)), reverse=True)[:5]
    assert [h.fields["i"] for h in hits] == [i for _, i in exact]  # native search is exact at this size
    store.drop_collection("t_native")


def _six_papers(gv3):
    """GV3's first six papers' hub paths as a graph of their own, and the papers' ids."""
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths

    det = HubDetector(gv3, ["Paper"])
    papers = all_hub_roots(gv3, det, ["R659055"])[:6]
    triples = {t.render(): t for p in papers for hp in hub_paths(gv3, det, p) for t in hp.triples}
    return RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_six"), papers


@pytest.mark.parametrize("method", ["hublink", "difar"])
def test_retriever_on_server_matches_lite_file(milvus_standalone, milvus_token, tmp_path, gv3_orkg_graph, method,
                                               minilm):
    """The same method on the same graph: Milvus standalone server (native search) vs. Lite file (exact mirror)."""
    graph, papers = _six_papers(gv3_orkg_graph)
    embedder = minilm
    title = graph.entity(papers[2]).text
    question = f"In which venue has the paper with the title '{title}' been published?"
    out = {}
    for kind, uri in (("server", milvus_standalone.uri), ("lite", None)):
        store = build_vector_store({"uri": uri, "token_env": milvus_token}, tmp_path / kind / "ix.db")
        res = Resources(graph=graph, embedder=embedder, vector_store=store, index_name=f"{method}_{kind}",
                        cache_dir=str(tmp_path / kind), index_dir=str(tmp_path / kind), root_entity_ids=["R659055"])
        r = build_retriever(method, res, {})
        r.index(progress=False)
        out[kind] = r.retrieve(question).context_strings[:10]
        if method == "hublink":  # a server gets HubLink's filter keys as indexed columns and overlapping searches
            coll = r.hub_index.collection
            assert store.concurrent_searches(coll) == (1 if kind == "lite" else 8)
            if kind == "server":
                fields = {f["name"]: f for f in store.client.describe_collection(coll)["fields"]}
                assert {"hub_root", "path_hash"} <= set(fields)
                assert {"hub_root", "path_hash"} <= set(store.client.list_indexes(coll))
    assert out["server"], "no result from the server"
    assert out["server"][0] == out["lite"][0]
    assert out["server"] == out["lite"]
    assert any("venue" in t for t in out["server"][:10])


def test_lite_engine_behind_a_uri_is_searched_through_the_mirror_with_native_results(milvus_lite_uri, tmp_path):
    """``exact: auto`` recognises the Lite engine behind a URI and searches its exact mirror (exact.py: Lite filters
    *after* its ANN top-k, which can truncate a selective filter). A selective filter matching exactly k rows: the
    mirror returns all of them, nearest first. Native search may return fewer: CI caught milvus-lite 3.2.2 returning
    3 of the 10 rows here (on this machine it returned all 10 at 3k and 20k vectors), which is the truncation the
    mirror exists for; what native search returns is still the nearest rows in order, so the test asserts that."""
    rng = np.random.default_rng(1)
    vecs = rng.normal(size=(3000, 16)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    native = build_vector_store({"uri": milvus_lite_uri, "exact": "never"}, tmp_path / "unused.db")
    assert not native.use_mirror
    native.ensure_collection("t_trunc", 16, "COSINE")
    native.insert("t_trunc", vecs, [{"hub_root": "RARE" if i % 300 == 0 else "COMMON", "i": i} for i in range(3000)])
    flt = 'hub_root in ["RARE"]'
    q = vecs[:1] * -1
    auto = build_vector_store({"uri": milvus_lite_uri}, tmp_path / "unused.db")
    assert auto.use_mirror
    got_auto = auto.search("t_trunc", q, 10, filter=flt, output_fields=["i"])[0]
    expected = sorted(range(0, 3000, 300), key=lambda i: (-round(float(q[0] @ vecs[i]), 5), i))
    assert [h.fields["i"] for h in got_auto] == expected  # all 10 RARE rows, nearest first
    got_native = native.search("t_trunc", q, 10, filter=flt, output_fields=["i"])[0]
    native_ids = [h.fields["i"] for h in got_native]
    assert native_ids == [i for i in expected if i in native_ids], "native filtered search reordered"
    assert len(got_auto) == 10 >= len(native_ids)  # the mirror never returns fewer than native search
    native.drop_collection("t_trunc")


def test_size_switch_on_a_lite_server_by_uri(milvus_lite_uri, tmp_path):
    """``exact_max_vectors`` chooses by size behind a URI too: a Lite server's collection above the limit is searched
    natively (no mirror in this process), at or below it through the mirror; both return only matching rows, and
    unfiltered they agree."""
    rng = np.random.default_rng(2)
    vecs = rng.normal(size=(200, 8)).astype(np.float32)
    rows = [{"hub_root": f"H{i % 4}", "i": i} for i in range(200)]
    small = build_vector_store({"uri": milvus_lite_uri, "exact_max_vectors": 200}, tmp_path / "unused.db")
    big = build_vector_store({"uri": milvus_lite_uri, "exact_max_vectors": 199}, tmp_path / "unused.db")
    small.ensure_collection("t_switch", 8, "COSINE")
    small.insert("t_switch", vecs, rows)
    assert small.use_mirror and big.use_mirror  # the Lite engine behind the URI is recognised
    assert small.mirrors("t_switch") and not big.mirrors("t_switch")
    q = vecs[5:6] * -1
    assert [h.id for h in big.search("t_switch", q, 10)[0]] == [h.id for h in small.search("t_switch", q, 10)[0]]
    native = big.search("t_switch", q, 10, filter='hub_root == "H1"', output_fields=["hub_root"])[0]
    exact = small.search("t_switch", q, 10, filter='hub_root == "H1"', output_fields=["hub_root"])[0]
    assert len(exact) == 10 and all(h.fields["hub_root"] == "H1" for h in native + exact)
    assert "t_switch" in small._mirrors and "t_switch" not in big._mirrors
    small.drop_collection("t_switch")


def test_server_index_parameters_and_flat_equals_the_exact_mirror(milvus_standalone, milvus_token, tmp_path):
    """``vector_store.index`` reaches the server (describe_index shows it), a changed index is rebuilt in place (the
    vectors stay), and native FLAT search gives the exact mirror's lists: same rows, same order (ties included:
    every 50th vector is the same), scores within 1e-6, with and without filters."""
    rng = np.random.default_rng(3)
    vecs = rng.normal(size=(3000, 16)).astype(np.float32)
    vecs[::50] = vecs[0]  # 60 identical vectors: a tie group larger than k
    rows = [{"hub_root": f"H{i % 7}", "i": i, "text": f"t{i % 50}"} for i in range(3000)]
    base = {"uri": milvus_standalone.uri, "token_env": milvus_token}
    hnsw = build_vector_store({**base, "index": {"type": "HNSW", "M": 8, "efConstruction": 64, "ef": 32}},
                              tmp_path / "unused.db")
    hnsw.drop_collection("t_index")
    hnsw.ensure_collection("t_index", 16, "COSINE")
    hnsw.insert("t_index", vecs, rows)
    desc = hnsw.client.describe_index("t_index", "vector")
    assert (desc["index_type"], desc["M"], desc["efConstruction"]) == ("HNSW", "8", "64")
    flat = build_vector_store({**base, "index": {"type": "FLAT"}}, tmp_path / "unused.db")
    flat.ensure_collection("t_index", 16, "COSINE")  # re-indexed in place
    assert flat.client.describe_index("t_index", "vector")["index_type"] == "FLAT" and flat.count("t_index") == 3000
    mirror = build_vector_store({"exact": "always"}, tmp_path / "lite" / "ix.db")
    mirror.ensure_collection("t_index", 16, "COSINE")
    mirror.insert("t_index", vecs, rows)
    q = vecs[[0, 1, 2]] * np.array([[1], [-1], [1]], dtype=np.float32)
    for flt in ("", 'hub_root in ["H0", "H3"]', 'hub_root == "H1" and i not in [1, 8, 15]'):
        got, want = flat.search("t_index", q, 30, filter=flt), mirror.search("t_index", q, 30, filter=flt)
        for g, w in zip(got, want, strict=True):
            assert [h.fields["i"] for h in g] == [h.fields["i"] for h in w], flt
            assert max(abs(a.score - b.score) for a, b in zip(g, w, strict=True)) <= 1e-6
    flat.drop_collection("t_index")


def test_searches_pinned_to_a_key_value_are_exact_from_its_rows(milvus_standalone, milvus_token, tmp_path,
                                                                 monkeypatch):
    """On a server, a filter pinning a key column (``hub_root == …``, HubLink's per-hub searches) is answered from
    that value's rows, fetched once by the column's index and scored like the exact mirror: the mirror's lists
    (ties included) under an approximate HNSW index with a tiny ``ef``, no ANN search, one fetch per value. A value
    with more rows than ``KEY_ROWS_MAX`` and an unpinned filter go to the server's index; rows another process
    adds are seen once the row count is checked again."""
    from hublab.vectorstore import keyed_rows

    rng = np.random.default_rng(4)
    vecs = rng.normal(size=(2800, 16)).astype(np.float32)
    vecs[::40] = vecs[0]  # 70 identical vectors (10 per hub): ties at the cut
    rows = [{"hub_root": f"H{i % 7}", "path_hash": f"p{i % 60}", "i": i, "text": f"t{i % 50}"} for i in range(2800)]
    base = {"uri": milvus_standalone.uri, "token_env": milvus_token}
    server = build_vector_store({**base, "index": {"type": "HNSW", "M": 4, "efConstruction": 8, "ef": 8}},
                                tmp_path / "unused.db")
    server.drop_collection("t_keyed")
    server.ensure_collection("t_keyed", 16, "COSINE", keys=("hub_root", "path_hash"))
    server.insert("t_keyed", vecs, rows)
    mirror = build_vector_store({"exact": "always"}, tmp_path / "lite" / "ix.db")
    mirror.ensure_collection("t_keyed", 16, "COSINE")
    mirror.insert("t_keyed", vecs, rows)
    calls: list[str] = []
    for fn in ("search", "query"):
        real = getattr(server.client, fn)

        def spy(*a, _fn=fn, _real=real, **kw):
            calls.append(f"{_fn} {kw.get('filter', '')}")
            return _real(*a, **kw)

        monkeypatch.setattr(server.client, fn, spy)
    q = vecs[[0, 1, 2]] * np.array([[1], [-1], [1]], dtype=np.float32)
    pinned = ['hub_root == "H1"', 'hub_root == "H1" and path_hash not in ["p1", "p8", "p15"]',
              'hub_root == "H0" and path_hash in ["p0", "p7", "p14", "p21"]']
    for flt in pinned:
        got, want = server.search("t_keyed", q, 30, filter=flt), mirror.search("t_keyed", q, 30, filter=flt)
        for g, w in zip(got, want, strict=True):
            assert len(g) == len(w) > 0
            assert [h.fields["i"] for h in g] == [h.fields["i"] for h in w], flt
            assert [h.score for h in g] == [h.score for h in w]
    assert not [c for c in calls if c.startswith("search")], calls  # no ANN search for a pinned key
    assert [c for c in calls if "hub_root ==" in c] == ['query hub_root == "H1"', 'query hub_root == "H0"']
    calls.clear()
    server.prefetch("t_keyed", "hub_root", ["H3", "H4", "H1", "H5"])  # one request for the three not cached
    assert calls == ['query hub_root in ["H3", "H4", "H5"]']
    for flt in ('hub_root == "H4"', 'hub_root == "H5" and path_hash not in ["p5"]'):
        got, want = server.search("t_keyed", q, 30, filter=flt), mirror.search("t_keyed", q, 30, filter=flt)
        assert [[h.fields["i"] for h in g] for g in got] == [[h.fields["i"] for h in w] for w in want], flt
    flt = 'hub_root in ["H3", "H4"] and path_hash in ["p3", "p4", "p10"]'
    cached = server.query("t_keyed", filter=flt, output_fields=["i", "text"])  # the rows are here: no request
    assert len(calls) == 1 and cached
    fresh = build_vector_store(base, tmp_path / "unused.db").query("t_keyed", filter=flt, output_fields=["i", "text"])
    assert sorted(cached, key=lambda r: r["i"]) == sorted(fresh, key=lambda r: r["i"])
    assert sorted(r["i"] for r in cached) == [i for i in range(2800) if i % 7 in (3, 4) and i % 60 in (3, 4, 10)]
    calls.clear()
    some = server.search("t_keyed", q, 5, filter='hub_root in ["H2", "H3"]')  # not pinned: the index
    assert [c for c in calls if c.startswith("search")] and all(h.fields["hub_root"] in ("H2", "H3") for h in some[0])
    monkeypatch.setattr(keyed_rows, "KEY_ROWS_MAX", 100)  # H2 has 400 rows: too many to fetch
    calls.clear()
    big = server.search("t_keyed", q, 5, filter='hub_root == "H2"')
    assert [c for c in calls if c.startswith("search")] and all(h.fields["hub_root"] == "H2" for h in big[0])
    monkeypatch.setattr(keyed_rows, "COUNT_CHECK_S", 0.0)
    other = build_vector_store(base, tmp_path / "unused.db")  # another process's store, as far as the cache knows
    other._keyed = keyed_rows.KeyedRows(other)
    other.insert("t_keyed", -vecs[1:2], [{"hub_root": "H1", "path_hash": "new", "i": -1, "text": "new"}])
    top = server.search("t_keyed", q[1:2], 1, filter='hub_root == "H1"')[0]
    assert [h.fields["i"] for h in top] == [-1]
    server.drop_collection("t_keyed")


@pytest.mark.parametrize("method", ["hublink", "difar"])
def test_a_build_on_a_server_flushes_once_at_its_end(milvus_standalone, milvus_token, tmp_path, gv3_orkg_graph,
                                                     hashing, method, monkeypatch):
    """A server seals and indexes a segment per flush (a flush per 1,024 rows made a build 18x slower): a build of
    several inserts flushes its collection once, at its end, and its rows are all there before and after."""
    from hublab.retrievers.components import dense_index

    monkeypatch.setenv("HUBLAB_INDEX_BATCH_HUBS", "2")  # HubLink: several batches, one insert each
    monkeypatch.setattr(dense_index, "_BATCH", 16)  # DiFaR: several inserts
    graph, _papers = _six_papers(gv3_orkg_graph)
    store = build_vector_store({"uri": milvus_standalone.uri, "token_env": milvus_token}, tmp_path / "unused.db")
    flushed: list[str] = []
    real_flush = store.client.flush
    monkeypatch.setattr(store.client, "flush", lambda name, **kw: (flushed.append(name), real_flush(name, **kw))[1])
    inserts: list[int] = []
    real_insert = store.insert
    monkeypatch.setattr(store, "insert", lambda name, v, rows: (inserts.append(len(rows)), real_insert(name, v, rows)))
    res = Resources(graph=graph, embedder=hashing, vector_store=store, index_name=f"flush_{method}",
                    cache_dir=str(tmp_path), index_dir=str(tmp_path), root_entity_ids=["R659055"])
    r = build_retriever(method, res, {})
    r.index(progress=False)
    coll = r.hub_index.collection if method == "hublink" else r._dense().collection
    assert len(inserts) >= 3, inserts
    assert flushed == [coll]
    assert store.count(coll) == sum(inserts)
    assert r.retrieve("Which venue published the paper?").context_strings
    store.close()  # nothing left to flush
    assert flushed == [coll]
    store.drop_collection(coll)


def test_close_flushes_what_a_server_store_wrote_and_did_not_flush(milvus_standalone, milvus_token, tmp_path,
                                                                    monkeypatch):
    """Writes left unflushed (a build that stopped before its own flush) are sealed when the store closes, once per
    collection; a collection dropped meanwhile is not flushed, and one flushed already is not flushed again."""
    store = build_vector_store({"uri": milvus_standalone.uri, "token_env": milvus_token}, tmp_path / "unused.db")
    flushed: list[str] = []
    real_flush = store.client.flush
    monkeypatch.setattr(store.client, "flush", lambda name, **kw: (flushed.append(name), real_flush(name, **kw))[1])
    vecs = np.eye(4, dtype=np.float32)
    names = ["t_close_b", "t_close_a", "t_close_dropped", "t_close_done"]
    for name in names:
        store.ensure_collection(name, 4, "COSINE")
        store.insert(name, vecs[:2], [{"i": 0}, {"i": 1}])
        store.insert(name, vecs[2:], [{"i": 2}, {"i": 3}])
    store.drop_collection("t_close_dropped")
    store.flush("t_close_done")
    assert flushed == ["t_close_done"]  # inserts alone flush nothing on a server
    store.close()
    assert flushed == ["t_close_done", "t_close_a", "t_close_b"]
    store.close()  # nothing left
    assert len(flushed) == 3
    other = build_vector_store({"uri": milvus_standalone.uri, "token_env": milvus_token}, tmp_path / "unused.db")
    for name in ("t_close_a", "t_close_b", "t_close_done"):
        assert other.count(name) == 4
        assert [h.fields["i"] for h in other.search(name, vecs[3:4], 1, output_fields=["i"])[0]] == [3]
        other.drop_collection(name)
