"""The method comparison of the DVC pipeline and the closing table of the quick start: each evaluation's
headline metrics (``reports/eval/*/metrics.json``, one per ``evaluate.runs`` entry) next to the thesis's number
for that method on the same graph variant — the @10 metrics first, and full-list Recall only next to the number
of triples it was measured over.

Rows carry the metric names of ``hublab.evaluation.names`` (so ``--json``, the CSV and ``dvc plots`` use the
same names as MLflow); only the Markdown table is headed by the readable labels (``Hits@10``).
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.evaluation import names, thesis_tables
from hublab.retrievers.registry import thesis_names

#: Metrics of the table, in order.
SHOWN = (*names.KEY_METRICS[:5], names.RECALL, names.PRECISION, names.RUNTIME, names.N_QUESTIONS)
#: (metric name, column heading); the full-list Recall is headed "Recall (all)" next to the @10 metrics.
COLUMNS = [(n, "Recall (all)" if n == names.RECALL else names.LABELS[n]) for n in SHOWN]


def thesis_results(st: Settings) -> dict[str, dict[str, dict[str, float]]]:
    """{method: {variant: {metric name: value}}} from the thesis's tables: the graph-variant table (Recall,
    Precision, F1, MAP@10 per method and variant) and, for HubLink on GV1, the final comparison (Traverse, o3-mini;
    every metric)."""
    return thesis_tables.by_method(st.path("thesis_results"))


def _method(run: dict[str, Any], st: Settings) -> str:
    if run.get("retriever"):
        return str(run["retriever"])
    try:
        from hublab.pipeline.config import load_pipeline

        return load_pipeline(st.root / "pipelines" / f"{run['pipeline']}.yaml").retriever_type
    except Exception:  # noqa: BLE001 - a missing pipeline file only loses the method column
        return ""


def evaluation_rows(st: Settings, *, thesis: bool = True) -> list[dict[str, Any]]:
    """One row per evaluate run declared in params.yaml that has results; with ``thesis`` the thesis's row for
    the same method and graph variant after it, where the thesis reports one."""
    reference = thesis_results(st) if thesis else {}
    thesis_name = thesis_names()
    rows: list[dict[str, Any]] = []
    for run in st.section("evaluate").get("runs", []):
        path = st.root / "reports" / "eval" / f"{run['pipeline']}-{run['dataset']}" / "metrics.json"
        if not path.exists():
            continue
        m = json.loads(path.read_text())
        method = _method(run, st)
        rows.append({"run": f"{run['pipeline']} on {run['dataset']}", "method": method, "pipeline": run["pipeline"],
                     "graph": run["graph"], "dataset": run["dataset"], **{k: m.get(k) for k in SHOWN}})
        variant = thesis_tables.variant(run["graph"]) or ""
        ref = reference.get(thesis_name.get(method, ""), {}).get(variant, {})
        if ref:
            rows.append({"run": f"  thesis {thesis_name[method]} ({variant})", "method": method,
                         "pipeline": "thesis", "graph": run["graph"], "dataset": run["dataset"],
                         **{k: ref.get(k) for k in SHOWN}})
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    cols = ["run", *[name for name, _ in COLUMNS]]
    heads = ["run", *[label for _, label in COLUMNS]]

    def fmt(v: Any) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            return str(int(v)) if v.is_integer() and v >= 1 else (f"{v:.1f}" if v >= 1 else f"{v:.3f}")
        return str(v)

    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)


def write_summary(st: Settings, out_dir: Path) -> tuple[Path, Path]:
    """``methods.md`` (the table with the thesis's rows) and ``methods.csv`` (our runs only, one row per
    evaluation under the metric names: the data of ``dvc plots``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    md, csv_path = out_dir / "methods.md", out_dir / "methods.csv"
    rows = evaluation_rows(st)
    md.write_text((markdown_table(rows) if rows else "no evaluation results yet: run `dvc repro`") + "\n")
    ours = [r for r in rows if r["pipeline"] != "thesis"]
    fields = ["run", "method", "pipeline", "graph", "dataset", *SHOWN]
    tmp = csv_path.with_suffix(".csv.tmp")
    with tmp.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=fields)
        w.writeheader()
        w.writerows(ours)
    tmp.replace(csv_path)
    return md, csv_path
