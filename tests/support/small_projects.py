"""A project folder of its own for a test: the repository's params.yaml, the BM25 and HubLink pipelines, a Turtle
graph and a JSONL dataset (``graph.ttl``, ``q.jsonl``)."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]


def small_project(tmp_path: Path, graph: str, questions: list[dict]) -> Path:
    """``tmp_path/project`` holding ``graph`` as ``graph.ttl`` and ``questions`` as ``q.jsonl``."""
    root = tmp_path / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text(yaml.safe_dump(yaml.safe_load((ROOT / "params.yaml").read_text())))
    for name in ("bm25", "hublink_local"):
        (root / "pipelines" / f"{name}.yaml").write_text((ROOT / "pipelines" / f"{name}.yaml").read_text())
    (root / "graph.ttl").write_text(graph)
    (root / "q.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    return root
