"""What a run ran on, the way MLflow shows it: the KGQA dataset as a run *input* (the run table's Dataset column,
with a digest) and the run tags ``graph``, ``dataset``, ``retriever``, ``llm``, ``embedder``.

The dataset digest is the sha256 of the dataset file's bytes (first 16 hex digits), so any change to the file —
one edited question, a re-mapped golden triple — gives a new digest, and two runs on the same file share one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from hublab.datasets.model import QAPair
from hublab.pipeline.config import PipelineConfig

DATASET_CONTEXT = "eval"


def file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def dataset_frame(pairs: list[QAPair]):
    """One row per question, every QAPair field; lists as JSON strings (MLflow profiles string/number columns)."""
    import pandas as pd

    rows = []
    for p in pairs:
        row = dataclasses.asdict(p)
        rows.append({k: json.dumps(v) if isinstance(v, list) else v for k, v in row.items()})
    return pd.DataFrame(rows)


def log_dataset_input(pairs: list[QAPair], name: str, path: Path, *, scope: str = "full") -> Any:
    """Log the whole dataset (``pairs``: every question of the file, also for a ``--limit`` run) as an input of the
    active run, context ``eval``; the input's tag ``hublab.scope`` says how many of its questions the run uses."""
    import warnings

    import mlflow

    with warnings.catch_warnings():  # "source can be interpreted in multiple ways", integer-column schema hints
        warnings.simplefilter("ignore", UserWarning)
        ds = mlflow.data.from_pandas(dataset_frame(pairs), source=str(Path(path).resolve()),
                                     targets="golden_answer", name=name, digest=file_digest(path))
        mlflow.log_input(ds, context=DATASET_CONTEXT, tags={"hublab.scope": scope})
    return ds


def _llm_label(section: dict[str, Any] | None) -> str:
    section = section or {}
    backend = section.get("backend", "none")
    if backend == "none":
        return "none"
    return f"{section.get('model') or backend} ({backend})"


def run_tags(cfg: PipelineConfig, graph: str, dataset: str, embedder_name: str | None = None) -> dict[str, str]:
    """``graph``, ``dataset``, ``retriever``, ``llm`` (model and backend of the resolved config; pipes with an LLM
    of their own are added as ``pipe=model``) and ``embedder``. Endpoints and key names are left out: the
    flattened config in the params has them (key *names* only, never values)."""
    llm = _llm_label(cfg.llm)
    for pipe in ("pre_retrieval", "post_retrieval", "generation"):
        section = getattr(cfg, pipe, {}) or {}
        if section.get("enabled") and section.get("llm"):
            llm += f"; {pipe}={_llm_label(section['llm'])}"
    embedder = cfg.embedder.get("model") or embedder_name or "default"
    return {"graph": graph, "dataset": dataset, "retriever": cfg.retriever_type, "llm": llm,
            "embedder": str(embedder)}
