"""The same numbers on every machine: data-stage outputs are byte-identical across checkouts and hash seeds,
a run's metrics are identical, and a text's embedding does not depend on what else is embedded with it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

pytestmark = pytest.mark.slow  # hublab/dvc subprocesses across checkouts

REPO = Path(__file__).resolve().parents[2]
# wall-clock measurements
TIMING = ("runtime", "index_build_s", "tracking_open_s", "emissions", "energy", "duration", "session_")


def _project(root: Path, shared: Path) -> Path:
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    for key, val in params["paths"].items():
        if isinstance(val, str) and val.startswith("../shared"):
            params["paths"][key] = str(shared) + val[len("../shared"):]
    root.mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    (root / "pipelines").mkdir()
    (root / "pipelines" / "bm25.yaml").write_text((REPO / "pipelines" / "bm25.yaml").read_text())
    return root


def _cli(root: Path, seed: str, *args: str) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("HUBLAB_ROOT", "MLFLOW_TRACKING_URI")}
    env.update(PYTHONHASHSEED=seed, PYTHONPATH=os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]))
    res = subprocess.run([sys.executable, "-m", "hublab.cli", *args], cwd=root, env=env, capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, f"{args}: {res.stdout[-2000:]}\n{res.stderr[-3000:]}"


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted((root / "data").rglob("*")) if p.is_file()}


def test_data_stages_and_a_small_run_are_identical_across_checkouts_and_hash_seeds(tmp_path: Path, shared: Path):
    out: dict[str, tuple[dict[str, bytes], dict[str, float], list[list[str]]]] = {}
    for name, seed in (("a", "0"), ("b", "4242")):
        root = _project(tmp_path / name / "checkout", shared)  # different absolute paths
        for stage in ("snapshot", "graphs", "datasets"):
            _cli(root, seed, "data", stage)
        _cli(root, seed, "run", "pipelines/bm25.yaml", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--limit",
             "8", "--no-carbon", "--output", "summary.json")
        metrics = {k: v for k, v in json.loads((root / "summary.json").read_text()).items()
                   if not any(t in k for t in TIMING)}
        ckpt = next((root / "outputs" / "runs").glob("*/predictions.jsonl"))
        contexts = [json.loads(line)["retrieved_context"] for line in ckpt.read_text().splitlines()]
        out[name] = (_files(root), metrics, contexts)
        # provenance (time, absolute paths) is kept, but outside the DVC outputs
        prov = json.loads((root / "outputs" / "provenance" / "snapshot-gv3_orkg.json").read_text())
        assert "created_at" in prov and prov["root"] == str(root.resolve())
    (fa, ma, ca), (fb, mb, cb) = out["a"], out["b"]
    assert sorted(fa) == sorted(fb) and len(fa) >= 12
    differ = [f for f in fa if fa[f] != fb[f]]
    assert not differ, f"stage outputs differ: {differ}"
    manifest = json.loads(fa["data/snapshots/gv3_orkg.manifest.json"])
    assert "created_at" not in manifest and not Path(manifest["file"]).is_absolute()
    report = json.loads(fa["data/kgqa/mapping_report.json"])
    assert all(not Path(e["csv"]).is_absolute() and not Path(e["output"]).is_absolute()
               for e in report["datasets"].values())
    assert ca == cb
    assert ma == mb and ma["n_questions"] == 8


@pytest.fixture(scope="module")
def embedder():
    from hublab.embedding.sentence_transformer import SentenceTransformerEmbedder

    return SentenceTransformerEmbedder(device="cpu")


TEXTS = ["Which papers use the evaluation method Case Study?", "Which papers use the evaluation method Case Study!",
         "Which papers apply the evaluation method Case Study?", "Paper Class 1 - evaluation - Case Study",
         "short", "hello world foo bar",
         "a much longer sentence about software architecture and design decisions in microservice systems"]


def test_a_texts_vector_does_not_depend_on_its_batch_partners_or_threads(embedder):
    import torch

    n = torch.get_num_threads()
    try:  # two threads against one, set here: the suite itself runs torch single-threaded (tests/conftest.py)
        torch.set_num_threads(2)
        alone = {t: embedder.embed([t])[0] for t in TEXTS}
        together = embedder.embed(TEXTS + TEXTS[::-1] + ["x"] * 20)
        torch.set_num_threads(1)
        single = embedder.embed(TEXTS[::-1])[::-1]
    finally:
        torch.set_num_threads(n)
    for i, t in enumerate(TEXTS):
        assert np.array_equal(together[i], alone[t]), t
    assert all(np.array_equal(single[i], alone[t]) for i, t in enumerate(TEXTS))


def test_cache_on_and_off_give_identical_vectors(embedder, tmp_path: Path):
    from hublab.embedding.cache import CachedEmbedder

    cached = CachedEmbedder(embedder, tmp_path)
    cached.embed(TEXTS[3:])  # the cache is filled by a call with other partners
    a = cached.embed(TEXTS)
    b = embedder.embed(TEXTS)
    assert np.array_equal(a, b)
