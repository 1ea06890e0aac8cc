"""Content-keyed dense indices (issue #46): a corpus is built once and reused by any later retriever with the same
units (what tuning trials that vary DiFaR's depth or text repeat), two corpora of one method live side by side
instead of replacing each other, and a folder keeps a bounded number per family with a stated eviction rule. On the
tiny synthetic graph with Milvus Lite and the hashing embedder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hublab.retrievers.base import Resources
from hublab.retrievers.components import dense_index
from hublab.retrievers.registry import build_retriever
from hublab.testing.retriever_contract import tiny_graph
from hublab.vectorstore import corpora
from support.baseline_support import make_vector_store

QUESTION = "Which research method does the microservice migration study use?"


def _resources(tmp: Path, hashing, store) -> Resources:
    return Resources(graph=tiny_graph(), embedder=hashing, vector_store=store, index_name="tiny",
                     root_entity_ids=["R1"], index_dir=str(tmp / "idx"), cache_dir=str(tmp / "cache"))


def _difar(res: Resources, **params):
    r = build_retriever("difar", res, {"indexing_root_entity_ids": ["R1"], "n_results": 5, **params})
    stats = r.index(progress=False)
    return stats, [c.text for c in r.retrieve(QUESTION).contexts]


def test_a_corpus_is_built_once_and_reused_by_later_retrievers(tmp_path: Path, hashing):
    store = make_vector_store(tmp_path / "idx" / "index.db")
    res = _resources(tmp_path, hashing, store)
    before = dict(dense_index.BUILDS)
    deep, deep_hits = _difar(res, max_depth=5)
    shallow, shallow_hits = _difar(res, max_depth=1)
    again, again_hits = _difar(res, max_depth=5)  # the first corpus: still there, not rebuilt
    assert not deep["skipped"] and not shallow["skipped"] and again["skipped"]
    assert deep["collection"] != shallow["collection"] and again["collection"] == deep["collection"]
    assert deep["units"] > shallow["units"] and again_hits == deep_hits
    assert dense_index.BUILDS["built"] - before["built"] == 2
    assert dense_index.BUILDS["reused"] - before["reused"] == 1
    # the same answers as a store that only ever held that corpus
    alone = _resources(tmp_path / "alone", hashing, make_vector_store(tmp_path / "alone" / "idx" / "index.db"))
    assert _difar(alone, max_depth=5)[1] == deep_hits
    # builds are recorded in the folder; reusing a corpus leaves the folder's record alone (a DVC output stays clean)
    record = (tmp_path / "idx" / corpora.REGISTRY).read_text()
    _difar(res, max_depth=1)
    assert (tmp_path / "idx" / corpora.REGISTRY).read_text() == record
    assert sorted(json.loads(record)["difar_tiny_any"]) == sorted([deep["collection"], shallow["collection"]])


def test_one_collection_serves_every_metric_where_the_store_scores_searches(tmp_path: Path, hashing):
    """Milvus Lite scores every search in the exact mirror: DiFaR with l2 reuses the cosine trial's corpus and
    ranks as an l2 collection of its own would."""
    res = _resources(tmp_path, hashing, make_vector_store(tmp_path / "idx" / "index.db"))
    cosine, cos_hits = _difar(res, distance_metric="cosine")
    l2, l2_hits = _difar(res, distance_metric="l2")
    assert l2["skipped"] and l2["collection"] == cosine["collection"]
    alone = _resources(tmp_path / "alone", hashing, make_vector_store(tmp_path / "alone" / "idx" / "index.db"))
    assert _difar(alone, distance_metric="l2")[1] == l2_hits
    from hublab.errors import HubLabError

    store = res.vector_store  # natively (a server's index), another metric than the collection's is refused
    with pytest.raises(HubLabError, match="indexed for"):
        store._native_metric(cosine["collection"], "L2")


def test_eviction_keeps_the_most_recently_built_and_spares_recent_ones(tmp_path: Path):
    store = make_vector_store(tmp_path / "idx" / "index.db")
    folder = tmp_path / "idx"
    for name in ("fam", "fam_a", "fam_b", "fam_c", "other_x"):
        store.ensure_collection(name, 4)
    hour = 3600.0
    assert corpora.record_build(folder, "fam", "fam_a", store, keep=2, now=1 * hour) == ["fam"]  # pre-hash layout
    assert corpora.record_build(folder, "fam", "fam_b", store, keep=2, now=2 * hour) == []
    # fam_a is the oldest beyond keep=2 and older than IN_USE_S: dropped; another family is never touched
    assert corpora.record_build(folder, "fam", "fam_c", store, keep=2, now=3 * hour) == ["fam_a"]
    assert not store.has_collection("fam_a") and store.has_collection("fam_b") and store.has_collection("other_x")
    # a collection built within IN_USE_S is spared even beyond the bound (a worker may be searching it)
    store.ensure_collection("fam_d", 4)
    assert corpora.record_build(folder, "fam", "fam_d", store, keep=1, now=3 * hour + 60) == ["fam_b"]
    assert store.has_collection("fam_c") and store.has_collection("fam_d")


@pytest.mark.parametrize("method", ["difar", "hublink", "vss"])
def test_the_mirror_built_from_the_inserted_rows_is_the_stored_one(tmp_path: Path, hashing, method):
    """A Lite collection created in this process is mirrored from what was inserted, not read back: ids, vectors
    and fields (with their types: ties are broken on their repr) equal the rows Milvus Lite returns."""
    res = _resources(tmp_path, hashing, make_vector_store(tmp_path / "idx" / "index.db"))
    r = build_retriever(method, res, {"indexing_root_entity_ids": ["R1"]} if method == "difar" else {})
    r.index(progress=False)
    first = r.retrieve(QUESTION).contexts
    store = res.vector_store
    names = store.client.list_collections()
    assert names
    for name in names:
        seeded = store._mirror(name)
        read = sorted(store._read_rows(name), key=lambda row: int(row["id"]))
        assert seeded.ids.tolist() == [int(row["id"]) for row in read], name
        assert seeded.matrix.tobytes() == b"".join(
            __import__("numpy").asarray(row["vector"], dtype="float32").tobytes() for row in read), name
        assert [sorted((k, repr(v)) for k, v in f.items()) for f in seeded.fields] == [
            sorted((k, repr(v)) for k, v in row.items() if k != "vector") for row in read], name
    assert [c.text for c in first] == [c.text for c in r.retrieve(QUESTION).contexts]
