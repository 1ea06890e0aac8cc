"""The on-disk copy of a Lite collection's exact mirror (issue #28: ~3 s of every run's start on GV3): used only
while the collection's files are unchanged, untouched by other collections, never trusted when damaged, and
giving the same search and query results as rows read back through Milvus."""

from __future__ import annotations

import numpy as np
import pytest

from hublab.vectorstore import mirror_cache
from hublab.vectorstore.factory import build_vector_store

N = mirror_cache.MIN_ROWS + 500
DIM = 16


def _rows(n: int, start: int = 0) -> tuple[np.ndarray, list[dict]]:
    rng = np.random.default_rng(start)
    vecs = rng.normal(size=(n, DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    return vecs, [{"hub_root": f"H{(start + i) % 40}", "path_hash": f"p{start + i:06d}", "level": "path",
                   "triples": f'["t{start + i}"]'} for i in range(n)]


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A throwaway project root (the cache lives in ``<root>/.cache/mirrors`` for Lite files inside it)."""
    (tmp_path / "params.yaml").write_text("{}\n")
    monkeypatch.setenv("HUBLAB_ROOT", str(tmp_path))
    return tmp_path


def _filled(path, name="c", n=N, start=0):
    store = build_vector_store(None, path)
    store.ensure_collection(name, DIM, "COSINE")
    vecs, rows = _rows(n, start)
    store.insert(name, vecs, rows)
    return store, vecs


def _no_grpc_reads(store, monkeypatch):
    def refuse(name):
        raise AssertionError(f"{name} was read through gRPC although its cached mirror is current")
    monkeypatch.setattr(store, "_read_rows", refuse)


def _search(store, q, flt='hub_root in ["H3", "H7"]'):
    return [(h.id, h.score, h.fields["path_hash"]) for h in store.search("c", q, 15, filter=flt,
                                                                          output_fields=["path_hash"])[0]]


def test_a_second_process_reads_the_cached_mirror_and_gets_the_same_results(project, monkeypatch):
    path = project / "models" / "g__m" / "index.db"
    store, vecs = _filled(path)
    assert store.mirror_cache_dir == project / ".cache" / "mirrors"
    first = _search(store, vecs[:1])
    store.close()  # the copy of rows this process wrote is saved here, once the engine's files are final
    assert len(list((project / ".cache" / "mirrors").glob("*.npz"))) == 1
    again = build_vector_store(None, path)
    _no_grpc_reads(again, monkeypatch)
    assert _search(again, vecs[:1]) == first
    again.close()


def test_a_changed_collection_is_read_again_and_another_collection_changes_nothing(project, monkeypatch):
    path = project / "models" / "g__m" / "index.db"
    store, vecs = _filled(path)
    _search(store, vecs[:1])
    store.close()
    # another collection in the same file: the first one's copy is still current
    other, _ = _filled(path, name="other", n=100, start=10_000)
    other.close()
    same = build_vector_store(None, path)
    _no_grpc_reads(same, monkeypatch)
    assert len(same.search("c", vecs[:1], 5)[0]) == 5
    same.close()
    monkeypatch.undo()
    # rows added to the collection: the copy is stale, the new rows are found
    grown = build_vector_store(None, path)
    more, rows = _rows(10, start=50_000)
    grown.insert("c", more, rows)
    grown.close()
    fresh = build_vector_store({"uri": None}, path)
    hit = fresh.search("c", more[:1], 1, output_fields=["path_hash"])[0][0]
    assert hit.fields["path_hash"] == "p050000"
    fresh.close()


def test_a_damaged_copy_is_ignored(project):
    path = project / "models" / "g__m" / "index.db"
    store, vecs = _filled(path)
    first = _search(store, vecs[:1])
    store.close()
    for f in (project / ".cache" / "mirrors").glob("*.npz"):
        f.write_bytes(f.read_bytes()[: 1000])
    again = build_vector_store(None, path)
    assert _search(again, vecs[:1]) == first
    again.close()


def test_no_copy_for_a_file_outside_the_project_or_when_switched_off(project, tmp_path_factory):
    outside = tmp_path_factory.mktemp("elsewhere") / "index.db"
    assert build_vector_store(None, outside).mirror_cache_dir is None
    inside = project / "models" / "x" / "index.db"
    assert build_vector_store({"mirror_cache": False}, inside).mirror_cache_dir is None


def test_a_query_answered_from_the_mirror_equals_milvus(project):
    """HubLink's path records come from ``query``: from the in-memory mirror once it is loaded, the same rows
    (with the primary key, as Milvus adds it) as Lite's own query."""
    path = project / "models" / "g__m" / "index.db"
    store, vecs = _filled(path)
    flt = 'level == "path" and hub_root in ["H1", "H2"]'
    fields = ["hub_root", "path_hash", "triples"]
    native = sorted(store.query("c", filter=flt, output_fields=fields), key=lambda r: r["id"])
    store.search("c", vecs[:1], 3)  # loads the mirror
    assert "c" in store._mirrors
    mirrored = sorted(store.query("c", filter=flt, output_fields=fields), key=lambda r: r["id"])
    assert mirrored == native and len(native) == sum(1 for i in range(N) if i % 40 in (1, 2))
    assert len(store.query("c", filter=flt, output_fields=fields, limit=7)) == 7
    store.close()


def test_a_current_copy_answers_without_starting_the_lite_engine_and_an_older_copy_gains_its_metric(project):
    """Issue #43: with every collection's copy current (and naming its metric) a run never starts the Lite engine
    (pymilvus's imports and the engine's start were ~0.8 s before ``hublab run``'s first question on GV3). A copy
    written before the metric was kept is read through Milvus once and saved again with it."""
    path = project / "models" / "g__m" / "index.db"
    store, vecs = _filled(path)
    first = _search(store, vecs[:1])
    store.close()
    again = build_vector_store(None, path)
    assert again.has_collection("c") and again.count("c") == N and _search(again, vecs[:1]) == first
    assert again._client_obj is None  # no client, so no engine process for the file
    again.close()
    # the same copy without its metric (the format before): the engine answers once, and the copy is renewed
    ids, matrix, fields, metric = mirror_cache.load(project / ".cache" / "mirrors", path, "c")
    assert metric == "COSINE"
    mirror_cache.save(project / ".cache" / "mirrors", path, "c", ids, matrix, fields)
    older = build_vector_store(None, path)
    assert older.has_collection("c") and older._client_obj is not None and _search(older, vecs[:1]) == first
    older.close()
    assert mirror_cache.load(project / ".cache" / "mirrors", path, "c")[3] == "COSINE"


def test_past_the_seed_bound_a_build_keeps_no_copy_and_its_first_search_reads_the_rows_back(project, monkeypatch):
    """A collection written in this process seeds its mirror from the rows inserted, up to ``SEED_MAX_ROWS``: past
    that the copy is dropped (a build's memory does not grow with the corpus), and the first search reads the rows
    back through gRPC, with the results the seeded mirror gives."""
    import hublab.vectorstore.milvus as milvus

    seeded, vecs = _filled(project / "models" / "a__m" / "index.db")
    assert sum(map(len, seeded._seed["c"][0])) == N
    expected = _search(seeded, vecs[:1])
    seeded.close()
    monkeypatch.setattr(milvus, "SEED_MAX_ROWS", N - 1)
    bounded, _ = _filled(project / "models" / "b__m" / "index.db")
    assert "c" not in bounded._seed
    read = []
    monkeypatch.setattr(bounded, "_read_rows", lambda name, real=bounded._read_rows: read.append(name) or real(name))
    assert _search(bounded, vecs[:1]) == expected and read == ["c"]
    bounded.close()
