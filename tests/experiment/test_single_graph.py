"""`hublab report compare`: several methods on the same questions in one table, thesis numbers alongside."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # runs DiFaR (MiniLM over the graph) through the CLI


@pytest.fixture()
def project(tmp_path: Path, shared: Path, gv3_orkg_graph, monkeypatch) -> Path:
    from conftest import make_project
    from hublab.config import _load_params
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.graph.rdf import RdfKnowledgeGraph

    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")[:3]
    papers = [e.uid for e in gv3_orkg_graph.entities_by_type("Paper")][:15] + ["R872741"]
    small = RdfKnowledgeGraph.from_triples([t for p in papers for t in gv3_orkg_graph.subgraph(p)])
    root = make_project(tmp_path / "proj", shared, small, pairs, monkeypatch)
    (root / "pipelines").mkdir()
    repo = Path(__file__).resolve().parents[2] / "pipelines"
    for name in ("bm25.yaml", "difar_local.yaml"):
        (root / "pipelines" / name).write_text((repo / name).read_text())
    monkeypatch.chdir(root)
    yield root
    _load_params.cache_clear()


def recall_by_hand(project: Path, run_id: str) -> float:
    """Mean per-question Recall (exact triple strings, rounded to 2 places as the reference does) of the run's
    checkpointed records."""
    import json

    (state,) = [f for f in (project / "outputs" / "runs").glob("*/state.json") if run_id in f.read_text()]
    recs = [json.loads(x) for x in (state.parent / "predictions.jsonl").read_text().splitlines() if x.strip()]
    per_q = [round(len(set(r["retrieved_context"]) & set(r["golden_triples"])) / len(set(r["golden_triples"])), 2)
             for r in recs]
    assert len(per_q) == 3
    return sum(per_q) / len(per_q)


def test_compare_table_has_every_method_and_thesis_columns(project: Path):
    import csv
    import json

    from typer.testing import CliRunner

    from hublab.cli import app

    res = CliRunner().invoke(app, ["report", "compare", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon",
                                   "--json"])
    assert res.exit_code == 0, res.output
    run_of = {r["method"]: r["mlflow_run"] for r in json.loads(res.output[res.output.index("{"):])["rows"]}
    rows = list(csv.DictReader(open(project / "reports/compare_gv3_orkg/compare.csv")))
    assert {r["method"] for r in rows} == {"bm25", "difar"}
    for r in rows:
        assert r["n_questions"] == "3"
        assert float(r["Recall"]) == pytest.approx(recall_by_hand(project, run_of[r["method"]]), abs=1e-9), r
        # the written report holds what every machine computes alike; seconds and emissions go beside it
        assert not {"mlflow_run", "s/question", "index build s", "kgCO2e/question"} & set(r), sorted(r)
    timings = list(csv.DictReader(open(project / "reports/compare_gv3_orkg/timings.csv")))
    assert {t["pipeline"] for t in timings} == {r["pipeline"] for r in rows} and all(t["s/question"] for t in timings)
    difar = next(r for r in rows if r["method"] == "difar")
    assert float(difar["thesis Recall"]) == pytest.approx(0.523)  # DiFaR (GV3), thesis Table 10.5
    assert next(r for r in rows if r["method"] == "bm25").get("thesis Recall") in ("", None)
    md = (project / "reports/compare_gv3_orkg/compare.md").read_text()
    assert "| difar |" in md and "thesis Recall" in md


def test_compare_logs_one_parent_with_a_child_per_method_and_per_thesis_method(project: Path):
    """MLflow layout: a parent run with the table artifacts; nested children with the headline metrics, ours
    (``source=hublab``) and the thesis's (``source=thesis``) under the same metric keys. A second identical
    invocation updates the same runs instead of adding new ones."""
    import json

    from mlflow.tracking import MlflowClient
    from typer.testing import CliRunner

    from hublab.cli import app
    from hublab.tracking.mlflow_log import tracking_uri

    args = ["report", "compare", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon", "--json"]
    outs = []
    for _ in range(2):
        res = CliRunner().invoke(app, args)
        assert res.exit_code == 0, res.output
        outs.append(json.JSONDecoder().raw_decode(res.output[res.output.index("{"):])[0])
    parent_id = outs[0]["mlflow_comparison_run"]
    assert outs[1]["mlflow_comparison_run"] == parent_id  # the same comparison: the same parent
    client = MlflowClient(tracking_uri(project))
    parent = client.get_run(parent_id)
    assert parent.info.status == "FINISHED" and parent.data.params["graph"] == "gv3_orkg"
    assert {a.path for a in client.list_artifacts(parent_id)} == {"compare.csv", "compare.md"}
    exp = parent.info.experiment_id
    children = client.search_runs([exp], f"tags.`mlflow.parentRunId` = '{parent_id}'")
    by_source: dict[str, dict[str, object]] = {}
    for c in children:
        by_source.setdefault(c.data.tags["source"], {})[c.data.tags["hublab.method"]] = c
    assert set(by_source["hublab"]) == {"bm25", "difar"}
    assert set(by_source["thesis"]) == {"difar", "hublink", "fidelis", "mindmap"}  # GV3 rows of Table 10.5
    assert len(children) == 6  # the second invocation added no runs
    assert len(client.search_runs([exp], "tags.`hublab.role` = 'comparison'")) == 1
    rows = {r["method"]: r for r in outs[1]["rows"]}
    for method, child in by_source["hublab"].items():
        m = child.data.metrics
        assert m["recall_triples"] == pytest.approx(rows[method]["Recall"])
        assert m["map_at_10_triples"] == pytest.approx(rows[method]["MAP@10"])
        assert child.data.tags["hublab.method_run_id"] == rows[method]["mlflow_run"]
        assert child.info.status == "FINISHED"
    thesis_difar = by_source["thesis"]["difar"].data
    assert thesis_difar.metrics["recall_triples"] == pytest.approx(0.523)
    assert thesis_difar.metrics["map_at_10_triples"] == pytest.approx(0.230)
    assert set(thesis_difar.metrics) <= set(by_source["hublab"]["difar"].data.metrics)  # same keys: comparable
