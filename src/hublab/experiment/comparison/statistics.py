"""The comparison tables' statistics beyond one row's interval: the difference of a row from the best row with its
paired bootstrap interval, and Holm's step-down correction of a table's p-values (a table compares many rows with the
best at once: uncorrected, one in twenty equal rows would look different at 0.05); :func:`add_statistics` applies
them, with the intervals and paired tests, to the default-vs-tuned comparison's rows."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from hublab.evaluation import names
from hublab.evaluation.significance import bootstrap_ci, paired_p_value
from hublab.experiment.comparison._dvt_rows import CI_METRICS, TEST_METRIC, groups

if TYPE_CHECKING:
    from hublab.experiment.comparison._dvt_rows import Row

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


def add_statistics(rows: list[Row]) -> None:
    """CIs per row; per (graph, subset) the best row by MAP@10 (ties: Hits@10, then method and config names) and
    every other row's paired p-value against it; every tuned row's paired p-value against its method's default row
    (did tuning change anything beyond noise?), each family corrected by Holm within its table; every row's MAP@10
    difference from the best row with its paired bootstrap interval. Rows of one group must be on the same
    questions in one order."""
    for r in rows:
        r.ci = {m: bootstrap_ci(r.per_question[m]) for m in CI_METRICS}
        # rows from several calls are judged again, together
        r.best, r.p_value, r.p_vs_default, r.p_holm, r.p_vs_default_holm = False, None, None, None, None
        r.diff, r.diff_ci = None, None
    for group in groups(rows).values():
        best = min(group, key=lambda r: (-round(r.metrics[TEST_METRIC], 12), -round(r.metrics[names.HITS_AT_10], 12),
                                         r.method, r.config))
        best.best = True
        best.diff = 0.0
        others = [r for r in group if r is not best]
        for r in others:
            r.p_value = paired_p_value(r.per_question[TEST_METRIC], best.per_question[TEST_METRIC])
            r.diff, r.diff_ci = difference(r.per_question[TEST_METRIC], best.per_question[TEST_METRIC])
        for r, adjusted in zip(others, holm([r.p_value for r in others]), strict=True):
            r.p_holm = adjusted
        defaults = {r.method: r for r in group if r.config == "default"}
        tuned = [r for r in group if r.config == "tuned" and r.method in defaults]
        for r in tuned:
            r.p_vs_default = paired_p_value(r.per_question[TEST_METRIC], defaults[r.method].per_question[TEST_METRIC])
        for r, adjusted in zip(tuned, holm([r.p_vs_default for r in tuned]), strict=True):
            r.p_vs_default_holm = adjusted
