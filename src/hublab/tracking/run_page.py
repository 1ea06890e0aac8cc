"""What a run's MLflow page shows as metrics: at most :data:`MAX_METRICS` headline figures instead of
every aggregate, per-k and per-slice number (a run page opened on ~200 metrics and its Model metrics tab on one-bar
slice charts). Everything else stays with the run, nothing lost: all metrics in the ``metrics.json`` artifact, and
the per-slice figures as the logged table ``metrics_by_slice.json`` (MLflow's table view) beside
``metrics_by_slice.csv`` and the slice charts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: a run page's metric budget
MAX_METRICS = 20
#: retrieval at k = 10 first, then the output size and the full list, time, and the run's health (F1 and the rest:
#: metrics.json)
BASE = ("hit_at_10_triples", "map_at_10_triples", "mrr_at_10_triples", "recall_at_10_triples",
        "triples_per_question", "recall_triples", "precision_triples", "runtime", "index_build_s",
        "n_questions", "n_errors", "n_degraded", "n_empty_results", "failure_share")
#: only where an LLM was called (an LLM-free run would show five zeros)
LLM = ("llm_tokens", "llm_cost", "n_llm_errors", "n_llm_retries", "n_llm_fallbacks")
#: energy per question: the whole session's share when it was measured, else the per-question mean (emissions:
#: metrics.json)
ENERGY = (("session_energy_per_question", "total_energy_consumption"),)


def llm_called(metrics: Mapping[str, Any]) -> bool:
    """An LLM answered or was tried: tokens were counted, or a call failed or fell back."""
    return any(float(metrics.get(k) or 0) > 0 for k in ("llm_tokens", "n_llm_errors", "n_llm_fallbacks",
                                                        "n_llm_retries"))


def headline(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The metrics a run's page lists, in this order; at most :data:`MAX_METRICS`."""
    keys = list(BASE) + (list(LLM) if llm_called(metrics) else [])
    keys += [next((k for k in pair if k in metrics), pair[0]) for pair in ENERGY]
    return {k: metrics[k] for k in keys if k in metrics}


def slice_table(slices: Mapping[str, Mapping[str, Mapping[str, float]]]) -> dict[str, list[Any]]:
    """The per-slice figures as one column-oriented table (``field``, ``value``, then each metric), for
    ``mlflow.log_table``."""
    rows = [{"field": f, "value": str(v), **m} for f, groups in slices.items() for v, m in groups.items()]
    cols = list(dict.fromkeys(k for r in rows for k in r))
    return {c: [r.get(c) for r in rows] for c in cols}
