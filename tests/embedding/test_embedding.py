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


def test_gpu_batching_gives_the_same_vectors_for_the_same_texts_in_any_call_order():
    """The GPU's path (batches of GPU_BATCH over the sorted distinct texts, issue #28), run on the CPU: the same set
    of texts gives bitwise the same vectors whatever the call's order and repeats, rows follow the input, vectors
    are unit length and within float noise of the canonical path's."""
    from hublab.embedding.sentence_transformer import GPU_BATCH, SentenceTransformerEmbedder

    texts = [f"Paper {i} | venue | ICSA {i % 7}" for i in range(GPU_BATCH + 44)]  # two batches
    gpu = SentenceTransformerEmbedder(device="cpu")
    gpu.large_batches = True
    a = gpu.embed(texts)
    b = gpu.embed([*reversed(texts), *texts[:5]])
    assert np.array_equal(b[: len(texts)][::-1], a) and np.array_equal(b[len(texts):], a[:5])
    assert np.allclose(np.linalg.norm(a, axis=1), 1.0, atol=1e-6)
    canonical = SentenceTransformerEmbedder(device="cpu")
    assert not canonical.large_batches and gpu.vectors_id == canonical.vectors_id  # the device names the vectors
    assert float(np.abs(canonical.embed(texts) - a).max()) < 1e-5
