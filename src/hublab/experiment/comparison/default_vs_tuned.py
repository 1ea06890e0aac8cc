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
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hublab.atomic import write_text_atomic
from hublab.config import ORKG_GRAPH, Settings
from hublab.evaluation import names
from hublab.evaluation.significance import ALPHA, TEST_NAME, bootstrap_ci, paired_p_value
from hublab.experiment.comparison.display import display_name, p_text
from hublab.experiment.comparison.statistics import CORRECTION, difference, holm
from hublab.pipeline.config import PipelineConfig, load_pipeline
from hublab.reports import tables
from hublab.reports.thesis import Thesis
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
DIFF = "diff_from_best_map_at_10"  # a row's MAP@10 minus the best row's (its own name: told apart in MLflow's columns)
#: what the thesis column holds: the thesis's LLM systems, not LLM-free ones
THESIS_SYSTEM = ("the thesis's reported MAP@10 of the method's final configuration, an LLM system (o3-mini with "
                 "OpenAI or mxbai embeddings; graph variants of Table 10.5, HubLink on GV1 from the final "
                 "comparison): not like-for-like with the LLM-free rows")


@dataclass
class Entry:
    method: str
    config: str  # default | tuned
    pipeline: Path
    cfg: PipelineConfig
    study: str = ""
    changed: str = ""  # tuned entries: the retriever parameters that differ from the default pipeline's


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
    p_holm: float | None = None  # p_value corrected across the other rows of its table (Holm)
    p_vs_default_holm: float | None = None  # p_vs_default corrected across the tuned rows of its table (Holm)
    diff: float | None = None  # MAP@10 minus the best row's (0 for the best row)
    diff_ci: tuple[float, float] | None = None  # its 95% paired bootstrap interval (None for the best row)
    best: bool = False
    thesis_map: float | None = None
    study: str = ""
    mlflow_run: str = ""
    changed: str = ""  # tuned rows: ``name=value`` of each retriever parameter tuning changed, ``; ``-separated
    status: str = ""  # a run that did not answer every question: ``tables.run_status`` (never a silent row of zeros)


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
              run_id: str, thesis: float | None, failure: tuple[bool, str] = (False, "")) -> list[Row]:
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
        status = tables.run_status(len(recs), sum(bool(r.get("error")) for r in recs), failed=failure[0],
                                   reason=failure[1])
        rows.append(Row(entry.method, graph, subset, entry.config, entry.pipeline.as_posix(), len(recs), means,
                        {m: per_q[m] for m in CI_METRICS}, thesis_map=thesis, study=entry.study, mlflow_run=run_id,
                        changed=entry.changed, status=status))
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
    (did tuning change anything beyond noise?), each family corrected by Holm within its table; every row's MAP@10
    difference from the best row with its paired bootstrap interval. Rows of one group must be on the same
    questions in one order."""
    for r in rows:
        r.ci = {m: bootstrap_ci(r.per_question[m]) for m in CI_METRICS}
        # rows from several calls are judged again, together
        r.best, r.p_value, r.p_vs_default, r.p_holm, r.p_vs_default_holm = False, None, None, None, None
        r.diff, r.diff_ci = None, None
    for group in _groups(rows).values():
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
                              _thesis_map(thesis, entry.method, graph), failure=(s.failed, s.failure_reason))
    add_statistics(rows)
    return rows


# ------------------------------------------------------------------ outputs

def _r(v: float | None) -> float | str:
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), ROUND)


def csv_rows(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d: dict[str, Any] = {"method": r.method, "name": display_name(r.method), "graph": r.graph,
                             "subset": r.subset, "config": r.config, "n_questions": r.n_questions}
        d.update({m: _r(r.metrics.get(m)) for m in METRICS})
        for m in CI_METRICS:
            lo, hi = r.ci.get(m, (None, None))
            d[f"{m}_ci_low"], d[f"{m}_ci_high"] = _r(lo), _r(hi)
        d[DIFF] = _r(r.diff)
        d[f"{DIFF}_ci_low"], d[f"{DIFF}_ci_high"] = (_r(x) for x in (r.diff_ci or (None, None)))
        d["p_value_vs_best"] = _r(r.p_value)
        d["p_value_vs_best_holm"] = _r(r.p_holm)
        d["best"] = r.best
        d["not_significant_vs_best"] = bool(r.p_holm is not None and r.p_holm >= ALPHA)
        d["p_value_tuned_vs_default"] = _r(r.p_vs_default)
        d["p_value_tuned_vs_default_holm"] = _r(r.p_vs_default_holm)
        d["thesis_map_at_10_triples"] = _r(r.thesis_map)
        # no MLflow run id: it differs on every machine and rerun (the MLflow comparison children link the runs)
        d["pipeline"], d["study"], d["changed_params"] = r.pipeline, r.study, r.changed
        if any(x.status for x in rows):  # a clean comparison's CSV keeps its columns
            d[tables.STATUS] = r.status
        out.append(d)
    return out


def _order(rows: list[Row]) -> list[Row]:
    return sorted(rows, key=lambda r: (-round(r.metrics[TEST_METRIC], 12), r.method, r.config))


GROUP_TITLE = {("gv1", "all"): "GV1 (rebuilt), all questions",
               ("gv1", "held_out"): "GV1 (rebuilt), questions outside the tuning set",
               (ORKG_GRAPH, "all"): "GV3 (ORKG export), all questions"}


def _title(graph: str, subset: str, n: int, titles: dict[tuple[str, str], str] | None = None) -> str:
    """A table's heading: ``titles`` (a comparison on another graph names its own groups), else the thesis's."""
    return {**GROUP_TITLE, **(titles or {})}.get((graph, subset), f"{graph}, {subset}") + f" ({n})"


def _with_ci(metric: str) -> tables.Column:
    def cell(r: Row) -> str:
        lo, hi = r.ci[metric]
        return f"{r.metrics[metric]:.3f} [{lo:.3f}, {hi:.3f}]"

    return tables.Column(f"{names.LABELS[metric]} [95% CI]", cell)


def _p_vs_best(r: Row) -> str:
    if r.best:
        return "**best**"
    return p_text(r.p_holm) + (" ≈" if (r.p_holm or 0) >= ALPHA else "")


def _p_vs_default(r: Row) -> str:
    if r.p_vs_default_holm is None:
        return tables.MISSING
    return p_text(r.p_vs_default_holm) + (" ≈" if r.p_vs_default_holm >= ALPHA else "")


def _diff(r: Row) -> str:
    if r.best or r.diff is None:
        return tables.MISSING
    lo, hi = r.diff_ci or (float("nan"), float("nan"))
    return f"{r.diff:+.3f} [{lo:+.3f}, {hi:+.3f}]"


#: the table of one graph and question set (Markdown and LaTeX alike)
TABLE = [tables.Column("method", lambda r: display_name(r.method)), tables.Column("config", lambda r: r.config),
         _with_ci(names.HITS_AT_10), _with_ci(TEST_METRIC),
         tables.Column("Δ MAP@10 vs best [95% CI]", _diff),
         tables.Column("MRR@10", lambda r: f"{r.metrics[names.MRR_AT_10]:.3f}"),
         tables.Column("Recall@10", lambda r: f"{r.metrics[names.RECALL_AT_10]:.3f}"),
         tables.Column("triples/q", lambda r: f"{r.metrics[names.TRIPLES_PER_QUESTION]:.1f}"),
         tables.Column("p vs best", _p_vs_best), tables.Column("p tuned vs default", _p_vs_default),
         tables.Column("thesis MAP@10 (LLM)", lambda r: tables.MISSING if r.thesis_map is None
                       else f"{r.thesis_map:.3f}")]


def _columns(rows: list[Row]) -> list[tables.Column]:
    """The table's columns; the thesis column only where the thesis reports a number (never on a user's graph)."""
    return TABLE if any(r.thesis_map is not None for r in rows) else TABLE[:-1]


def caption(bound: int = BOUND) -> str:
    """What every table of the comparison shows, in words (the Markdown's preamble and each LaTeX caption)."""
    return (f"Every LLM-free method at most {bound} triples per question, with its default parameters and with the "
            f"parameters `hublab tune-all` chose on the {TUNING_N} tuning questions (`{TUNING_SET}`, the same TPE "
            f"budget for every method). [a, b]: 95% bootstrap interval over questions (10,000 resamples, seed 0). "
            f"Δ MAP@10 vs best: the row's MAP@10 minus the best row's, with the 95% paired bootstrap interval of "
            f"the per-question differences. p vs best: {TEST_NAME} of the row's per-question MAP@10 against the best "
            f"row; p tuned vs default: the same test of a tuned row against its method's default row; both with "
            f"{CORRECTION} (each family apart). **best** = highest MAP@10; ≈ = not significantly different (from "
            f"the best, or from the default) at {ALPHA} after the correction. Thesis MAP@10 (LLM): {THESIS_SYSTEM}.")


def _table(rows: list[Row]) -> list[tables.Column]:
    """The table's columns (:func:`_columns`), with the run state after the config where a run did not answer every
    question."""
    columns = _columns(rows)
    if not any(r.status for r in rows):
        return columns
    return [*columns[:2], tables.Column(tables.STATUS, lambda r: r.status or tables.MISSING), *columns[2:]]


def markdown(rows: list[Row], *, bound: int = BOUND, caption_text: str | None = None,
             titles: dict[tuple[str, str], str] | None = None) -> str:
    """One table per graph and question set, best MAP@10 first; ``caption_text`` and ``titles`` describe another
    comparison than the thesis's (its split, its groups)."""
    note = tables.status_note(r.status for r in rows)
    lines = [caption_text or caption(bound), ""] + ([note, ""] if note else [])
    for (graph, subset), group in _groups(rows).items():
        lines += [f"### {tables.md_text(_title(graph, subset, group[0].n_questions, titles))}", "",
                  tables.markdown_table(_table(rows), _order(group)), ""]
    return "\n".join(lines)


def latex(rows: list[Row], *, bound: int = BOUND, caption_text: str | None = None,
          titles: dict[tuple[str, str], str] | None = None, note: str | None = None) -> str:
    """The same tables for a paper (booktabs; one ``table`` per graph and question set, the caption in each)."""
    parts = [f"% {note or CSV_NOTE}", "% needs \\usepackage{booktabs}"]
    for (graph, subset), group in _groups(rows).items():
        title = _title(graph, subset, group[0].n_questions, titles)
        parts += ["", tables.latex_table(_table(rows), _order(group),
                                         caption=f"{title}. {caption_text or caption(bound)}",
                                         label=f"tab:methods-{graph}-{subset}".replace("_", "-"))]
    return "\n".join(parts) + "\n"


CSV_NOTE = "written by hublab report compare (dvc repro compare); every value is in methods.csv"


def _shared_order(groups: dict[tuple[str, str], list[Row]]) -> list[tuple[str, str]]:
    """One (method, config) order for every panel: the first panel's (best MAP@10 first), then rows only later
    panels have, in their own order."""
    order: list[tuple[str, str]] = []
    for group in groups.values():
        order += [k for r in _order(group) if (k := (r.method, r.config)) not in order]
    return order


def _axis_end(rows: list[Row]) -> float:
    """Just past the largest interval end or thesis marker, on a 0.05 grid (never the whole 0–1 range)."""
    top = max([r.ci[TEST_METRIC][1] for r in rows] + [r.thesis_map or 0.0 for r in rows] + [0.05])
    return min(1.0, math.ceil(top * 20 + 0.2) / 20)


def chart(rows: list[Row], out_dir: Path, *, bound: int = BOUND, titles: dict[tuple[str, str], str] | None = None,
          suptitle: str | None = None) -> list[Path]:
    """One figure, one panel per graph and question set, every panel in the same method order: each method's
    default and tuned MAP@10 with its 95% interval, the thesis's (LLM) MAP@10 as a marker, and the values in a
    column of their own right of the axis (no marker ever covers one). PNG, SVG and PDF, offline and byte-stable."""
    import io

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch
    from matplotlib.transforms import blended_transform_factory

    from hublab.atomic import write_bytes_atomic

    groups = _groups(rows)
    order = _shared_order(groups)
    end = _axis_end(rows)
    plt.rcParams.update({"font.size": 11, "svg.hashsalt": "hublab"})
    fig, axes = plt.subplots(1, len(groups), figsize=(5.6 * len(groups), 0.34 * len(order) + 2.2), squeeze=False,
                             sharey=True)
    colors = {"default": "#9aa5b1", "tuned": "#1f77b4"}
    y = {key: len(order) - 1 - i for i, key in enumerate(order)}  # best at the top
    for ax, ((graph, subset), group) in zip(axes[0], groups.items(), strict=True):
        side = blended_transform_factory(ax.transAxes, ax.transData)
        for r in group:
            yi, v = y[(r.method, r.config)], r.metrics[TEST_METRIC]
            lo, hi = r.ci[TEST_METRIC]
            ax.barh(yi, v, xerr=[[v - lo], [hi - v]], color=colors[r.config], capsize=2, error_kw={"elinewidth": 0.8})
            mark = "" if r.best or (r.p_holm or 0) < ALPHA else " ≈"
            ax.text(1.02, yi, f"{v:.3f}{mark}", transform=side, va="center", fontsize=9, clip_on=False)
            if r.thesis_map is not None:
                ax.plot(r.thesis_map, yi, marker="D", color="#d62728", markersize=6, zorder=3, ls="")
        ax.set_yticks(list(y.values()), [f"{display_name(m)} ({c})" for m, c in y])
        ax.set_xlim(0, end)
        ax.set_xlabel(f"MAP@10 at ≤{bound} triples/question")
        ax.set_title(_title(graph, subset, group[0].n_questions, titles), fontsize=11)
        ax.grid(axis="x", alpha=0.3)
    handles = [Patch(color=colors["default"], label="default"), Patch(color=colors["tuned"], label="tuned")]
    if any(r.thesis_map is not None for r in rows):
        handles.append(Line2D([], [], marker="D", color="#d62728", ls="", label="thesis MAP@10 (LLM system, o3-mini)"))
    fig.legend(handles=handles, loc="lower center", ncol=3, frameon=False)
    if suptitle:  # another comparison's title, wrapped to the figure's width (a single panel is narrow)
        import textwrap

        suptitle = textwrap.fill(suptitle, width=int(11 * 5.6 * len(groups)))
    fig.suptitle(suptitle or "Every LLM-free method, default and tuned (same TPE budget on reduced GV1); bars: 95% "
                 "bootstrap interval; ≈: not significantly below the best (Holm)", fontsize=11)
    top = 0.94 if suptitle is None else 1 - 0.2 * (suptitle.count("\n") + 1) / fig.get_figheight()
    fig.tight_layout(rect=(0, 0.06, 1, top), w_pad=3.0)
    paths = [out_dir / "methods.png", out_dir / "methods.svg", out_dir / "methods.pdf"]
    meta = {".png": None, ".svg": {"Date": None}, ".pdf": {"CreationDate": None, "ModDate": None}}
    for p in paths:
        buf = io.BytesIO()
        fig.savefig(buf, format=p.suffix[1:], dpi=130, metadata=meta[p.suffix])
        write_bytes_atomic(p, buf.getvalue())
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
                "graph": r.graph, "subset": r.subset, GROUP_TAG: _title(r.graph, r.subset, r.n_questions),
                "diff_95ci": "best" if r.best else _diff(r), "p_vs_best": _p_vs_best(r).replace("**", ""),
                "changed_params": r.changed or ("(default)" if r.config == "default" else "(none)"),
                "hublab.pipeline": r.pipeline, "hublab.method_run_id": r.mlflow_run, "best": str(r.best)}
        if r.study:
            tags["optuna_study"] = r.study
        if r.status:
            tags["hublab.status"] = r.status
        name = f"{display_name(r.method)} · {r.config} · {r.graph}" + ("" if r.subset == "all" else f" · {r.subset}")
        children[f"{r.method}/{r.config}/{r.graph}/{r.subset}"] = ChildRun(name, metrics, tags)
    params = {"bound": str(bound), "tuning_set": TUNING_SET, "test": TEST_NAME[:500], "correction": CORRECTION,
              "ci": "95% percentile bootstrap, 10000 resamples, seed 0"}
    name = f"fair comparison (≤{bound} triples/question)" + ("" if source == COMPUTED else f" · {source}")
    return log_comparison_runs(root, experiment, key=f"fair-bound{bound}", name=name, params=params,
                               children=children, files=files, tags={"hublab.source": source},
                               view_columns=VIEW_COLUMNS, view=VIEW)


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
