"""The committed comparison (``reports/summary/methods.csv``) read back into the comparison's rows exactly, and
logged to a project's MLflow store once (``hublab report publish``, the quick start's last step; issue #30)."""

from __future__ import annotations

import csv
import shutil
from pathlib import Path

import yaml

from hublab.experiment.comparison.committed import SOURCE, publish_committed, rows_from_csv
from hublab.experiment.comparison.default_vs_tuned import csv_rows

REPO = Path(__file__).resolve().parents[2]
TABLE = REPO / "reports" / "summary" / "methods.csv"


def test_the_committed_table_reads_back_into_the_rows_that_wrote_it():
    with TABLE.open(newline="", encoding="utf-8") as fh:
        committed = list(csv.DictReader(fh))
    again = csv_rows(rows_from_csv(TABLE))
    assert len(again) == len(committed) > 0
    for got, row in zip(again, committed, strict=True):
        assert {k: str(v) for k, v in got.items()} == row
        assert "mlflow_run" not in row  # a run id differs on every machine: not in a committed report


def test_publish_logs_the_committed_comparison_once(tmp_path: Path, monkeypatch):
    from mlflow.tracking import MlflowClient

    from hublab.config import _load_params, settings
    from hublab.tracking.mlflow_log import tracking_uri

    root = tmp_path / "proj"
    shutil.copytree(REPO / "reports" / "summary", root / "reports" / "summary")
    (root / "params.yaml").write_text(yaml.safe_dump({"paths": {}}))
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    _load_params.cache_clear()
    logged = publish_committed(settings(), experiment="compare-committed")
    assert logged is not None and logged.view.endswith("viewStateShareKey=fair-bound20")
    client = MlflowClient(tracking_uri(root))
    parent = client.get_run(logged.parent)
    assert parent.data.tags["hublab.source"] == SOURCE
    children = client.search_runs([logged.experiment_id], f"tags.`mlflow.parentRunId` = '{logged.parent}'",
                                  max_results=500)
    assert len(children) == len(rows_from_csv(TABLE)) == int(parent.data.tags["hublab.n_children"])
    best = max(children, key=lambda r: r.data.metrics["map_at_10_triples"])
    assert best.info.run_name.startswith("HubLink · ") and best.data.metrics["triples_per_question"] == 20.0
    assert {a.path for a in client.list_artifacts(logged.parent)} >= {"methods.csv", "methods.png"}
    assert publish_committed(settings(), experiment="compare-committed") is None
    # `dvc repro compare` afterwards updates the same parent, which then says its numbers were computed
    from hublab.experiment.comparison.default_vs_tuned import COMPUTED, log_mlflow

    again = log_mlflow(root, rows_from_csv(TABLE), [], experiment="compare-committed")
    assert again.parent == logged.parent
    recomputed = client.get_run(logged.parent)
    assert recomputed.data.tags["hublab.source"] == COMPUTED and "committed" not in recomputed.info.run_name
