"""The KGQA sets as MLflow evaluation datasets (``mlflow.genai.datasets``, SQL store), versioned by content.

One dataset per KGQA set and content: named ``<set>@<digest>`` (the first 12 hex digits of the records' SHA-256)
and tagged with the set, the digest, the graph its golden triples refer to and the question count, so the MLflow
UI's datasets view lists every version and re-registering unchanged data creates nothing. A record is MLflow's
shape (``inputs: {question}``, ``expectations: {golden_triples, golden_answer, graph}``: the graph lets a scorer
told it has predictions on another graph refuse each row by name) tagged with the question's
``uid``, graph and thesis slices (hops, use case, retrieval operation, semi-typed), so it can be passed to
``mlflow.genai.evaluate`` as it is: a user's ``retrieve(question)`` gets only the question.
"""

from __future__ import annotations

import hashlib
import json
import logging
from dataclasses import dataclass
from typing import Any

from hublab.datasets.model import QAPair
from hublab.mlflow_eval.scorers import GOLDEN_KEY, GRAPH_KEY

log = logging.getLogger(__name__)

#: QAPair fields carried as record tags: the thesis's breakdowns (Tables 10.2-10.6)
SLICES = ("hops", "use_case", "retrieval_operation", "semi_typed")


def records(pairs: list[QAPair], graph: str) -> list[dict[str, Any]]:
    out = []
    for p in pairs:
        tags = {"uid": p.uid, "graph": graph}
        tags.update({f: str(getattr(p, f)) for f in SLICES if getattr(p, f) is not None})
        out.append({"inputs": {"question": p.question},
                    "expectations": {GOLDEN_KEY: list(p.golden_triples), "golden_answer": p.golden_answer,
                                     GRAPH_KEY: graph},
                    "tags": tags})
    return out


def digest(recs: list[dict[str, Any]]) -> str:
    """Content digest of the records (order included: the dataset's order is the run order)."""
    blob = json.dumps(recs, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


@dataclass(frozen=True)
class Registered:
    name: str
    dataset_id: str
    created: bool  # False: this content was registered already
    n_records: int


def register(kgqa_set: str, pairs: list[QAPair], graph: str, *, experiment_id: str | None = None) -> Registered:
    """Register one KGQA set in the current MLflow tracking store (nothing new if this content is there). A set is
    tagged ``complete`` only after all its records are in: one left incomplete by a failed earlier registration is
    deleted and registered again, never reported as "unchanged"."""
    from mlflow.genai.datasets import create_dataset, delete_dataset, search_datasets, set_dataset_tags

    recs = records(pairs, graph)
    dig = digest(recs)
    name = f"{kgqa_set}@{dig}"
    for found in search_datasets(filter_string=f"name = '{name}'"):
        if (found.tags or {}).get("complete") == "true":
            return Registered(name, found.dataset_id, False, len(recs))
        log.warning("MLflow dataset %s (%s) is incomplete (an earlier registration failed): registering it again",
                    name, found.dataset_id)
        delete_dataset(dataset_id=found.dataset_id)
    ds = create_dataset(name=name, experiment_id=experiment_id,
                        tags={"kgqa_set": kgqa_set, "digest": dig, "graph": graph,
                              "n_questions": str(len(recs))})
    try:
        ds.merge_records(recs)
    except BaseException:
        delete_dataset(dataset_id=ds.dataset_id)
        raise
    set_dataset_tags(ds.dataset_id, {"complete": "true"})
    return Registered(name, ds.dataset_id, True, len(recs))
