"""``hublab data register``: the KGQA sets as MLflow evaluation datasets, one per content version; unchanged data
adds nothing; a registered set feeds ``mlflow.genai.evaluate`` as it is."""

from __future__ import annotations

from pathlib import Path

import pytest

from hublab.evaluation import names
from hublab.mlflow_eval import retrieval_scorers

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "my_questions.csv"

pytestmark = pytest.mark.slow  # an MLflow store and an evaluation


@pytest.fixture()
def project(tmp_path, shared, monkeypatch) -> Path:
    from conftest import shared_params_project

    return shared_params_project(tmp_path, shared, monkeypatch, mlflow_store=True)


def _register(*args: str) -> str:
    from typer.testing import CliRunner

    from hublab.cli import app

    res = CliRunner().invoke(app, ["data", "register", *args])
    assert res.exit_code == 0, res.output
    return res.output


def test_register_is_versioned_by_content_and_feeds_evaluate(project):
    import mlflow
    from mlflow.genai.datasets import search_datasets

    first = _register("--dataset", str(EXAMPLE), "--graph", "gv3_orkg")
    assert first.startswith("registered: my_questions@") and "(3 questions" in first
    assert _register("--dataset", str(EXAMPLE), "--graph", "gv3_orkg").startswith("unchanged: ")
    changed = project / "my_questions.csv"
    changed.write_text(EXAMPLE.read_text().replace("in 2017?", "in the year 2017?"))
    assert _register("--dataset", str(changed), "--graph", "gv3_orkg").startswith("registered: ")

    found = search_datasets(filter_string="tags.kgqa_set = 'my_questions'")
    assert len(found) == 2
    ds = next(d for d in found if d.name == first.split()[1])
    df = ds.to_df()
    assert len(df) == 3 and ds.tags["graph"] == "gv3_orkg" and ds.tags["n_questions"] == "3"
    assert sorted(t["uid"] for t in df["tags"]) == ["q1", "q2", "q3"]
    golden = {row["inputs"]["question"]: row["expectations"]["golden_triples"] for _, row in df.iterrows()}

    def retrieve(question: str) -> list[str]:  # a user's function: only the question comes in
        return golden[question][:1]

    mlflow.set_experiment("kgqa-datasets")  # the store `data register` used, not an earlier test's experiment
    result = mlflow.genai.evaluate(data=ds, predict_fn=retrieve, scorers=retrieval_scorers((names.RECALL,)))
    assert result.metrics[f"{names.RECALL}/mean"] == pytest.approx((1 + 0.5 + 0.5) / 3, abs=0.01)


def test_an_incomplete_registration_is_registered_again(project):
    """A set whose records never all arrived (an earlier registration failed half-way) is not "unchanged": it is
    deleted and registered again, complete."""
    from mlflow.genai.datasets import create_dataset, search_datasets

    from hublab.mlflow_eval.data import load_questions
    from hublab.mlflow_eval.register import digest, records

    name = f"my_questions@{digest(records(load_questions(str(EXAMPLE)), 'gv3_orkg'))}"
    broken = create_dataset(name=name, tags={"kgqa_set": "my_questions"})  # created, records never merged
    out = _register("--dataset", str(EXAMPLE), "--graph", "gv3_orkg")
    assert out.startswith(f"registered: {name}") and "(3 questions" in out
    (ds,) = search_datasets(filter_string=f"name = '{name}'")
    assert ds.dataset_id != broken.dataset_id and ds.tags["complete"] == "true" and len(ds.to_df()) == 3
    assert _register("--dataset", str(EXAMPLE), "--graph", "gv3_orkg").startswith("unchanged: ")


def test_a_file_needs_its_graph(project):
    from typer.testing import CliRunner

    from hublab.cli import app

    res = CliRunner().invoke(app, ["data", "register", "--dataset", str(EXAMPLE)])
    assert res.exit_code != 0 and "--graph" in res.output
