"""DVC metrics and plots files for one run: ``metrics.json`` (headline metrics) and ``by_<field>.csv`` per
thesis slice (Tables 10.2–10.6), the files ``dvc.yaml``'s evaluate stage declares as metrics/plots.

These files are committed, so they hold only what is the same on every machine: the quality figures. What measures
the machine (seconds, energy, emissions) goes to MLflow and to ``timings.json`` beside them, which git ignores, so a
rerun on another CPU with the same results leaves the tree clean (timings live in ``docs/benchmarks.md``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.evaluation.names import DVC_HEADLINE, HEADLINE, KEY_METRICS, LABELS
from hublab.experiment.aggregate import slice_metrics
from hublab.experiment.runner import RunSummary
from hublab.reports.tables import write_csv

__all__ = ["HEADLINE", "headline", "machine_dependent", "write_dvc_report", "write_eval_report"]


#: words of a metric's name that mark it as a measurement of the machine, not of the results
_MACHINE_WORDS = ("runtime", "energy", "emissions", "power", "duration")


def machine_dependent(name: str) -> bool:
    """Whether a metric measures the machine (seconds, energy, emissions): never in a committed report."""
    return name.endswith("_s") or any(w in name for w in _MACHINE_WORDS)


def headline(metrics: dict[str, float], per_question: list[dict[str, Any]]) -> dict[str, float]:
    out = {k: metrics[k] for k in HEADLINE if k in metrics and not machine_dependent(k)}
    if "triples_per_question" not in out and per_question:
        sizes = [len(r.get("retrieved_context") or []) for r in per_question]
        out["triples_per_question"] = sum(sizes) / len(sizes)
    return {k: out[k] for k in HEADLINE if k in out}  # HEADLINE's order


def dvc_headline(head: dict[str, float]) -> dict[str, float]:
    """The DVC metrics file: the @10 figures and triples per question under their table labels, to 3 decimals
    (``dvc metrics show`` of every evaluation within 120 columns)."""
    return {LABELS[k]: round(float(head[k]), 3) for k in DVC_HEADLINE if k in head}


def write_dvc_report(metrics: dict[str, float], per_question: list[dict[str, Any]], report_dir: Path) -> None:
    """``headline.json`` (DVC metrics), ``metrics.json`` (the headline metrics under their names),
    ``all_metrics.json`` (every quality metric), ``timings.json`` (the machine's figures, git-ignored) and the slice
    CSVs (plots), each written atomically (a full disk leaves the previous report's file, never a truncated one)."""
    head = headline(metrics, per_question)
    write_text_atomic(report_dir / "metrics.json", json.dumps(head, indent=1))
    write_text_atomic(report_dir / "headline.json", json.dumps(dvc_headline(head), indent=1) + "\n")
    quality = {k: v for k, v in metrics.items() if not machine_dependent(k)}
    write_text_atomic(report_dir / "all_metrics.json", json.dumps(quality, indent=1, sort_keys=True))
    write_text_atomic(report_dir / "timings.json", json.dumps({k: v for k, v in metrics.items() if k not in quality},
                                                              indent=1, sort_keys=True))
    for field, groups in slice_metrics(per_question).items():
        rows = [{"value": v, **{m: g.get(m) for m in KEY_METRICS}} for v, g in groups.items()]
        write_csv(rows, report_dir / f"by_{field}.csv")


def write_eval_report(summary: RunSummary, report_dir: Path) -> Path:
    """The DVC files of a run. A partial run never writes into the full run's report directory: it goes to
    ``<report_dir>.partial-<n>of<total>`` (git-ignored) and ``scope.json`` says what it covers."""
    if not summary.full:
        ident = summary.identity
        report_dir = report_dir.with_name(f"{report_dir.name}.partial-{ident.get('n_questions')}of"
                                          f"{ident.get('n_total')}")
    write_dvc_report(summary.metrics, summary.per_question, report_dir)
    write_text_atomic(report_dir / "scope.json", json.dumps({"scope": summary.scope, "run_identity":
                                                             summary.identity.get("run_identity")}, indent=1) + "\n")
    return report_dir
