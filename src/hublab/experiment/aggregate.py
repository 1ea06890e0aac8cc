"""Per-question records → run metrics: macro means of the retrieval/generation metrics, operational means,
degradation counts, and the thesis's slices (Tables 10.2–10.6)."""

from __future__ import annotations

import math
from typing import Any

SLICE_FIELDS = ("retrieval_operation", "use_case", "hops", "semi_typed")


def _retrieval_metrics(retrieved: list[str], golden: list[str], k: int) -> dict[str, float]:
    from hublab.evaluation.retrieval import retrieval_metrics

    return retrieval_metrics(retrieved, golden, k=k, stark=True)


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, float]:
    from hublab.evaluation.retrieval import aggregate

    return aggregate(rows)


def _metric_cols(rec: dict[str, Any]) -> dict[str, Any]:
    return dict(rec.get("metrics", {}))


def aggregate_records(records: list[dict[str, Any]]) -> dict[str, float]:
    """Macro means of retrieval + generation metrics and the operational means (runtime, tokens, carbon)."""
    rows = [_metric_cols(r) for r in records]
    agg = _aggregate(rows)
    for col in ("runtime", "llm_tokens", "llm_prompt_tokens", "llm_completion_tokens", "emissions",
                "total_energy_consumption", "cpu_energy_consumption", "gpu_energy_consumption",
                "ram_energy_consumption"):
        vals = [r.get(col) for r in records if isinstance(r.get(col), int | float) and math.isfinite(r.get(col))]
        if vals:
            agg[col] = sum(vals) / len(vals)
    agg["n_questions"] = float(len(records))
    agg["triples_per_question"] = (sum(len(r.get("retrieved_context") or []) for r in records) / len(records)
                                   if records else 0.0)
    agg["n_errors"] = float(sum(1 for r in records if r.get("error")))
    agg["n_empty_results"] = float(sum(1 for r in records if not r.get("retrieved_context")))
    for col in ("n_llm_errors", "n_llm_retries", "n_llm_fallbacks"):
        agg[col] = float(sum(int(r.get(col) or 0) for r in records))
    agg["llm_cost"] = float(sum(float(r.get("llm_cost") or 0.0) for r in records))
    agg["n_timeouts"] = float(sum(1 for r in records if r.get("timed_out")))
    agg["n_degraded"] = float(sum(1 for r in records if not r.get("error") and is_degraded(r)))
    agg["failure_share"] = (agg["n_errors"] + agg["n_degraded"]) / len(records) if records else 0.0
    return agg


def is_degraded(rec: dict[str, Any]) -> bool:
    """A question answered, but not the way the config says: an LLM call failed, a step fell back to its
    LLM-free form, or the question went over its time budget."""
    return bool(rec.get("n_llm_errors") or rec.get("n_llm_fallbacks") or rec.get("timed_out"))


def slice_metrics(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """{field: {value: {metric: mean}}} for the thesis's breakdowns (Tables 10.2-10.6)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for f in SLICE_FIELDS:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in records:
            v = r.get("qa", {}).get(f)
            if v is None:
                continue
            groups.setdefault(str(v), []).append(_metric_cols(r))
        if groups:
            out[f] = {v: _aggregate(rows) for v, rows in sorted(groups.items())}
    return out
