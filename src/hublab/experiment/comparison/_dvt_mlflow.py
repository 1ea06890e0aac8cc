"""The default-vs-tuned comparison in MLflow: one parent run, one child per row, and the shared runs-table view
that shows its headline columns. The tracking layer's MLflow imports load only when a comparison is logged."""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING

from hublab.evaluation import names
from hublab.evaluation.significance import CORRECTION, TEST_NAME
from hublab.experiment.comparison._dvt_rows import BOUND, CI_METRICS, DIFF, EXPERIMENT, ROUND, TUNING_SET, Row, title
from hublab.experiment.comparison._dvt_tables import diff_text, p_vs_best_text
from hublab.experiment.comparison.display import display_name

if TYPE_CHECKING:  # the tracking layer's MLflow imports load when a comparison is logged
    from hublab.tracking.comparison_runs import ChildRun, Logged

#: the runs-table columns of the comparison's shared view (the UI shows no metric column by default)
VIEW_COLUMNS = (names.MAP_AT_10, DIFF, names.HITS_AT_10, "triples_per_question", "thesis_map_at_10_triples")
#: the view's text columns (child tags): the difference from the best with its interval, the corrected p-value, and
#: what tuning changed; after the metrics (MLflow keeps its metric and tag column groups apart)
VIEW_TAGS = ("diff_95ci", "p_vs_best", "changed_params")
GROUP_TAG = "question_set"  # the view groups the children by graph and question set, never one ranked list
#: widths (px) that show every header and run name whole and the difference from the best within 1,400 px beside
#: MLflow's assistant panel (measured on MLflow 3.17's runs table: tests/platform/test_mlflow_ui.py)
VIEW = {"tag_columns": VIEW_TAGS, "group_by_tag": GROUP_TAG,
        "widths": {"run_name": 230, names.MAP_AT_10: 135, DIFF: 175, names.HITS_AT_10: 135, "triples_per_question": 155,
                   "thesis_map_at_10_triples": 185, "diff_95ci": 190, "p_vs_best": 100, "changed_params": 320}}
COMPUTED = "computed by hublab report compare (dvc repro compare)"


def _child(r: Row) -> ChildRun:
    """A row's child run: its rounded metrics, CI ends and p-values, and the tags the shared view shows."""
    from hublab.tracking.comparison_runs import ChildRun

    metrics = {m: round(v, ROUND) for m, v in r.metrics.items() if math.isfinite(v)}
    for m in CI_METRICS:
        metrics[f"{m}_ci_low"], metrics[f"{m}_ci_high"] = (round(x, ROUND) for x in r.ci[m])
    if r.diff is not None:
        metrics[DIFF] = round(r.diff, ROUND)
    if r.diff_ci is not None:
        metrics[f"{DIFF}_ci_low"], metrics[f"{DIFF}_ci_high"] = (round(x, ROUND) for x in r.diff_ci)
    for key, v in (("p_value_vs_best", r.p_value), ("p_value_vs_best_holm", r.p_holm),
                   ("p_value_tuned_vs_default", r.p_vs_default),
                   ("p_value_tuned_vs_default_holm", r.p_vs_default_holm)):
        if v is not None:
            metrics[key] = round(v, ROUND)
    if r.thesis_map is not None:
        metrics["thesis_map_at_10_triples"] = round(r.thesis_map, ROUND)
    tags = {"config": r.config, "method": r.method, "hublab.method_name": display_name(r.method),
            "graph": r.graph, "subset": r.subset, GROUP_TAG: title(r.graph, r.subset, r.n_questions),
            "diff_95ci": "best" if r.best else diff_text(r), "p_vs_best": p_vs_best_text(r).replace("**", ""),
            "changed_params": r.changed or ("(default)" if r.config == "default" else "(none)"),
            "hublab.pipeline": r.pipeline, "hublab.method_run_id": r.mlflow_run, "best": str(r.best)}
    if r.study:
        tags["optuna_study"] = r.study
    if r.status:
        tags["hublab.status"] = r.status
    name = f"{display_name(r.method)} · {r.config} · {r.graph}" + ("" if r.subset == "all" else f" · {r.subset}")
    return ChildRun(name, metrics, tags)


def log_mlflow(root: Path, rows: list[Row], files: list[Path], *, bound: int = BOUND,
               experiment: str = EXPERIMENT, source: str = COMPUTED) -> Logged:
    """One parent run (``hublab.role=comparison``, the table, CSV and chart as artifacts) with one child per
    method, configuration, graph and question set (tags ``config``, ``method``, ``graph``, ``subset``, the tuned
    child's ``optuna_study``; rounded metrics and CI ends; a link to the full evaluation run), a shared runs-table
    view with the headline columns (``VIEW_COLUMNS``), and the parent's ``hublab.source`` saying where the numbers
    come from (``source``; a name suffix unless computed). Rerunning updates the same parent and children."""
    from hublab.tracking.comparison_runs import log_comparison_runs

    children = {f"{r.method}/{r.config}/{r.graph}/{r.subset}": _child(r) for r in rows}
    params = {"bound": str(bound), "tuning_set": TUNING_SET, "test": TEST_NAME[:500], "correction": CORRECTION,
              "ci": "95% percentile bootstrap, 10000 resamples, seed 0"}
    name = f"fair comparison (≤{bound} triples/question)" + ("" if source == COMPUTED else f" · {source}")
    return log_comparison_runs(root, experiment, key=f"fair-bound{bound}", name=name, params=params,
                               children=children, files=files, tags={"hublab.source": source},
                               view_columns=VIEW_COLUMNS, view=VIEW)
