"""A Lite file's collections that only the exact mirror searches get a FLAT index: with AUTOINDEX the Lite engine
builds a FAISS HNSW index per flushed segment on a background thread, which no search uses and which kept both
cores busy into the first questions after an in-process build (docs/hublink.md, issue #18 item 4)."""

from __future__ import annotations

import numpy as np
import pytest

from hublab.vectorstore.milvus import MilvusVectorStore


@pytest.mark.parametrize(("exact_max_vectors", "index_type"), [(None, "FLAT"), (1000, "AUTOINDEX")])
def test_mirror_only_collections_have_nothing_to_build(tmp_path, exact_max_vectors, index_type):
    store = MilvusVectorStore(str(tmp_path / f"ix{exact_max_vectors}.db"), exact_max_vectors=exact_max_vectors)
    rng = np.random.default_rng(0)
    vecs = rng.normal(size=(40, 8)).astype(np.float32)
    store.ensure_collection("c", 8, "COSINE")
    store.insert("c", vecs, [{"i": i} for i in range(40)])
    assert str(store.client.describe_index("c", "vector")["index_type"]).upper() == index_type
    hits = store.search("c", vecs[3:4], 3, output_fields=["i"])[0]
    assert hits[0].fields["i"] == 3  # searchable either way (the mirror; natively above exact_max_vectors)
