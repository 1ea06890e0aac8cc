"""Your own questions (issue #21 item 6): a KGQA file needs only ``uid``, ``question`` and ``golden_triples``;
every other thesis column is optional, and ``run --help`` / docs/datasets.md show the format with three rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hublab.datasets.catalog import check_golden_ids
from hublab.datasets.kgqa_csv import load_kgqa_csv
from hublab.datasets.model import read_jsonl
from hublab.errors import InputError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my_questions.csv"
TRIPLE = "(R869393:authors list, has list element, L1522147:Georg Buchgeher)"


def test_the_shipped_three_row_example_loads_and_matches_the_export(gv3_orkg_graph):
    pairs = load_kgqa_csv(EXAMPLE)
    assert [p.uid for p in pairs] == ["q1", "q2", "q3"]
    assert [len(p.golden_triples) for p in pairs] == [1, 2, 2]
    assert all(p.golden_answer == "" and p.hops is None and p.semi_typed is None for p in pairs)
    assert check_golden_ids(pairs, gv3_orkg_graph, dataset="my_questions", graph_name="gv3_orkg") == 1.0


def test_the_docs_show_the_shipped_rows_and_the_help_points_to_them():
    from typer.testing import CliRunner

    from hublab.cli import app

    doc = (REPO / "docs" / "datasets.md").read_text()
    assert EXAMPLE.read_text().strip() in doc  # the documented rows are the shipped, tested file
    res = CliRunner().invoke(app, ["run", "--help"], env={"COLUMNS": "250"})
    assert res.exit_code == 0
    # the help names the columns and the page with the rows (at 80 columns three CSV rows took 11 lines of it)
    assert "columns uid, question and golden_triples" in res.output and "docs/datasets.md" in res.output


def test_a_minimal_jsonl_loads(tmp_path):
    p = tmp_path / "mine.jsonl"
    p.write_text(json.dumps({"uid": "a", "question": "Who?", "golden_triples": [TRIPLE]}) + "\n")
    (pair,) = read_jsonl(p)
    assert pair.golden_answer == "" and pair.golden_triples == [TRIPLE]


def test_optional_columns_may_be_empty_but_still_typed(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text(f'uid,question,golden_triples,hops,semi-typed,golden_answer\na,Who?,"[\'{TRIPLE}\']",,,\n'
                 f'b,Who?,"[\'{TRIPLE}\']",2,True,Georg\n')
    a, b = load_kgqa_csv(p)
    assert (a.hops, a.semi_typed, a.golden_answer) == (None, None, "")
    assert (b.hops, b.semi_typed, b.golden_answer) == (2, True, "Georg")
    p.write_text(f'uid,question,golden_triples,hops\na,Who?,"[\'{TRIPLE}\']",two\n')
    with pytest.raises(InputError, match="expected an integer") as err:
        load_kgqa_csv(p)
    assert (err.value.row, err.value.field) == (1, "hops")


def test_every_missing_required_column_is_named_at_once(tmp_path):
    p = tmp_path / "mine.csv"
    p.write_text("question,golden_answer\nWho?,Georg\n")
    with pytest.raises(InputError, match=r"missing column\(s\) \['uid', 'golden_triples'\]"):
        load_kgqa_csv(p)
    p.write_text("uid,question,golden_triples\na,,\"['x']\"\n")
    with pytest.raises(InputError, match="must not be empty") as err:
        load_kgqa_csv(p)
    assert (err.value.row, err.value.field) == (1, "question")


@pytest.mark.slow  # a whole `hublab run` with an MLflow store
def test_hublab_run_on_the_minimal_file(tmp_path, shared, gv3_orkg_graph, monkeypatch):
    from typer.testing import CliRunner

    from conftest import make_project
    from hublab.cli import app

    make_project(tmp_path / "proj", shared, gv3_orkg_graph, load_kgqa_csv(EXAMPLE), monkeypatch)
    monkeypatch.chdir(tmp_path / "proj")
    (tmp_path / "proj" / "pipelines").mkdir()
    (tmp_path / "proj" / "pipelines" / "bm25.yaml").write_text((REPO / "pipelines" / "bm25.yaml").read_text())
    res = CliRunner().invoke(app, ["run", "pipelines/bm25.yaml", "--graph", "gv3_orkg", "--dataset", str(EXAMPLE),
                                   "--no-carbon", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout[res.stdout.index("{"):])
    assert out["n_questions"] == 3 and out["metrics"]["n_errors"] == 0
    assert out["metrics"]["hit_at_10_triples"] > 0  # BM25 finds the author triples of q2/q3
