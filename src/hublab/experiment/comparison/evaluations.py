"""The evaluations table (``hublab report summary``, DVC stage ``summary``, the quick start's closing table): each
evaluation's headline metrics (``reports/eval/*/metrics.json``, one per ``params.yaml: evaluate.runs`` entry) next
to the thesis's number for that method on the same graph variant — the @10 metrics first, and full-list Recall only
next to the number of triples it was measured over.

Rows carry the metric names of ``hublab.evaluation.names`` (so ``--json``, the CSV and ``dvc plots`` use the
same names as MLflow); only the Markdown table is headed by the readable labels (``Hits@10``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.evaluation import names
from hublab.reports import tables
from hublab.reports.thesis import Thesis, label

#: Metrics of the table, in order.
# quality only: this table is committed, and seconds differ by machine (timings: docs/benchmarks.md)
SHOWN = (*names.KEY_METRICS[:5], names.RECALL, names.PRECISION, names.N_QUESTIONS)
#: (metric name, column heading); the full-list Recall is headed "Recall (all)" next to the @10 metrics.
COLUMNS = [(n, "Recall (all)" if n == names.RECALL else names.LABELS[n]) for n in SHOWN]
#: the CSV's columns (our runs only: the data of ``dvc plots``)
CSV_FIELDS = ["run", "method", "pipeline", "graph", "dataset", *SHOWN]


def _method(run: dict[str, Any], st: Settings) -> str:
    if run.get("retriever"):
        return str(run["retriever"])
    try:
        from hublab.pipeline.config import load_pipeline

        return load_pipeline(st.root / "pipelines" / f"{run['pipeline']}.yaml").retriever_type
    except Exception:  # noqa: BLE001 - a missing pipeline file only loses the method column
        return ""


def evaluation_rows(st: Settings) -> list[dict[str, Any]]:
    """One row per evaluate run declared in params.yaml that has results, and the thesis's row for the same
    method and graph variant after it, where the thesis reports one (HubLink on GV1: the final comparison's
    Traverse / o3-mini row, every metric)."""
    thesis = Thesis.load(st)
    rows: list[dict[str, Any]] = []
    for run in st.section("evaluate").get("runs", []):
        path = st.root / "reports" / "eval" / f"{run['pipeline']}-{run['dataset']}" / "metrics.json"
        if not path.exists():
            continue
        m = read_metrics(path)
        method = _method(run, st)
        row = {"run": f"{run['pipeline']} on {run['dataset']}", "method": method, "pipeline": run["pipeline"],
               "graph": run["graph"], "dataset": run["dataset"], **{k: m.get(k) for k in SHOWN}}
        status = tables.run_status(int(m.get(names.N_QUESTIONS) or 0), int(m.get("n_errors") or 0))
        rows.append({**row, tables.STATUS: status} if status else row)
        ref = thesis.number(method, run["graph"])
        if ref:
            rows.append({"run": f"  thesis {label(thesis.name(method), run['graph'])}", "method": method,
                         "pipeline": "thesis", "graph": run["graph"], "dataset": run["dataset"],
                         **{k: ref.get(k) for k in SHOWN}})
    return rows


def read_metrics(path: Path) -> dict[str, Any]:
    """An evaluation's ``metrics.json``: an object of numbers, else one error naming the file (a damaged or
    hand-edited file is not a traceback)."""
    from hublab.errors import InputError

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else " ".join(str(exc).split())[:160]
        raise InputError(f"not a readable metrics file ({why}): rerun its evaluation (`dvc repro evaluate`)",
                         file=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(f"expected a JSON object of metric names and numbers, got {type(data).__name__}",
                         file=str(path))
    for key in (*SHOWN, "n_errors"):
        value = data.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise InputError(f"expected a number or null, got {type(value).__name__}", file=str(path), field=key)
        if key in (names.N_QUESTIONS, "n_errors") and value is not None and not (
                math.isfinite(value) and value >= 0 and float(value).is_integer()):
            raise InputError(f"expected a count (a whole number of 0 or more), got {value!r}", file=str(path),
                             field=key)
    return data


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table, headed by the readable labels (no trailing newline); a run that did not answer every question
    is marked (a ``status`` column and a line above the table)."""
    columns = [tables.field(key, heading, tables.by_size) for key, heading in [("run", "run"), *COLUMNS]]
    note = tables.status_note(str(r.get(tables.STATUS, "")) for r in rows)
    if not note:
        return tables.markdown_table(columns, rows)
    columns.insert(1, tables.field(tables.STATUS))
    return note + "\n\n" + tables.markdown_table(columns, rows)


def write_report(st: Settings, out_dir: Path) -> tuple[Path, Path]:
    """``methods.md`` (the table with the thesis's rows) and ``methods.csv`` (our runs only, one row per
    evaluation under the metric names: the data of ``dvc plots``); returns (csv, md)."""
    rows = evaluation_rows(st)
    text = (markdown(rows) if rows else "no evaluation results yet: run `dvc repro`") + "\n"
    fields = [*CSV_FIELDS, tables.STATUS] if any(r.get(tables.STATUS) for r in rows) else CSV_FIELDS
    return tables.write_report(out_dir, "methods", text, [r for r in rows if r["pipeline"] != "thesis"], fields)

