"""DVC metrics and plots files for one run: ``metrics.json`` (headline metrics) and ``by_<field>.csv`` per
thesis slice (Tables 10.2–10.6), the files ``dvc.yaml``'s evaluate stage declares as metrics/plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hublab.experiment.runner import KEY_METRICS, slice_metrics
from hublab.tracking.artifacts import write_csv


def write_dvc_report(metrics: dict[str, float], per_question: list[dict[str, Any]], report_dir: Path) -> None:
    report_dir.mkdir(parents=True, exist_ok=True)
    (report_dir / "metrics.json").write_text(json.dumps(metrics, indent=1, sort_keys=True))
    for field, groups in slice_metrics(per_question).items():
        rows = [{"value": v, **{m: g.get(m) for m in KEY_METRICS}} for v, g in groups.items()]
        write_csv(rows, report_dir / f"by_{field}.csv")
