"""The comparison's statistics (scipy) against hand-computed cases."""

from __future__ import annotations

import pytest

from hublab.evaluation.significance import bootstrap_ci, paired_p_value


def test_paired_randomisation_test_matches_the_hand_computed_exact_p_value():
    # per-question differences d = (1, 1, 1, 0): 2^4 = 16 equally likely sign patterns under H0; the observed mean
    # difference 0.75 is reached only when d1..d3 keep their sign (2 of 16 patterns: d4 = 0 either way), and -0.75
    # likewise, so the two-sided p = 2 * 2/16 = 0.25 (scipy enumerates all 16: exact)
    assert paired_p_value([1, 1, 1, 0], [0, 0, 0, 0]) == pytest.approx(0.25)
    # d = (1, .5, 0, 1, .5): |mean| >= 0.6 only with all four non-zero signs equal: p = 2 * 2/32 = 0.125
    assert paired_p_value([1, 0.5, 0, 1, 1], [0, 0, 0, 0, 0.5]) == pytest.approx(0.125)
    # symmetric and order-free, identical systems are not different at all
    assert paired_p_value([0, 0, 0, 0], [1, 1, 1, 0]) == pytest.approx(0.25)
    assert paired_p_value([0.2, 0.4], [0.2, 0.4]) == 1.0


def test_paired_test_on_a_large_sample_is_seeded_and_small_for_a_clear_difference():
    a = [1.0] * 60 + [0.0] * 40
    b = [1.0] * 30 + [0.0] * 70
    p1, p2 = paired_p_value(a, b), paired_p_value(a, b)
    assert p1 == p2  # fixed seed: the same p-value every run
    assert p1 < 0.001
    with pytest.raises(ValueError):
        paired_p_value([1, 0], [1])


def test_bootstrap_interval_matches_the_hand_computed_percentiles():
    # x = (0, 0, 0, 1): a resample's mean is k/4 with k ~ Binomial(4, 1/4): P(0) = .316, P(1/4) = .422,
    # P(1/2) = .211, P(3/4) = .047, P(1) = .004. Cumulative: .316, .738, .949, .996 -> the 2.5th percentile is 0 and
    # the 97.5th is 3/4.
    assert bootstrap_ci([0, 0, 0, 1]) == pytest.approx((0.0, 0.75))
    # x = (0, 1): means 0, 1/2, 1 with P .25, .5, .25 -> (0, 1)
    assert bootstrap_ci([0, 1]) == pytest.approx((0.0, 1.0))
    assert bootstrap_ci([0.3, 0.3, 0.3]) == (0.3, 0.3)
