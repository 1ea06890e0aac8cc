"""The metric naming scheme (hublab.evaluation.names): every name a producer emits is a valid MLflow key as it
is, the thesis's spelling is read as ours, and nothing renames metrics on the way to MLflow."""

from __future__ import annotations

import csv

import pytest

from hublab.evaluation import names
from hublab.evaluation.retrieval import aggregate, retrieval_metrics
from hublab.evaluation.stark import mean_metrics, query_metrics
from hublab.tracking.mlflow_log import finite_metrics

A = "(R1:Paper A, venue, R9:ICSA)"
B = "(R2:Paper B, venue, R9:ICSA)"


def test_every_retrieval_name_comes_from_the_scheme():
    m = retrieval_metrics([A], [A, B], stark=True)
    assert list(m)[:26] == names.retrieval_names()
    assert [k for k in m if k.startswith("stark_")] == ["stark_hit_at_1", "stark_hit_at_5", "stark_hit_at_10",
                                                        "stark_recall_at_20", "stark_mrr"]
    assert all(names.is_valid(k) for k in m), [k for k in m if not names.is_valid(k)]
    assert set(names.HEADLINE) - set(m) == {"triples_per_question", "runtime", "llm_tokens", "n_questions",
                                             "n_errors"}  # the run-level ones come from the runner
    assert names.count("faithfulness") in aggregate([{"faithfulness": None}, {"faithfulness": 1.0}])


def test_stark_own_names():
    assert set(query_metrics([1, 2], [2])) == set(names.STARK_OWN) == {"hit_at_1", "hit_at_5", "recall_at_20", "mrr"}
    assert set(mean_metrics([])) == set(names.STARK_OWN)


def test_mlflow_gets_the_names_unchanged_and_refuses_others():
    m = {"hit_at_10_triples": 0.5, "recall_triples/by_hops/2": 0.1, "n_x": 3, "skip": float("nan")}
    assert finite_metrics(m) == {"hit_at_10_triples": 0.5, "recall_triples/by_hops/2": 0.1, "n_x": 3.0}
    for bad in ("hit@10_triples", "factual_correctness(mode=f1)", "a//b", "/abs", "x=1"):
        with pytest.raises(ValueError, match="naming scheme"):
            finite_metrics({bad: 1.0})


def test_slice_values_become_valid_segments():
    assert names.slice_metric(names.RECALL, "hops", 2) == "recall_triples/by_hops/2"
    for value in ("a/b", "..", "x@y (z)", "", "Größe"):
        assert names.is_valid(names.slice_metric(names.RECALL, "use_case", value)), value


def test_thesis_spelling_round_trips(shared):
    """Every metric column of the thesis's published files maps onto a valid name of ours and back."""
    files = [shared / "reference/predictions/hublink_traverse_gv1.csv",
             shared / "reference/thesis_results/final_comparison_gv1.csv"]
    seen = set()
    for f in files:
        with f.open(newline="") as fh:
            header = next(csv.reader(fh))
        for col in header:
            ours = names.from_thesis(col)
            assert names.thesis_column(ours) == col
            if "@" in col or "(mode=" in col:
                assert names.is_valid(ours), (col, ours)
                seen.add(ours)
    assert {"hit_at_10_triples", "map_at_10_entities", "exact_match_at_10_triples",
            "factual_correctness_mode_f1"} <= seen
    assert set(names.retrieval_names()) <= seen | {c for c in names.retrieval_names() if "_at_" not in c}
