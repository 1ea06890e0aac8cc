"""The comparison tables' statistics: :func:`add_statistics` gives each row of the default-vs-tuned comparison its
intervals, its difference from the best row with the paired interval, and its paired test, Holm-corrected across the
table (the primitives are :mod:`hublab.evaluation.significance`'s: one statistics module)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hublab.evaluation import names
from hublab.evaluation.significance import bootstrap_ci, difference, holm, paired_p_value
from hublab.experiment.comparison._dvt_rows import CI_METRICS, TEST_METRIC, groups

if TYPE_CHECKING:
    from hublab.experiment.comparison._dvt_rows import Row


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
