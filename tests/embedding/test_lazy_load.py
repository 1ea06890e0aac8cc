"""The embedding model loads on first use, not when a pipeline's resources are built (issue #28): a pipeline that
never embeds (BM25) never imports torch, and a warm embedding cache answers without the model. Loading it up front
was 11 of the 18 s of a BM25 ``hublab tune`` process."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from hublab.embedding.base import Embedder, on_grid
from hublab.embedding.cache import CachedEmbedder
from hublab.embedding.sentence_transformer import dim_from_files, resolve_model_path

MINILM = Path(resolve_model_path(None))


class _Known(Embedder):
    """Stands in for MiniLM on CPU when filling the cache: same vectors identity and size, known vectors."""

    name = "all-MiniLM-L6-v2"
    dim = 384

    @property
    def vectors_id(self) -> str:
        return "all-MiniLM-L6-v2@fp64"

    def embed(self, texts: list[str]) -> np.ndarray:
        rng = np.random.default_rng(len(texts))
        return rng.standard_normal((len(texts), self.dim)).astype(np.float32)


PROBE = """
import json, sys
from pathlib import Path
from hublab.embedding.factory import build_embedder
cache = Path(sys.argv[1])
named = build_embedder({}, cache_dir=cache).name  # a BM25 pipeline's resources: built, never asked to embed
after_build = sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules)
emb = build_embedder({"device": "cpu"}, cache_dir=cache)
vectors = emb.embed(json.loads(sys.argv[2]))
after_embed = sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules)
from hublab.embedding.sentence_transformer import _cpu_only_torch, resolve_device
auto = resolve_device("auto")
print(json.dumps({"named": named, "after_build": after_build, "dim": emb.dim, "vectors": vectors.tolist(),
                  "after_embed": after_embed, "auto": auto, "cpu_only_torch": _cpu_only_torch(),
                  "after_auto": sorted(m for m in ("torch", "sentence_transformers") if m in sys.modules)}))
"""


def test_building_an_embedder_loads_nothing_and_a_warm_cache_needs_no_model(tmp_path: Path):
    texts = ["HubLink: a retriever over research knowledge graphs", "ORKG contribution", "HubLink: a retriever "
             "over research knowledge graphs"]
    expected = CachedEmbedder(_Known(), tmp_path).embed(texts)  # the cache as an earlier run left it
    out = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path), json.dumps(texts)], capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["named"] == "all-MiniLM-L6-v2" and got["after_build"] == []
    assert got["dim"] == 384 and got["after_embed"] == []  # neither torch nor the model were needed
    # the cached vectors, on the portable grid (a cache filled before the grid stays valid: issue #42)
    assert np.array_equal(np.asarray(got["vectors"], dtype=np.float32), on_grid(expected))
    if got["cpu_only_torch"]:  # a CPU-only torch build (what setup.sh installs): `auto` is cpu without torch
        assert got["auto"] == "cpu" and got["after_auto"] == []


def _model_dir(tmp_path: Path, kinds: list[str], pooling: dict) -> Path:
    root = tmp_path / "model"
    (root / "1_Pooling").mkdir(parents=True)
    (root / "modules.json").write_text(json.dumps(
        [{"idx": i, "name": str(i), "path": ["", "1_Pooling", f"{i}_{k}"][min(i, 2)],
          "type": f"sentence_transformers.models.{k}"} for i, k in enumerate(kinds)]))
    (root / "1_Pooling/config.json").write_text(json.dumps(pooling))
    return root


def test_dimension_is_read_from_the_model_folder_only_where_it_is_certain(tmp_path: Path):
    assert dim_from_files(MINILM) == 384
    mean = {"word_embedding_dimension": 256, "pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False}
    assert dim_from_files(_model_dir(tmp_path / "a", ["Transformer", "Pooling"], mean)) == 256
    # a Dense layer changes the size, two pooling modes concatenate: the model is loaded and asked instead
    assert dim_from_files(_model_dir(tmp_path / "b", ["Transformer", "Pooling", "Dense"], mean)) is None
    both = {**mean, "pooling_mode_cls_token": True}
    assert dim_from_files(_model_dir(tmp_path / "c", ["Transformer", "Pooling", "Normalize"], both)) is None
    assert dim_from_files(tmp_path / "missing") is None
