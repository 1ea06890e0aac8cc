"""`hublab report compare`: several methods on the same questions in one table, thesis numbers alongside."""

from __future__ import annotations

from pathlib import Path

import pytest


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


def test_compare_table_has_every_method_and_thesis_columns(project: Path):
    import csv

    from typer.testing import CliRunner

    from hublab.cli import app

    res = CliRunner().invoke(app, ["report", "compare", "--graph", "gv3_orkg", "--dataset", "gv3_orkg", "--no-carbon"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(open(project / "reports/compare_gv3_orkg/compare.csv")))
    assert {r["method"] for r in rows} == {"bm25", "difar"}
    for r in rows:
        assert r["n_questions"] == "3" and 0.0 <= float(r["Recall"]) <= 1.0
    difar = next(r for r in rows if r["method"] == "difar")
    assert float(difar["thesis Recall"]) == pytest.approx(0.523)  # DiFaR (GV3), thesis Table 10.5
    assert next(r for r in rows if r["method"] == "bm25").get("thesis Recall") in ("", None)
    md = (project / "reports/compare_gv3_orkg/compare.md").read_text()
    assert "| difar |" in md and "thesis Recall" in md
