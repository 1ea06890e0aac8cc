"""Run a HubLab retriever over a STaRK split and score it with STaRK's metrics (a run, so it lives with the
runner: the STaRK data adapter below it, in ``datasets/stark``, knows no retriever).

Metrics come from :mod:`hublab.evaluation.stark` (STaRK's own names), the same module the runner uses.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.datasets.stark.skb import SkbKnowledgeGraph, StarkQuery, load_qa
from hublab.embedding.base import Embedder
from hublab.evaluation.names import STARK_OWN
from hublab.evaluation.stark import mean_metrics, query_metrics
from hublab.retrievers.base import Resources, RetrievalResult, Retriever


def default_embedder(cfg: dict[str, Any] | None = None, cache_dir: str | Path | None = "models/embeddings") -> Embedder:
    """The pipeline embedder (bundled MiniLM by default)."""
    from hublab.embedding.factory import build_embedder

    return build_embedder(cfg or {"model": "all-MiniLM-L6-v2"}, Path(cache_dir) if cache_dir else None)


@dataclass
class StarkReport:
    retriever: str
    split: str
    n_queries: int
    metrics: dict[str, float]
    per_query: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0


def ranked_node_ids(result: RetrievalResult) -> list[int]:
    """Node ids from a retriever's contexts, best first, deduplicated (triple contexts map to their ends)."""
    out: list[int] = []
    seen: set[int] = set()
    for c in result.contexts:
        ids: list[Any] = [c.metadata.get("node_id")]
        if c.triple is not None and ids[0] is None:
            ids = [c.triple.object.uid, c.triple.subject.uid]
        for raw in ids:
            try:
                nid = int(raw)
            except (TypeError, ValueError):
                continue
            if nid not in seen:
                seen.add(nid)
                out.append(nid)
    return out


def evaluate(
    retriever: Retriever,
    queries: list[StarkQuery],
    *,
    split: str = "test",
    progress: Callable[[int, int], None] | None = None,
) -> StarkReport:
    start = time.perf_counter()
    rows: list[dict[str, Any]] = []
    for n, q in enumerate(queries, start=1):
        res = retriever.retrieve(q.query)
        ranked = ranked_node_ids(res)
        m = query_metrics(ranked, q.answer_ids)
        rows.append({"id": q.qid, "query": q.query, "answer_ids": q.answer_ids, "pred_ids": ranked[:100],
                     "reason": res.reason, **m})
        if progress:
            progress(n, len(queries))
    metric_rows = [{k: r[k] for k in STARK_OWN} for r in rows]
    return StarkReport(retriever.name, split, len(rows), mean_metrics(metric_rows), rows,
                       time.perf_counter() - start)


def build_stark_resources(
    skb_dir: str | Path,
    *,
    llm: Any = None,
    embedder: Embedder | None = None,
    vector_store: Any = None,
    candidate_types: list[str] | None = None,
) -> Resources:
    graph = SkbKnowledgeGraph.load(skb_dir, candidate_types=candidate_types)
    return Resources(graph=graph, embedder=embedder or default_embedder(), llm=llm, vector_store=vector_store,
                     index_name=f"stark_{graph.name}")


def load_split(qa_dir: str | Path, split: str, limit: int | None = None) -> list[StarkQuery]:
    qs = load_qa(qa_dir, split)
    return qs[:limit] if limit else qs
