"""STaRK-family retrieval metrics (binary Hit@k, Recall@k, MRR) under their own names, so they can be
reported next to the thesis's fractional Hits@k. Works on any hashable items: node ids or triple strings.

One module for both users: the experiment runner (``stark_*`` names next to the thesis metrics) and the
STaRK benchmark adapter (STaRK's own names via ``query_metrics``), spec/stark_4step.md §1.9.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence


def stark_metrics(ranked: Sequence[Hashable], answers: set[Hashable] | Sequence[Hashable]) -> dict[str, float]:
    gold = set(answers)
    out: dict[str, float] = {}
    for k in (1, 5, 10):
        out[f"stark_hit@{k}"] = 1.0 if gold & set(ranked[:k]) else 0.0
    out["stark_recall@20"] = len(gold & set(ranked[:20])) / len(gold) if gold else 0.0
    rr = 0.0
    for i, item in enumerate(ranked, start=1):
        if item in gold:
            rr = 1.0 / i
            break
    out["stark_mrr"] = rr
    return out


def query_metrics(ranked: Sequence[Hashable], gold: Sequence[Hashable]) -> dict[str, float]:
    """STaRK's own names (hit@1, hit@5, recall@20, mrr) for node rankings (the STaRK adapter uses these)."""
    m = stark_metrics(ranked, gold)
    return {"hit@1": m["stark_hit@1"], "hit@5": m["stark_hit@5"], "recall@20": m["stark_recall@20"],
            "mrr": m["stark_mrr"]}


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {"hit@1": 0.0, "hit@5": 0.0, "recall@20": 0.0, "mrr": 0.0}
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
