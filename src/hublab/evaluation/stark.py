"""STaRK-family retrieval metrics (binary Hit@k, Recall@k, MRR) under their own names (``stark_hit_at_1`` …),
so they can be reported next to the thesis's fractional Hits@k. Works on any hashable items: node ids or triple strings.

One module for both users: the experiment runner (``stark_*`` names next to the thesis metrics) and the
STaRK benchmark adapter (STaRK's own names via ``query_metrics``), spec/stark_4step.md §1.9.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from hublab.evaluation.names import STARK_HIT_KS, STARK_OWN, STARK_RECALL_K, stark


def stark_metrics(ranked: Sequence[Hashable], answers: set[Hashable] | Sequence[Hashable]) -> dict[str, float]:
    gold = set(answers)
    out: dict[str, float] = {}
    for k in STARK_HIT_KS:
        out[stark("hit", k)] = 1.0 if gold & set(ranked[:k]) else 0.0
    out[stark("recall", STARK_RECALL_K)] = (len(gold & set(ranked[:STARK_RECALL_K])) / len(gold)
                                            if gold else 0.0)
    rr = 0.0
    for i, item in enumerate(ranked, start=1):
        if item in gold:
            rr = 1.0 / i
            break
    out[stark("mrr")] = rr
    return out


def query_metrics(ranked: Sequence[Hashable], gold: Sequence[Hashable]) -> dict[str, float]:
    """STaRK's own four metrics without the prefix (``hit_at_1``, ``hit_at_5``, ``recall_at_20``, ``mrr``) for
    node rankings (the STaRK adapter uses these)."""
    m = stark_metrics(ranked, gold)
    return {name: m[f"stark_{name}"] for name in STARK_OWN}


def mean_metrics(rows: list[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return dict.fromkeys(STARK_OWN, 0.0)
    return {k: sum(r[k] for r in rows) / len(rows) for k in rows[0]}
