"""Pipelines that differ from the default LLM-free HubLink in one section only stay like-for-like with it."""

from __future__ import annotations

from pathlib import Path

import yaml

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"


def _load(name: str) -> dict:
    return yaml.safe_load((PIPELINES / f"{name}.yaml").read_text())


def test_finetuned_pipeline_differs_from_hublink_local_only_in_its_embedder():
    base, tuned = _load("hublink_local"), _load("hublink_local_finetuned")
    assert tuned["embedder"]["model"] != base["embedder"]["model"]
    for cfg in (base, tuned):
        cfg.pop("name"), cfg["embedder"].pop("model")
    assert tuned == base
    assert base["retriever"]["params"]["max_output_triples"] == 20  # the like-for-like bound of issue #11
