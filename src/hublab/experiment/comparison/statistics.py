"""The comparison tables' statistics beyond one row's interval: the difference of a row from the best row with its
paired bootstrap interval, and Holm's step-down correction of a table's p-values (a table compares many rows with the
best at once: uncorrected, one in twenty equal rows would look different at 0.05)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from hublab.evaluation.significance import bootstrap_ci

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
