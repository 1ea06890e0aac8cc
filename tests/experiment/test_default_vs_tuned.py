"""Every method default and tuned (issue #22, `hublab report compare`): default and tuned rows, bootstrap CIs,
paired p-values against the best row, methods.csv / methods.md / the chart, and the MLflow parent with
config-tagged children. Real runs on a 12-paper
subgraph of the GV3 export (5 questions); the statistics themselves are checked by hand in
tests/evaluation/test_significance.py."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
import yaml

from conftest import small_gv3_project

BM25 = {"name": "bm25", "retriever": {"type": "bm25", "params": {"units": "auto", "n_results": 30}},
        "llm": {"backend": "none"}, "evaluation": {"k": 10}}


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    root = small_gv3_project(tmp_path / "proj", shared, gv3_orkg_graph, monkeypatch)
    (root / "pipelines/tuned").mkdir(parents=True)
    (root / "pipelines/bm25.yaml").write_text(yaml.safe_dump(BM25))
    tuned = {**BM25, "name": "bm25_tuned", "tuned": {"study": "fair-bm25-test", "n_trials": 2}}
    tuned["retriever"] = {"type": "bm25", "params": {"units": "auto", "n_results": 30, "k1": 0.3, "b": 0.1}}
    (root / "pipelines/tuned/bm25.yaml").write_text(yaml.safe_dump(tuned))
    monkeypatch.chdir(root)
    return root


@pytest.mark.slow  # four evaluation runs and the MLflow comparison (~1 min on a busy 2-core machine)
def test_default_and_tuned_rows_with_intervals_p_values_chart_and_mlflow(project: Path):
    from mlflow.tracking import MlflowClient

    from hublab.config import settings
    from hublab.experiment.comparison.default_vs_tuned import entries, run_comparison, write_all
    from hublab.tracking.mlflow_log import tracking_uri

    st = settings()
    items = entries(project, [project / "pipelines/bm25.yaml"])
    assert [(e.method, e.config, e.study) for e in items] == [("bm25", "default", ""),
                                                               ("bm25", "tuned", "fair-bm25-test")]
    rows = run_comparison(st, items, graphs=(("gv3_orkg", "gv3_orkg"),))
    out = write_all(st, rows, project / "reports/summary")
    table = list(csv.DictReader(open(out["csv"])))
    assert [(r["method"], r["graph"], r["subset"], r["config"]) for r in table] == [
        ("bm25", "gv3_orkg", "all", "default"), ("bm25", "gv3_orkg", "all", "tuned")]
    for r in table:
        assert r["n_questions"] == "5"
        for m in ("hit_at_10_triples", "map_at_10_triples"):
            assert float(r[f"{m}_ci_low"]) <= float(r[m]) <= float(r[f"{m}_ci_high"])
            assert len(r[m].split(".")[-1]) <= 4  # rounded: no float noise
    best = [r for r in table if r["best"] == "True"]
    other = [r for r in table if r["best"] != "True"]
    assert len(best) == 1 and best[0]["p_value_vs_best"] == ""
    assert float(best[0]["map_at_10_triples"]) >= float(other[0]["map_at_10_triples"])
    assert 0.0 <= float(other[0]["p_value_vs_best"]) <= 1.0
    ns = float(other[0]["p_value_vs_best"]) >= 0.05
    assert other[0]["not_significant_vs_best"] == str(ns)
    md = out["md"].read_text()
    assert "**best**" in md and ("≈" in md) == ns and "paired randomisation test" in md
    assert all(p.exists() and p.stat().st_size > 1000 for p in out["figures"])
    assert {p.suffix for p in out["figures"]} == {".png", ".svg", ".pdf"}
    assert float(best[0]["diff_from_best_map_at_10"]) == 0.0 and best[0]["diff_from_best_map_at_10_ci_low"] == ""
    d = float(other[0]["diff_from_best_map_at_10"])
    lo, hi = (float(other[0][f"diff_from_best_map_at_10_ci_{end}"]) for end in ("low", "high"))
    assert lo <= d <= hi
    assert d == pytest.approx(float(other[0]["map_at_10_triples"]) - float(best[0]["map_at_10_triples"]), abs=2e-4)
    tex = (project / "reports/summary/methods.tex").read_text()
    assert tex.count(r"\begin{table}") == 1 and "BM25 & default" in tex and "BM25 & tuned" in tex

    client = MlflowClient(tracking_uri(project))
    parent = client.get_run(out["mlflow_parent"])
    assert {a.path for a in client.list_artifacts(parent.info.run_id)} >= {"methods.csv", "methods.md",
                                                                          "methods.png", "methods.svg"}
    kids = client.search_runs([parent.info.experiment_id],
                              f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")
    assert sorted(k.data.tags["config"] for k in kids) == ["default", "tuned"]
    tuned = next(k for k in kids if k.data.tags["config"] == "tuned")
    assert tuned.data.tags["optuna_study"] == "fair-bm25-test"
    assert all(round(v, 4) == v for k in kids for v in k.data.metrics.values())
    # a rerun updates the same parent and children (runs resumed from their checkpoints)
    again = write_all(st, run_comparison(st, items, graphs=(("gv3_orkg", "gv3_orkg"),)), project / "reports/summary")
    assert again["mlflow_parent"] == out["mlflow_parent"]
    assert len(client.search_runs([parent.info.experiment_id],
                                  f"tags.`mlflow.parentRunId` = '{parent.info.run_id}'")) == 2


def test_best_row_and_p_values_per_graph_and_question_set():
    from hublab.evaluation import names
    from hublab.experiment.comparison.default_vs_tuned import Row, markdown
    from hublab.experiment.comparison.statistics import add_statistics

    def row(method, graph, maps):
        per = {names.MAP_AT_10: maps, names.HITS_AT_10: [1.0 if v else 0.0 for v in maps]}
        metrics = {m: sum(v) / len(v) for m, v in per.items()}
        metrics.update({names.MRR_AT_10: 0.0, names.RECALL_AT_10: 0.0, names.TRIPLES_PER_QUESTION: 20.0})
        return Row(method, graph, "all", "default", f"pipelines/{method}.yaml", len(maps), metrics, per)

    rows = [row("a", "g1", [1, 1, 1, 0]), row("b", "g1", [0, 0, 0, 0]), row("a", "g2", [0, 0, 0, 0]),
            row("b", "g2", [1, 0.5, 0, 1, 1][:4])]
    add_statistics(rows)
    assert [r.best for r in rows] == [True, False, False, True]
    assert rows[1].p_value == pytest.approx(0.25)  # the hand-computed exact test (test_significance.py)
    assert rows[2].p_value == pytest.approx(0.25)  # d = (1, .5, 0, 1): 2 of 8 sign patterns reach |mean| >= .625
    assert rows[0].ci[names.MAP_AT_10] == pytest.approx((0.25, 1.0))  # mirror of the hand-computed (0, 0, 0, 1)
    md = markdown(rows)
    assert md.count("| **best** |") == 2 and md.count(" ≈ |") == 2


def test_tuned_row_is_tested_against_its_own_default():
    """Did tuning change anything beyond noise: each tuned row gets the paired test against its method's default
    on the same questions (hand-computed exact test: d = (1, .5, 0, 1) -> p = 0.25); default rows get none."""
    from hublab.evaluation import names
    from hublab.experiment.comparison.default_vs_tuned import Row, csv_rows, markdown
    from hublab.experiment.comparison.statistics import add_statistics

    def row(method, config, maps):
        per = {names.MAP_AT_10: maps, names.HITS_AT_10: [1.0 if v else 0.0 for v in maps]}
        metrics = {m: sum(v) / len(v) for m, v in per.items()}
        metrics.update({names.MRR_AT_10: 0.0, names.RECALL_AT_10: 0.0, names.TRIPLES_PER_QUESTION: 20.0})
        return Row(method, "g", "all", config, f"pipelines/{method}.yaml", len(maps), metrics, per)

    rows = [row("a", "default", [0, 0, 0, 0]), row("a", "tuned", [1, 0.5, 0, 1]), row("b", "default", [1, 1, 1, 1])]
    add_statistics(rows)
    assert rows[0].p_vs_default is None and rows[2].p_vs_default is None
    assert rows[1].p_vs_default == pytest.approx(0.25)
    assert [d["p_value_tuned_vs_default"] for d in csv_rows(rows)] == ["", 0.25, ""]
    assert "| 0.250 ≈ |" in markdown(rows)  # one tuned row: Holm leaves its p as it is
