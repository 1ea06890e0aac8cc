"""The embedding model loads in a background thread (issue #28: ~5 s of every run's start): its size is known
from the model's files without loading it, a run that never needs it exits cleanly, and a model that cannot be
loaded still fails with its own error."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import textwrap

import pytest

from hublab.embedding.sentence_transformer import _dim_from_files, resolve_model_path


def test_the_bundled_model_size_is_read_from_its_files():
    assert _dim_from_files(resolve_model_path(None)) == 384


def test_a_layout_that_changes_the_size_is_left_to_the_loaded_model(tmp_path):
    src = resolve_model_path(None)
    shutil.copytree(src, tmp_path / "m")
    pooling = tmp_path / "m" / "1_Pooling" / "config.json"
    cfg = json.loads(pooling.read_text())
    pooling.write_text(json.dumps({**cfg, "pooling_mode_cls_token": True}))  # cls + mean: 768 values
    assert _dim_from_files(str(tmp_path / "m")) is None
    modules = tmp_path / "m" / "modules.json"
    mods = json.loads(modules.read_text())
    modules.write_text(json.dumps([*mods, {"idx": 3, "name": "3", "path": "3_Dense",
                                           "type": "sentence_transformers.models.Dense"}]))
    assert _dim_from_files(str(tmp_path / "m")) is None


def test_a_process_that_never_embeds_exits_cleanly():
    """A run whose texts are all in the embedding cache never waits for the model; the process must still exit
    with 0 and without an abort message while the loader thread is still importing."""
    code = textwrap.dedent("""
        from hublab.embedding.sentence_transformer import SentenceTransformerEmbedder
        emb = SentenceTransformerEmbedder(device="cpu")
        print(emb.dim)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "384"
    assert "terminate called" not in proc.stderr


def test_a_model_that_cannot_load_raises_its_error_where_it_is_used(tmp_path):
    src = resolve_model_path(None)
    shutil.copytree(src, tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"not weights")
    from hublab.embedding.sentence_transformer import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(str(tmp_path / "m"), device="cpu")
    assert emb.dim == 384  # from the files: construction does not wait for the load
    with pytest.raises(Exception) as err:
        emb.embed(["a text"])
    assert "safetensors" in f"{type(err.value).__module__} {err.value}".lower() or "header" in str(err.value).lower()
