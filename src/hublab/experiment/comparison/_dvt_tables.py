"""The default-vs-tuned comparison's tables, through the reports' one table writer: the CSV rows (every value,
rounded), the Markdown and LaTeX tables (one per graph and question set, with the caption that says what they show)
and the DVC plots' data."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from hublab.evaluation import names
from hublab.evaluation.significance import ALPHA, CORRECTION, TEST_NAME
from hublab.experiment.comparison._dvt_rows import (
    BOUND,
    CI_METRICS,
    DIFF,
    METRICS,
    ROUND,
    TEST_METRIC,
    THESIS_SYSTEM,
    TUNING_N,
    TUNING_SET,
    Row,
    groups,
    order,
    title,
)
from hublab.experiment.comparison.display import display_name, p_text
from hublab.reports import tables

PLOT_FIELDS = ("method_config", TEST_METRIC, names.HITS_AT_10)  # the DVC plots' data (dvc.yaml: compare.plots)
CSV_NOTE = "written by hublab report compare (dvc repro compare); every value is in methods.csv"


def rounded(v: float | None) -> float | str:
    """A value as written: ``ROUND`` digits, empty for none or NaN."""
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else round(float(v), ROUND)


def csv_rows(rows: list[Row]) -> list[dict[str, Any]]:
    out = []
    for r in rows:
        d: dict[str, Any] = {"method": r.method, "name": display_name(r.method), "graph": r.graph,
                             "subset": r.subset, "config": r.config, "n_questions": r.n_questions}
        d.update({m: rounded(r.metrics.get(m)) for m in METRICS})
        for m in CI_METRICS:
            lo, hi = r.ci.get(m, (None, None))
            d[f"{m}_ci_low"], d[f"{m}_ci_high"] = rounded(lo), rounded(hi)
        d[DIFF] = rounded(r.diff)
        d[f"{DIFF}_ci_low"], d[f"{DIFF}_ci_high"] = (rounded(x) for x in (r.diff_ci or (None, None)))
        d["p_value_vs_best"] = rounded(r.p_value)
        d["p_value_vs_best_holm"] = rounded(r.p_holm)
        d["best"] = r.best
        d["not_significant_vs_best"] = bool(r.p_holm is not None and r.p_holm >= ALPHA)
        d["p_value_tuned_vs_default"] = rounded(r.p_vs_default)
        d["p_value_tuned_vs_default_holm"] = rounded(r.p_vs_default_holm)
        d["thesis_map_at_10_triples"] = rounded(r.thesis_map)
        # no MLflow run id: it differs on every machine and rerun (the MLflow comparison children link the runs)
        d["pipeline"], d["study"], d["changed_params"] = r.pipeline, r.study, r.changed
        if any(x.status for x in rows):  # a clean comparison's CSV keeps its columns
            d[tables.STATUS] = r.status
        out.append(d)
    return out


def _with_ci(metric: str) -> tables.Column:
    def cell(r: Row) -> str:
        lo, hi = r.ci[metric]
        return f"{r.metrics[metric]:.3f} [{lo:.3f}, {hi:.3f}]"

    return tables.Column(f"{names.LABELS[metric]} [95% CI]", cell)


def p_vs_best_text(r: Row) -> str:
    """``**best**``, else the Holm-corrected p-value against the best row, ``≈`` where not significant."""
    if r.best:
        return "**best**"
    return p_text(r.p_holm) + (" ≈" if (r.p_holm or 0) >= ALPHA else "")


def _p_vs_default(r: Row) -> str:
    if r.p_vs_default_holm is None:
        return tables.MISSING
    return p_text(r.p_vs_default_holm) + (" ≈" if r.p_vs_default_holm >= ALPHA else "")


def diff_text(r: Row) -> str:
    """The MAP@10 difference from the best row with its interval (``–`` for the best row)."""
    if r.best or r.diff is None:
        return tables.MISSING
    lo, hi = r.diff_ci or (float("nan"), float("nan"))
    return f"{r.diff:+.3f} [{lo:+.3f}, {hi:+.3f}]"


#: the table of one graph and question set (Markdown and LaTeX alike)
TABLE = [tables.Column("method", lambda r: display_name(r.method)), tables.Column("config", lambda r: r.config),
         _with_ci(names.HITS_AT_10), _with_ci(TEST_METRIC),
         tables.Column("Δ MAP@10 vs best [95% CI]", diff_text),
         tables.Column("MRR@10", lambda r: f"{r.metrics[names.MRR_AT_10]:.3f}"),
         tables.Column("Recall@10", lambda r: f"{r.metrics[names.RECALL_AT_10]:.3f}"),
         tables.Column("triples/q", lambda r: f"{r.metrics[names.TRIPLES_PER_QUESTION]:.1f}"),
         tables.Column("p vs best", p_vs_best_text), tables.Column("p tuned vs default", _p_vs_default),
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
    for (graph, subset), group in groups(rows).items():
        lines += [f"### {tables.md_text(title(graph, subset, group[0].n_questions, titles))}", "",
                  tables.markdown_table(_table(rows), order(group)), ""]
    return "\n".join(lines)


def latex(rows: list[Row], *, bound: int = BOUND, caption_text: str | None = None,
          titles: dict[tuple[str, str], str] | None = None, note: str | None = None) -> str:
    """The same tables for a paper (booktabs; one ``table`` per graph and question set, the caption in each)."""
    parts = [f"% {note or CSV_NOTE}", "% needs \\usepackage{booktabs}"]
    for (graph, subset), group in groups(rows).items():
        heading = title(graph, subset, group[0].n_questions, titles)
        parts += ["", tables.latex_table(_table(rows), order(group),
                                         caption=f"{heading}. {caption_text or caption(bound)}",
                                         label=f"tab:methods-{graph}-{subset}".replace("_", "-"))]
    return "\n".join(parts) + "\n"


def plot_data(rows: list[Row], out_dir: Path) -> list[Path]:
    """Per graph and question set: ``methods_<graph>_<subset>.csv`` (label ``method (config)``, MAP@10, Hits@10):
    the data of the DVC plots whose titles name the graph; one bar per method and configuration."""
    paths = []
    for (graph, subset), group in groups(rows).items():
        data = [{"method_config": f"{r.method} ({r.config})", TEST_METRIC: rounded(r.metrics[TEST_METRIC]),
                 names.HITS_AT_10: rounded(r.metrics[names.HITS_AT_10])} for r in order(group)]
        paths.append(tables.write_csv(data, out_dir / f"methods_{graph}_{subset}.csv", PLOT_FIELDS))
    return paths
