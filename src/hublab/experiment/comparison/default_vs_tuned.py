"""Every LLM-free method with its default and its tuned parameters (``hublab report compare``, DVC stage
``compare``), on GV1 and the GV3 export.

Each method runs twice per graph: its default pipeline and ``pipelines/tuned/<method>.yaml`` (chosen by
``hublab tune-all`` on the 44 reduced-GV1 questions only), both at the same output bound (20 triples per question).
GV1 is reported on all its questions and separately on the questions outside the tuning set (``held_out``: the
tuned parameters never saw them). Every row carries the 95% bootstrap interval of Hits@10 and MAP@10 and the p-value
of the paired randomisation test of its MAP@10 against the best row of its graph and question set
(:mod:`hublab.evaluation.significance`). Runs are the experiment runner's (checkpointed, resumable, one MLflow run
each); this module only tabulates them, draws one chart and logs the comparison to MLflow. Data-facing names keep
the issue's word: the MLflow experiment ``compare-fair``, the parent's key ``fair-bound<n>``, ``params.yaml: fair``.

This module plans and runs the variants and writes every output; it is the comparison's one door. The parts live
beside it: the rows and their grouping (``_dvt_rows``), the statistics (:mod:`.statistics`), the tables
(``_dvt_tables``), the chart (``_dvt_chart``) and the MLflow runs (``_dvt_mlflow``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.config import Settings
from hublab.evaluation import names
from hublab.experiment.comparison._dvt_chart import chart
from hublab.experiment.comparison._dvt_mlflow import COMPUTED, log_mlflow
from hublab.experiment.comparison._dvt_rows import (
    BOUND,
    CI_METRICS,
    DIFF,
    EXPERIMENT,
    GRAPHS,
    METRICS,
    Entry,
    Row,
    rows_for,
    tuning_questions,
)
from hublab.experiment.comparison._dvt_tables import csv_rows, latex, markdown, plot_data
from hublab.experiment.comparison.statistics import add_statistics
from hublab.pipeline.config import PipelineConfig, load_pipeline
from hublab.reports import tables
from hublab.reports.thesis import Thesis
from hublab.retrievers.registry import default_pipelines

#: what other code imports from here (the parts' own modules are private)
__all__ = ["BOUND", "CI_METRICS", "COMPUTED", "DIFF", "EXPERIMENT", "GRAPHS", "METRICS", "Entry", "Row",
           "changed_params", "chart", "csv_rows", "entries", "latex", "log_mlflow", "markdown", "plot_data",
           "run_comparison", "tuning_questions", "write_all"]


def entries(root: Path, pipelines: list[Path] | None = None, tuned_dir: Path | None = None) -> list[Entry]:
    """Each default LLM-free pipeline and, where it exists, its tuned file (``<tuned_dir>/<method>.yaml``)."""
    tuned_dir = tuned_dir or root / "pipelines" / "tuned"

    def shown(path: Path) -> Path:  # project-relative in every table (no machine-specific paths in git)
        try:
            return Path(path).resolve().relative_to(Path(root).resolve())
        except ValueError:
            return Path(path)

    out: list[Entry] = []
    for path in pipelines or default_pipelines(root):
        cfg = load_pipeline(path)
        out.append(Entry(cfg.retriever_type, "default", shown(path), cfg))
        tuned = tuned_dir / f"{cfg.retriever_type}.yaml"
        if tuned.exists():
            tcfg = load_pipeline(tuned)
            out.append(Entry(cfg.retriever_type, "tuned", shown(tuned), tcfg, str(tcfg.tuned.get("study", "")),
                             changed_params(cfg, tcfg)))
    return out


def changed_params(default: PipelineConfig, tuned: PipelineConfig) -> str:
    """``name=value; …`` of the retriever parameters ``tuned`` sets otherwise than ``default`` (sorted by name), each
    side with the method's own defaults filled in (a value spelled out equal to its default is no change), the
    comparison's own output bound left out (every row runs at it): what tells the two rows of a method apart."""
    from hublab.pipeline.config import flatten
    from hublab.retrievers.registry import get_retriever_class

    declared = get_retriever_class(default.retriever_type).declared_params()
    base = {k: spec[1] for k, spec in declared.items()}
    a = flatten({**base, **default.retriever_params})
    b = flatten({**base, **tuned.retriever_params})
    keys = sorted((set(a) | set(b)) - {"max_output_triples"})

    def shown(v: Any) -> str:  # a tuned float to 4 significant digits: 0.0768, not 0.07684404861238411
        return f"{v:.4g}" if isinstance(v, float) else str(v)

    return "; ".join(f"{k}={shown(b.get(k))}" for k in keys if a.get(k) != b.get(k))


def _thesis_map(thesis: Thesis, method: str, graph: str) -> float | None:
    v = thesis.number(method, graph).get(names.MAP_AT_10)
    return None if v is None else float(v)


def run_comparison(st: Settings, items: list[Entry], *, graphs=GRAPHS, bound: int = BOUND, limit: int | None = None,
                   experiment: str = EXPERIMENT, progress: bool = False) -> list[Row]:
    """Run (or resume) every entry on every graph at the output bound; return the rows with their statistics."""
    import copy

    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    held = tuning_questions(st) if any(g == "gv1" for g, _ in graphs) else None
    thesis = Thesis.load(st)
    rows: list[Row] = []
    for entry in items:
        for graph, dataset in graphs:
            cfg = copy.deepcopy(entry.cfg)
            cfg.retriever_params["max_output_triples"] = int(bound)
            s = run_experiment(RunRequest(cfg, graph, dataset, st, limit=limit, experiment=experiment,
                                          run_name=f"{cfg.name}·{graph}", track_carbon=False, progress=progress,
                                          trace=False))
            rows += rows_for(entry, graph, s.per_question, held if graph == "gv1" else None, s.run_id or "",
                             _thesis_map(thesis, entry.method, graph), failure=(s.failed, s.failure_reason))
    add_statistics(rows)
    return rows


def write_all(st: Settings, rows: list[Row], out_dir: Path, *, bound: int = BOUND, log: bool = True) -> dict[str, Any]:
    """methods.csv, methods.md, methods.tex (LaTeX), the chart (PNG, SVG, PDF) and the plot data under ``out_dir``;
    the MLflow comparison run."""
    csv_path, md = tables.write_report(out_dir, "methods", markdown(rows, bound=bound), csv_rows(rows))
    tex = out_dir / "methods.tex"
    write_text_atomic(tex, latex(rows, bound=bound))
    figs = chart(rows, out_dir, bound=bound)
    data = plot_data(rows, out_dir)
    parent = log_mlflow(st.root, rows, [csv_path, md, tex, *figs], bound=bound).parent if log else ""
    return {"csv": csv_path, "md": md, "tex": tex, "figures": figs, "plot_data": data, "mlflow_parent": parent}
