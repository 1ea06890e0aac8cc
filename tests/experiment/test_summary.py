"""The quick start's closing table: headline metrics per evaluation next to the thesis's HubLink."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from hublab.config import Settings
from hublab.experiment.summary import evaluation_rows, markdown_table

ROOT = Path(__file__).resolve().parents[2]


def test_rows_put_thesis_next_to_each_run(tmp_path: Path, shared: Path):
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["paths"]["thesis_results"] = str(shared / "reference/thesis_results")
    params["evaluate"]["runs"] = [{"pipeline": "p", "retriever": "hublink", "graph": "gv1", "dataset": "gv1"},
                                  {"pipeline": "p", "retriever": "hublink", "graph": "gv2", "dataset": "gv2"}]
    out = tmp_path / "reports/eval/p-gv1"
    out.mkdir(parents=True)
    (out / "metrics.json").write_text(json.dumps({"hit_at_10_triples": 0.4, "triples_per_question": 12.5,
                                                  "recall_triples": 0.6, "n_questions": 170.0}))
    rows = evaluation_rows(Settings(tmp_path, params))
    assert [r["run"].strip() for r in rows] == ["p on gv1", "thesis HubLink (GV1)"]  # gv2 not evaluated yet
    assert rows[0]["Hits@10"] == 0.4 and rows[0]["triples/q"] == 12.5
    assert rows[1]["Hits@10"] == 0.513 and rows[1]["MAP@10"] == 0.298  # thesis Table (final comparison, GV1)
    table = markdown_table(rows)
    assert "| p on gv1 | – | 0.400 | – | – | 12.5 | 0.600 | 170 |" in table
