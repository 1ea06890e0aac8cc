"""`dvc metrics show` on the committed reports is one readable table (issue #30): DVC unions every metrics file's
keys into the table's columns, so the training stage's DVC metrics file holds only its headline (validation
MRR@10 before and after); its other figures are in ``reports/train/training.json``, not a DVC metric."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DVC = ROOT / ".venv" / "bin" / "dvc"


@pytest.mark.skipif(not DVC.exists(), reason="dvc not installed in .venv")
def test_metrics_show_is_one_row_per_evaluation_plus_training_in_few_columns():
    res = subprocess.run([str(DVC), "metrics", "show", "--json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads(res.stdout)
    files = next(iter(doc.values()))["data"]
    rows = {path: entry["data"] for path, entry in files.items()}
    evaluations = [p for p in rows if p.startswith("reports/eval/")]
    assert len(evaluations) == len(list((ROOT / "reports" / "eval").glob("*/metrics.json"))) >= 12
    assert set(rows["reports/train/metrics.json"]) == {"mrr10_before", "mrr10_after"}
    columns = {key for data in rows.values() for key in data}
    assert len(columns) <= 14, sorted(columns)
    record = json.loads((ROOT / "reports" / "train" / "training.json").read_text())
    assert {"train_s", "steps", "val_loss_after", "mrr10_after"} <= set(record)
