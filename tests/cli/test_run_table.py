"""``hublab run``'s results table (issue #43): labelled headline metrics at k = 10 first, and the LLM counters only
where an LLM was called (an LLM-free pipeline's are all 0)."""

from __future__ import annotations

from hublab.cli.run_table import summary_rows

LLM_FREE = {"hit_at_10_triples": 0.5, "map_at_10_triples": 0.25, "mrr_at_10_triples": 0.5,
            "recall_at_10_triples": 0.5, "triples_per_question": 20.0, "runtime": 0.12, "n_errors": 0.0,
            "llm_tokens": 0.0, "llm_cost": 0.0, "n_llm_errors": 0.0, "n_llm_retries": 0.0, "n_llm_fallbacks": 0.0}


def test_headline_first_and_labelled():
    rows = summary_rows(LLM_FREE)
    assert [label for label, _ in rows[:5]] == ["Hits@10", "MAP@10", "MRR@10", "Recall@10", "triples per question"]
    assert ("triples per question", "20.0") in rows and ("seconds per question", "0.120") in rows
    assert not any(label.startswith("LLM") for label, _ in rows)
    assert not any("_" in label for label, _ in rows)  # no raw metric names


def test_llm_counters_where_an_llm_was_called():
    rows = dict(summary_rows({**LLM_FREE, "llm_tokens": 812.0, "n_llm_retries": 2.0}))
    assert rows["LLM tokens per question"] == "812" and rows["LLM retries"] == "2" and rows["LLM errors"] == "0"
