"""A run's MLflow page lists at most 20 metrics (issue #44, item 2), whatever the run logged: an LLM-free run has no
LLM counters on it, an LLM run has its tokens, cost and errors, a run with measured energy its per-question share."""

from __future__ import annotations

from hublab.evaluation.retrieval import retrieval_metrics
from hublab.tracking.run_page import BASE, LLM, MAX_METRICS, headline, slice_table


def _all_metrics(**extra: float) -> dict[str, float]:
    m = dict(retrieval_metrics(["a", "b"], ["a"], k=10))
    m.update({k: 1.0 for k in BASE})
    m.update({"stark_hit_at_1": 1.0, "bleu_score": 0.1, "rouge_L_f1": 0.2, "emissions": 1e-7,
              "total_energy_consumption": 1e-6, "llm_tokens": 0.0, "llm_cost": 0.0, "n_llm_errors": 0.0,
              "n_llm_fallbacks": 0.0, "recall_triples/by_hops/2": 0.5})
    m.update(extra)
    return m


def test_an_llm_free_run_shows_its_headline_and_no_llm_counters():
    m = _all_metrics()
    page = headline(m)
    assert len(m) > 2 * MAX_METRICS and len(page) <= MAX_METRICS
    assert list(page)[:4] == ["hit_at_10_triples", "map_at_10_triples", "mrr_at_10_triples", "recall_at_10_triples"]
    assert not set(LLM) & set(page) and "stark_hit_at_1" not in page and "recall_triples/by_hops/2" not in page
    assert "total_energy_consumption" in page and "emissions" not in page


def test_an_llm_run_with_measured_energy_stays_within_twenty():
    m = _all_metrics(llm_tokens=1200.0, llm_cost=0.01, n_llm_retries=3.0, session_energy_per_question=2e-6,
                     session_emissions_per_question=3e-7)
    page = headline(m)
    assert len(page) == MAX_METRICS and set(LLM) <= set(page)
    assert "session_energy_per_question" in page and "total_energy_consumption" not in page


def test_the_slice_table_is_one_row_per_slice():
    t = slice_table({"hops": {"1": {"recall_triples": 1.0}, "2": {"recall_triples": 0.5}},
                     "use_case": {"3": {"recall_triples": 0.0}}})
    assert t == {"field": ["hops", "hops", "use_case"], "value": ["1", "2", "3"], "recall_triples": [1.0, 0.5, 0.0]}
