"""The results table of ``hublab run``: labelled headline metrics, the LLM counters only where an LLM was called."""

from __future__ import annotations

from hublab.evaluation.names import HITS_AT_10, MAP_AT_10

#: the results table of ``hublab run``: (metric, label, format), the headline at k = 10 first and the output size
_HEADLINE_ROWS = ((HITS_AT_10, "Hits@10", ".4f"), (MAP_AT_10, "MAP@10", ".4f"), ("mrr_at_10_triples", "MRR@10", ".4f"),
                  ("recall_at_10_triples", "Recall@10", ".4f"), ("triples_per_question", "triples per question", ".1f"),
                  ("recall_triples", "Recall (all returned)", ".4f"), ("precision_triples", "Precision", ".4f"),
                  ("runtime", "seconds per question", ".3f"), ("index_build_s", "index build (s)", ".1f"),
                  ("n_errors", "questions with an error", ".0f"), ("n_empty_results", "empty results", ".0f"),
                  ("n_degraded", "degraded answers", ".0f"))
#: shown only where an LLM was called (for an LLM-free pipeline they are all 0)
_LLM_ROWS = (("llm_tokens", "LLM tokens per question", ".0f"), ("llm_cost", "LLM cost (USD)", ".4f"),
             ("n_llm_errors", "LLM errors", ".0f"), ("n_llm_retries", "LLM retries", ".0f"),
             ("n_llm_fallbacks", "LLM fall-backs", ".0f"))


def summary_rows(metrics: dict[str, float]) -> list[tuple[str, str]]:
    """(label, value) of the run's results table: labelled headline metrics, then the LLM counters where an LLM was
    called. Every metric stays in the JSON, the predictions and MLflow."""
    rows = [(label, format(metrics[m], fmt)) for m, label, fmt in _HEADLINE_ROWS if m in metrics]
    if any(metrics.get(m) for m, _, _ in _LLM_ROWS):
        rows += [(label, format(metrics[m], fmt)) for m, label, fmt in _LLM_ROWS if m in metrics]
    return rows
