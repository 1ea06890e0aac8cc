"""Every LLM-free method with its default and its tuned parameters (issue #22; ``hublab report compare``, DVC stage
``compare``), on GV1 and the GV3 export.

Each method runs twice per graph: its default pipeline and ``pipelines/tuned/<method>.yaml`` (chosen by
``hublab tune-all`` on the 44 reduced-GV1 questions only), both at the same output bound (20 triples per question).
GV1 is reported on all its questions and separately on the questions outside the tuning set (``held_out``: the
tuned parameters never saw them). Every row carries the 95% bootstrap interval of Hits@10 and MAP@10 and the p-value
of the paired randomisation test of its MAP@10 against the best row of its graph and question set
(:mod:`hublab.evaluation.significance`). Runs are the experiment runner's (checkpointed, resumable, one MLflow run
each); this module only tabulates them, draws one chart and logs the comparison to MLflow. Data-facing names keep
the issue's word: the MLflow experiment ``compare-fair``, the parent's key ``fair-bound<n>``, ``params.yaml: fair``.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hublab.config import ORKG_GRAPH, Settings
from hublab.evaluation import names
from hublab.evaluation.significance import ALPHA, TEST_NAME, bootstrap_ci, paired_p_value
from hublab.experiment.comparison import tables
from hublab.experiment.comparison.thesis import Thesis
from hublab.pipeline.config import PipelineConfig, load_pipeline
from hublab.retrievers.registry import default_pipelines

if TYPE_CHECKING:  # the tracking layer's MLflow imports load when a comparison is logged
    from hublab.tracking.comparison_runs import Logged

GRAPHS = (("gv1", "gv1"), (ORKG_GRAPH, ORKG_GRAPH))  # (graph, dataset)
TUNING_SET = "reduced_gv1"
TUNING_N = 44  # questions in the tuning set (GV1 also holds one of them twice; neither copy counts as held out)
BOUND = 20
CI_METRICS = (names.HITS_AT_10, names.MAP_AT_10)
TEST_METRIC = names.MAP_AT_10
METRICS = (names.HITS_AT_10, names.MAP_AT_10, names.MRR_AT_10, names.RECALL_AT_10, names.RECALL,
           names.PRECISION, names.F1, names.TRIPLES_PER_QUESTION)
EXPERIMENT = "compare-fair"
ROUND = 4  # digits of every value written (no float noise in tables or MLflow)
PLOT_FIELDS = ("method_config", TEST_METRIC, names.HITS_AT_10)  # the DVC plots' data (dvc.yaml: compare.plots)


@dataclass
class Entry:
    method: str
    config: str  # default | tuned
    pipeline: Path
    cfg: PipelineConfig
    study: str = ""


@dataclass
class Row:
    method: str
    graph: str
    subset: str  # all | held_out
    config: str
    pipeline: str
    n_questions: int
    metrics: dict[str, float]
    per_question: dict[str, list[float]] = field(repr=False, default_factory=dict)
    ci: dict[str, tuple[float, float]] = field(default_factory=dict)
    p_value: float | None = None
    p_vs_default: float | None = None  # tuned rows: the same test against the method's default row
    best: bool = False
    thesis_map: float | None = None
    study: str = ""
    mlflow_run: str = ""


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
            out.append(Entry(cfg.retriever_type, "tuned", shown(tuned), tcfg, str(tcfg.tuned.get("study", ""))))
    return out


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text.strip().lower())


def tuning_questions(st: Settings) -> tuple[set[str], set[str]]:
    """uids and normalised wordings of the tuning set: a question is held out only if it matches neither (the
    dataset holds one question twice under two uids)."""
    from hublab.datasets.catalog import load_dataset

    pairs = load_dataset(st, TUNING_SET)
    return {p.uid for p in pairs}, {_norm(p.question) for p in pairs}


def _thesis_map(thesis: Thesis, method: str, graph: str) -> float | None:
    v = thesis.number(method, graph).get(names.MAP_AT_10)
    return None if v is None else float(v)


def _rows_for(entry: Entry, graph: str, records: list[dict[str, Any]], held_out: tuple[set[str], set[str]] | None,
              run_id: str, thesis: float | None) -> list[Row]:
    subsets = [("all", records)]
    if held_out is not None:
        uids, texts = held_out
        subsets.append(("held_out", [r for r in records if r["uid"] not in uids
                                     and _norm(str(r.get("question", ""))) not in texts]))
    rows = []
    for subset, recs in subsets:
        per_q = {m: [float(r["metrics"].get(m) or 0.0) for r in recs] for m in METRICS if m !=
                 names.TRIPLES_PER_QUESTION}
        means = {m: float(np.mean(v)) if v else float("nan") for m, v in per_q.items()}
        means[names.TRIPLES_PER_QUESTION] = float(np.mean([len(r.get("retrieved_context") or []) for r in recs])) \
            if recs else float("nan")
        rows.append(Row(entry.method, graph, subset, entry.config, entry.pipeline.as_posix(), len(recs), means,
                        {m: per_q[m] for m in CI_METRICS}, thesis_map=thesis, study=entry.study, mlflow_run=run_id))
    return rows


def _groups(rows: list[Row]) -> dict[tuple[str, str], list[Row]]:
    """(graph, question set) → its rows, in the order the groups first appear."""
    groups: dict[tuple[str, str], list[Row]] = {}
    for r in rows:
        groups.setdefault((r.graph, r.subset), []).append(r)
    return groups


def add_statistics(rows: list[Row]) -> None:
    """CIs per row; per (graph, subset) the best row by MAP@10 (ties: Hits@10, then method and config names) and
    every other row's paired p-value against it; every tuned row's paired p-value against its method's default row
    (did tuning change anything beyond noise?). Rows of one group must be on the same questions in one order."""
    for r in rows:
        r.ci = {m: bootstrap_ci(r.per_question[m]) for m in CI_METRICS}
        r.best, r.p_value, r.p_vs_default = False, None, None  # rows from several calls are judged again, together
    for group in _groups(rows).values():
        best = min(group, key=lambda r: (-round(r.metrics[TEST_METRIC], 12), -round(r.metrics[names.HITS_AT_10], 12),
                                         r.method, r.config))
        best.best = True
        for r in group:
            r.p_value = None if r is best else paired_p_value(r.per_question[TEST_METRIC],
                                                              best.per_question[TEST_METRIC])
        defaults = {r.method: r for r in group if r.config == "default"}
        for r in group:
            if r.config == "tuned" and r.method in defaults:
                base = defaults[r.method].per_question[TEST_METRIC]
                r.p_vs_default = paired_p_value(r.per_question[TEST_METRIC], base)


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
            rows += _rows_for(entry, graph, s.per_question, held if graph == "gv1" else None, s.run_id or "",
                              _thesis_map(thesis, entry.method, graph))
    add_statistics(rows)
    return rows


# ------------------------------------------------------------------ outputs

def _r(v: float | None) -> float | str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), ROUND)


def csv_rows(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d: dict[str, Any] = {"method": r.method, "graph": r.graph, "subset": r.subset, "config": r.config,
                             "n_questions": r.n_questions}
        d.update({m: _r(r.metrics.get(m)) for m in METRICS})
        for m in CI_METRICS:
            lo, hi = r.ci.get(m, (None, None))
            d[f"{m}_ci_low"], d[f"{m}_ci_high"] = _r(lo), _r(hi)
        d["p_value_vs_best"] = "" if r.p_value is None else round(r.p_value, ROUND)
        d["best"] = r.best
        d["not_significant_vs_best"] = bool(r.p_value is not None and r.p_value >= ALPHA)
        d["p_value_tuned_vs_default"] = "" if r.p_vs_default is None else round(r.p_vs_default, ROUND)
        d["thesis_map_at_10_triples"] = _r(r.thesis_map)
        d["pipeline"], d["study"], d["mlflow_run"] = r.pipeline, r.study, r.mlflow_run
        out.append(d)
    return out


def _order(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (-round(r.metrics[TEST_METRIC], 12), r.method, r.config))


GROUP_TITLE = {("gv1", "all"): "GV1 (rebuilt), all questions",
               ("gv1", "held_out"): "GV1 (rebuilt), questions outside the tuning set",
               (ORKG_GRAPH, "all"): "GV3 (ORKG export), all questions"}


def _title(graph: str, subset: str, n: int) -> str:
    return GROUP_TITLE.get((graph, subset), f"{graph}, {subset}") + f" ({n})"


def _with_ci(metric: str) -> tables.Column:
    def cell(r: Row) -> str:
        lo, hi = r.ci[metric]
        return f"{r.metrics[metric]:.3f} [{lo:.3f}, {hi:.3f}]"

    return tables.Column(f"{names.LABELS[metric]} [95% CI]", cell)


def _p_vs_best(r: Row) -> str:
    return "**best**" if r.best else (f"{r.p_value:.4f} ≈" if (r.p_value or 0) >= ALPHA else f"{r.p_value:.4f}")


def _p_vs_default(r: Row) -> str:
    if r.p_vs_default is None:
        return tables.MISSING
    return f"{r.p_vs_default:.4f}" + (" ≈" if r.p_vs_default >= ALPHA else "")


#: the Markdown table of one graph and question set
TABLE = [tables.Column("method", lambda r: r.method), tables.Column("config", lambda r: r.config),
         _with_ci(names.HITS_AT_10), _with_ci(TEST_METRIC),
         tables.Column("MRR@10", lambda r: f"{r.metrics[names.MRR_AT_10]:.3f}"),
         tables.Column("Recall@10", lambda r: f"{r.metrics[names.RECALL_AT_10]:.3f}"),
         tables.Column("triples/q", lambda r: f"{r.metrics[names.TRIPLES_PER_QUESTION]:.1f}"),
         tables.Column("p vs best", _p_vs_best), tables.Column("p tuned vs default", _p_vs_default),
         tables.Column("thesis MAP@10", lambda r: tables.MISSING if r.thesis_map is None else f"{r.thesis_map:.3f}")]


def markdown(rows: list[Row], *, bound: int = BOUND) -> str:
    """One table per graph and question set, best MAP@10 first; ≈ marks a row whose MAP@10 is not significantly
    different from the best row's (p >= 0.05)."""
    lines = [f"Every LLM-free method at most {bound} triples per question, with its default parameters and with the "
             f"parameters `hublab tune-all` chose on the {TUNING_N} tuning questions "
             f"(`{TUNING_SET}`, the same TPE budget for every method). [a, b]: 95% bootstrap interval over questions "
             f"(10,000 resamples, seed 0). p: {TEST_NAME} of the row's per-question MAP@10 against the best row of "
             f"the table; p tuned vs default: the same test of a tuned row against its method's default row. "
             f"**best** = highest MAP@10; ≈ = not significantly different (from the best, or from the default) "
             f"at {ALPHA}.", ""]
    for (graph, subset), group in _groups(rows).items():
        lines += [f"### {_title(graph, subset, group[0].n_questions)}", "",
                  tables.markdown_table(TABLE, _order(group)), ""]
    return "\n".join(lines)


def chart(rows: list[Row], out_dir: Path, *, bound: int = BOUND) -> list[Path]:
    """One figure, one panel per graph and question set: every method's default and tuned MAP@10, sorted, with the
    95% interval as error bar, the value as label and the thesis's MAP@10 as a marker. PNG and SVG, offline."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    groups = _groups(rows)
    n_max = max((len(g) for g in groups.values()), default=1)
    fig, axes = plt.subplots(1, len(groups), figsize=(6.2 * len(groups), 0.42 * n_max + 1.8), squeeze=False)
    colors = {"default": "#9aa5b1", "tuned": "#1f77b4"}
    for ax, ((graph, subset), group) in zip(axes[0], groups.items(), strict=True):
        ordered = list(reversed(_order(group)))
        y = np.arange(len(ordered))
        vals = [r.metrics[TEST_METRIC] for r in ordered]
        lo = [v - r.ci[TEST_METRIC][0] for v, r in zip(vals, ordered, strict=True)]
        hi = [r.ci[TEST_METRIC][1] - v for v, r in zip(vals, ordered, strict=True)]
        ax.barh(y, vals, xerr=[lo, hi], color=[colors[r.config] for r in ordered], capsize=2,
                error_kw={"elinewidth": 0.8})
        for yi, r, v, h in zip(y, ordered, vals, hi, strict=True):
            star = "" if r.best or (r.p_value or 0) < ALPHA else " ≈"
            ax.text(v + h + 0.01, yi, f"{v:.3f}{star}", va="center", fontsize=7)
            if r.thesis_map is not None:
                ax.plot(r.thesis_map, yi, marker="D", color="#d62728", markersize=5, zorder=3)
        ax.set_yticks(y, [f"{r.method} ({r.config})" for r in ordered], fontsize=8)
        ax.set_xlim(0, 1)
        ax.set_xlabel(f"MAP@10 at ≤{bound} triples/question (95% bootstrap CI)")
        ax.set_title(_title(graph, subset, group[0].n_questions), fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig.legend(handles=[Patch(color=colors["default"], label="default"), Patch(color=colors["tuned"], label="tuned"),
                        Line2D([], [], marker="D", color="#d62728", ls="", label="thesis MAP@10 (OpenAI LLM)")],
               loc="lower center", ncol=3, fontsize=8, frameon=False)
    fig.suptitle("Every LLM-free method, default and tuned (same TPE budget on reduced GV1); ≈: not significantly "
                 "below the best", fontsize=10)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / "methods.png", out_dir / "methods.svg"]
    for p in paths:
        fig.savefig(p, dpi=130, metadata={"Date": None} if p.suffix == ".svg" else None)
    plt.close(fig)
    return paths


def plot_data(rows: list[Row], out_dir: Path) -> list[Path]:
    """Per graph and question set: ``methods_<graph>_<subset>.csv`` (label ``method (config)``, MAP@10, Hits@10):
    the data of the DVC plots whose titles name the graph; one bar per method and configuration."""
    paths = []
    for (graph, subset), group in _groups(rows).items():
        data = [{"method_config": f"{r.method} ({r.config})", TEST_METRIC: _r(r.metrics[TEST_METRIC]),
                 names.HITS_AT_10: _r(r.metrics[names.HITS_AT_10])} for r in _order(group)]
        paths.append(tables.write_csv(data, out_dir / f"methods_{graph}_{subset}.csv", PLOT_FIELDS))
    return paths


#: the runs-table columns of the comparison's shared view (the UI shows no metric column by default)
VIEW_COLUMNS = (names.MAP_AT_10, f"{names.MAP_AT_10}_ci_low", f"{names.MAP_AT_10}_ci_high", names.HITS_AT_10,
                "triples_per_question", "thesis_map_at_10_triples")
COMPUTED = "computed by hublab report compare (dvc repro compare)"


def log_mlflow(root: Path, rows: list[Row], files: list[Path], *, bound: int = BOUND,
               experiment: str = EXPERIMENT, source: str = COMPUTED) -> Logged:
    """One parent run (``hublab.role=comparison``, the table, CSV and chart as artifacts) with one child per
    method, configuration, graph and question set (tags ``config``, ``method``, ``graph``, ``subset``, the tuned
    child's ``optuna_study``; rounded metrics and CI ends; a link to the full evaluation run), a shared runs-table
    view with the headline columns (``VIEW_COLUMNS``), and the parent's ``hublab.source`` saying where the numbers
    come from (``source``; a name suffix unless computed). Rerunning updates the same parent and children."""
    from hublab.tracking.comparison_runs import ChildRun, log_comparison_runs

    children = {}
    for r in rows:
        metrics = {m: round(v, ROUND) for m, v in r.metrics.items() if math.isfinite(v)}
        for m in CI_METRICS:
            metrics[f"{m}_ci_low"], metrics[f"{m}_ci_high"] = (round(x, ROUND) for x in r.ci[m])
        if r.p_value is not None:
            metrics["p_value_vs_best"] = round(r.p_value, ROUND)
        if r.p_vs_default is not None:
            metrics["p_value_tuned_vs_default"] = round(r.p_vs_default, ROUND)
        if r.thesis_map is not None:
            metrics["thesis_map_at_10_triples"] = round(r.thesis_map, ROUND)
        tags = {"config": r.config, "method": r.method, "graph": r.graph, "subset": r.subset,
                "hublab.pipeline": r.pipeline, "hublab.method_run_id": r.mlflow_run, "best": str(r.best)}
        if r.study:
            tags["optuna_study"] = r.study
        name = f"{r.method} · {r.config} · {r.graph}" + ("" if r.subset == "all" else f" · {r.subset}")
        children[f"{r.method}/{r.config}/{r.graph}/{r.subset}"] = ChildRun(name, metrics, tags)
    params = {"bound": str(bound), "tuning_set": TUNING_SET, "test": TEST_NAME[:500],
              "ci": "95% percentile bootstrap, 10000 resamples, seed 0"}
    name = f"fair comparison (≤{bound} triples/question)" + ("" if source == COMPUTED else f" · {source}")
    return log_comparison_runs(root, experiment, key=f"fair-bound{bound}", name=name, params=params,
                               children=children, files=files, tags={"hublab.source": source},
                               view_columns=VIEW_COLUMNS)


def write_all(st: Settings, rows: list[Row], out_dir: Path, *, bound: int = BOUND, log: bool = True) -> dict[str, Any]:
    """methods.csv, methods.md, the chart and the plot data under ``out_dir``; the MLflow comparison run."""
    csv_path, md = tables.write_report(out_dir, "methods", markdown(rows, bound=bound), csv_rows(rows))
    figs = chart(rows, out_dir, bound=bound)
    data = plot_data(rows, out_dir)
    parent = log_mlflow(st.root, rows, [csv_path, md, *figs], bound=bound).parent if log else ""
    return {"csv": csv_path, "md": md, "figures": figs, "plot_data": data, "mlflow_parent": parent}
