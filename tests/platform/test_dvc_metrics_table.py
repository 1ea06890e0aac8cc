"""`dvc metrics show` on the committed reports is one readable table (issues #30, #44): DVC unions every metrics
file's keys into the table's columns, so each evaluation's DVC metrics file (``headline.json``) holds only the
@10 figures and the output size under their table labels, and the table fits 120 columns. The training stage's
figures are outputs, not DVC metrics (``dvc metrics show reports/train/metrics.json`` shows them); its committed
record holds no timing (they differ on every machine)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DVC = ROOT / ".venv" / "bin" / "dvc"


@pytest.mark.skipif(not DVC.exists(), reason="dvc not installed in .venv")
def test_metrics_show_is_one_row_per_evaluation_within_120_columns():
    res = subprocess.run([str(DVC), "metrics", "show", "--json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    doc = json.loads(res.stdout)
    rows = {path: entry["data"] for path, entry in next(iter(doc.values()))["data"].items()}
    assert set(rows) == {str(p.relative_to(ROOT)) for p in (ROOT / "reports" / "eval").glob("*/headline.json")}
    assert len(rows) >= 12
    assert {key for data in rows.values() for key in data} == {"Hits@10", "MAP@10", "MRR@10", "Recall@10",
                                                               "triples/q"}
    table = subprocess.run([str(DVC), "metrics", "show"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    widest = max(len(line) for line in table.stdout.splitlines())
    assert widest <= 120, table.stdout
    record = json.loads((ROOT / "reports" / "train" / "training.json").read_text())
    assert {"steps", "val_loss_after", "mrr10_after"} <= set(record)
    assert not [k for k in record if k.endswith("_s")], record


@pytest.mark.skipif(not DVC.exists(), reason="dvc not installed in .venv")
def test_plots_show_opens_on_the_headline():
    """`dvc plots show` renders the comparison chart, then MAP@10 of every method (held-out GV1, all of GV1, the
    GV3 export) and Recall@10 of each evaluation, before any evaluation's slice charts (#44 item 4); each headline
    chart has axis labels."""
    res = subprocess.run([str(DVC), "plots", "show", "--json"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    plots = json.loads(res.stdout)["data"]
    headline = ["reports/summary/methods.png", "reports/summary/methods_gv1_held_out.csv",
                "reports/summary/methods_gv1_all.csv", "reports/summary/methods_gv3_orkg_all.csv",
                "reports/evaluations/methods.csv"]
    assert list(plots)[: len(headline)] == headline
    assert any(p.startswith("reports/eval/") for p in list(plots)[len(headline):])
    for path in headline[1:]:
        encoding = plots[path][0]["content"]["encoding"]
        assert encoding["x"]["title"] and encoding["y"]["title"], (path, encoding)
