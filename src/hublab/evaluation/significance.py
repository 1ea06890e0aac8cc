"""Uncertainty of per-question metrics: bootstrap confidence intervals and paired randomisation tests (scipy).

* :func:`bootstrap_ci`: the 95% percentile bootstrap interval of the mean over questions
  (``scipy.stats.bootstrap``, 10,000 resamples, fixed seed).
* :func:`paired_p_value`: the paired randomisation test (Fisher's sign-flip permutation test over questions, as
  ranx's and ir-measures' "permutation"/"randomisation" test) of the mean difference of two systems on the same
  questions (``scipy.stats.permutation_test`` with ``permutation_type="samples"``: each question's two scores are
  swapped or not; exact when 2^n <= the number of resamples, else 10,000 random relabellings), two-sided.
* :func:`difference`: a row's mean difference from another over the same questions, with its paired interval.
* :func:`holm`: Holm's step-down correction of one table's p-values (a table compares many rows with the best at
  once: uncorrected, one in twenty equal rows would look different at 0.05).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

N_RESAMPLES = 10_000
SEED = 0
CONFIDENCE = 0.95
ALPHA = 0.05
TEST_NAME = ("paired randomisation test (sign-flip permutation over questions, scipy.stats.permutation_test, "
             f"{N_RESAMPLES:,} resamples or exact, two-sided, seed {SEED})")


def _mean(x: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(x, axis=axis)


def bootstrap_ci(values: Sequence[float], *, n_resamples: int = N_RESAMPLES, seed: int = SEED,
                 confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(low, high) of the percentile bootstrap interval of the mean; a constant sample gives (v, v)."""
    from scipy.stats import bootstrap

    x = np.asarray(values, dtype=float)
    if x.size == 0:
        return float("nan"), float("nan")
    if np.all(x == x[0]):  # no spread: scipy would warn about a degenerate distribution
        return float(x[0]), float(x[0])
    res = bootstrap((x,), _mean, n_resamples=n_resamples, confidence_level=confidence, method="percentile",
                    vectorized=True, rng=np.random.default_rng(seed))
    return float(res.confidence_interval.low), float(res.confidence_interval.high)


def _mean_difference(a: np.ndarray, b: np.ndarray, axis: int = -1) -> np.ndarray:
    return np.mean(a, axis=axis) - np.mean(b, axis=axis)


def paired_p_value(a: Sequence[float], b: Sequence[float], *, n_resamples: int = N_RESAMPLES,
                   seed: int = SEED) -> float:
    """Two-sided p-value of mean(a) - mean(b) under the paired randomisation test; 1.0 for identical scores."""
    from scipy.stats import permutation_test

    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
    if x.size == 0 or np.array_equal(x, y):
        return 1.0
    res = permutation_test((x, y), _mean_difference, permutation_type="samples", vectorized=True,
                           n_resamples=n_resamples, alternative="two-sided", rng=np.random.default_rng(seed))
    return float(res.pvalue)


#: how the p-values of one table are corrected, as the captions say it
CORRECTION = "Holm's step-down correction across the rows of each table"


def difference(a: Sequence[float], b: Sequence[float]) -> tuple[float, tuple[float, float]]:
    """mean(a) - mean(b) over the same questions and its 95% paired bootstrap interval (the percentile bootstrap
    of the per-question differences: the questions are resampled, each keeping both systems' scores)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.shape != y.shape:
        raise ValueError(f"paired samples differ in length: {x.size} vs {y.size}")
    d = x - y
    return float(np.mean(d)) if d.size else float("nan"), bootstrap_ci(d)


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-adjusted p-values, in the input's order: the i-th smallest of m is multiplied by m - i + 1, made
    monotone along the sorted order, capped at 1 (Holm 1979; the family-wise error rate stays at alpha)."""
    p = np.asarray(p_values, dtype=float)
    m = p.size
    if m == 0:
        return []
    order = np.argsort(p, kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.empty(m)
    adjusted[order] = np.maximum.accumulate(scaled)
    return [float(v) for v in adjusted]
