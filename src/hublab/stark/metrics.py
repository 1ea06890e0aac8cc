"""STaRK retrieval metrics (spec/stark_4step.md §1.9): binary Hit@k, Recall@k, MRR over the full ranking.

Implemented here because ``hublab.evaluation.stark`` did not exist when the adapter was written; these are
the torchmetrics semantics STaRK uses, averaged as a plain mean over queries.
"""

from __future__ import annotations

from collections.abc import Sequence


def hit_at_k(ranked: Sequence[int], gold: set[int], k: int) -> float:
    return 1.0 if any(r in gold for r in ranked[:k]) else 0.0


def recall_at_k(ranked: Sequence[int], gold: set[int], k: int) -> float:
    if not gold:
        return 0.0
    return len(set(ranked[:k]) & gold) / len(gold)


def reciprocal_rank(ranked: Sequence[int], gold: set[int]) -> float:
    for i, r in enumerate(ranked, start=1):
        if r in gold:
            return 1.0 / i
    return 0.0


def query_metrics(ranked: Sequence[int], gold: Sequence[int]) -> dict[str, float]:
    g = set(gold)
    return {
        "hit@1": hit_at_k(ranked, g, 1),
        "hit@5": hit_at_k(ranked, g, 5),
        "recall@20": recall_at_k(ranked, g, 20),
        "mrr": reciprocal_rank(ranked, g),
    }


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"hit@1": 0.0, "hit@5": 0.0, "recall@20": 0.0, "mrr": 0.0}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
