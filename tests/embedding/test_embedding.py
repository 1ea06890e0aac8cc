"""The embedding disk cache survives a new wrapper instance (what a re-index in a new process sees)."""

from __future__ import annotations

import numpy as np
import pytest

from hublab.embedding.factory import build_embedder

pytestmark = pytest.mark.slow  # loads MiniLM (its own instances: the cache layer is under test)


def test_disk_cache_is_shared_across_instances(tmp_path):
    texts = ["knowledge graph question answering", "hub-based retrieval", "knowledge graph question answering"]
    first = build_embedder({"device": "cpu"}, cache_dir=tmp_path)
    v1 = first.embed(texts)
    assert first.model_calls == 2
    second = build_embedder({"device": "cpu"}, cache_dir=tmp_path)
    v2 = second.embed(texts[::-1])
    assert second.model_calls == 0 and np.array_equal(v2, v1[::-1])
    assert v1.dtype == np.float32 and first.embed([]).shape == (0, first.dim)


def test_uncached_embedder_has_no_cache_layer(tmp_path):
    plain = build_embedder({"device": "cpu", "cache": False}, cache_dir=tmp_path)
    assert not hasattr(plain, "model_calls") and plain.dim == 384
    assert not (tmp_path / "embeddings").exists()


def test_dimension_read_from_the_folder_is_the_loaded_models():
    from hublab.embedding.sentence_transformer import SentenceTransformerEmbedder, dim_from_files

    emb = SentenceTransformerEmbedder(device="cpu")
    assert emb._loaded is None  # built, not loaded
    model = emb._model
    getdim = getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    assert dim_from_files(emb.path) == int(getdim()) == emb.dim == emb.embed(["a"]).shape[1]
