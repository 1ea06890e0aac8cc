"""Retrieval metric definitions on hand-made cases (thesis §2.6 / spec §7)."""

from __future__ import annotations

import math

import pytest

from hublab.evaluation.retrieval import aggregate, retrieval_metrics
from hublab.evaluation.stark import stark_metrics
from hublab.tracking.carbon import sustainability

A = "(R1:Paper A, venue, R9:ICSA)"
B = "(R2:Paper B, venue, R9:ICSA)"
C = "(R3:Paper C, publication year, L5:2018)"
X = "(R4:Paper D, doi, L6:10.1/x)"


def test_precision_recall_full_list_and_rounding():
    m = retrieval_metrics([A, X, C], [A, B])
    assert m["precision_triples"] == 0.33 and m["recall_triples"] == 0.5
    assert m["f1_triples"] == round(2 * (1 / 3) * 0.5 / (1 / 3 + 0.5), 2)


def test_hits_is_fractional_and_uses_containment():
    m = retrieval_metrics([X, A.lower()], [A, B], k=10)
    assert m["hit_at_10_triples"] == 0.5  # one of two golden found (case-insensitive), not binary 1.0
    assert m["mrr_at_10_triples"] == 0.5


def test_map_divides_by_min_golden_k():
    m = retrieval_metrics([A, X, B], [A, B], k=10)
    assert m["map_at_10_triples"] == round((1 / 1 + 2 / 3) / 2, 3)
    m2 = retrieval_metrics([X, A], [A, B, C], k=1)
    assert m2["map_at_1_triples"] == 0.0 and m2["hit_at_1_triples"] == 0.0


def test_exact_match_is_precision_at_k():
    m = retrieval_metrics([A, X, B, X], [A, B], k=2)
    assert m["exact_match_at_2_triples"] == 0.5 and m["exact_match_triples"] == 0.5


def test_edge_cases_empty_sets():
    assert retrieval_metrics([], [A])["recall_triples"] == 0.0
    assert retrieval_metrics([], [])["precision_triples"] == 1.0
    assert retrieval_metrics([A], [])["map_at_10_triples"] == 0.0


def test_entity_level_uses_subject_and_object():
    m = retrieval_metrics([A], [B])  # share the venue entity R9:ICSA only
    assert m["recall_entities"] == 0.5 and m["precision_entities"] == 0.5


def test_aggregate_skips_missing_explicitly():
    agg = aggregate([{"x": 1.0, "y": None}, {"x": 0.0, "y": float("nan")}, {"x": 0.5, "y": 0.4}])
    assert agg["x"] == 0.5 and agg["y"] == 0.4 and agg["n_y"] == 1.0 and "n_x" not in agg


def test_stark_family_is_binary():
    m = stark_metrics([X, A, B], [A, B])
    assert m["stark_hit_at_1"] == 0.0 and m["stark_hit_at_5"] == 1.0 and m["stark_mrr"] == 0.5
    assert m["stark_recall_at_20"] == 1.0


def test_sustainability_matches_thesis_worked_example():
    """Spec §9 check: HubLink (T) vs the base FiDeLiS and the extremes of Table 10.9."""
    s = sustainability({"FiDeLiS": (0.092840, 0.003056), "HubLink (T)": (0.753905, 0.004187),
                        "lowest": (0.2, 0.000086), "highest": (0.3, 0.009216)})
    h = s["HubLink (T)"]
    assert h["CE_rel"] == pytest.approx(0.005554, abs=1e-6)
    assert h["delta_CE"] == pytest.approx(0.4825, abs=1e-4)
    assert h["n_CE"] == pytest.approx(0.5508, abs=1e-4)
    assert s["FiDeLiS"]["is_base"] == 1.0 and not math.isnan(s["FiDeLiS"]["delta_CE"])


def test_carbon_tracker_reports_session_totals_and_says_estimated(tmp_path):
    from hublab.tracking.carbon import CarbonTracker, rapl_available

    c = CarbonTracker("DEU", output_dir=str(tmp_path))
    c.start("q1")
    sum(i * i for i in range(200_000))
    task = c.stop("q1")
    total = c.close()
    assert task.energy_measured == rapl_available() and total is not None
    assert total.total_energy_consumption >= 0 and total.tracking_duration > 0
