"""`hublab compare`: the fair comparison on a user's own graph (examples/graphs/catalogue: a flat schema.org
software catalogue in Turtle, questions with N-Triples golden triples), typed from the user's folder: the split is
written and respected, every method is tuned per fold on the selection questions only, and the table, the chart
and the MLflow comparison come out of the thesis comparison's code."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "graphs" / "catalogue"
HUB = "https://schema.org/SoftwareApplication"


@pytest.fixture()
def mine(tmp_path: Path, monkeypatch) -> Path:
    from conftest import share_embedding_cache

    root = tmp_path / "project"
    (root / "pipelines").mkdir(parents=True)
    (root / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    for name in ("hublink_local", "bm25", "vss"):
        (root / "pipelines" / f"{name}.yaml").write_text((ROOT / "pipelines" / f"{name}.yaml").read_text())
    share_embedding_cache(root)
    folder = tmp_path / "mine"
    folder.mkdir()
    for f in EXAMPLE.iterdir():
        if f.name.startswith(("graph.", "questions.")):
            (folder / f.name).write_bytes(f.read_bytes())
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.chdir(folder)
    return folder


def _questions(folder: Path) -> str:
    return next(p.name for p in folder.iterdir() if p.name.startswith("questions."))


def _invoke(args: list[str]):
    from typer.testing import CliRunner

    from hublab.cli import app

    return CliRunner().invoke(app, args)


@pytest.mark.slow  # two methods x 2 folds x 2 trials with MiniLM and HubLink indices (minutes: a fold's studies
# build HubLink indices for the shape factors they draw, and the end-to-end path is what is under test): full tier
def test_compare_on_a_users_graph_splits_tunes_per_fold_and_writes_every_format(mine: Path):
    questions = _questions(mine)
    res = _invoke(["compare", "--graph", "graph.ttl", "--dataset", questions, "--hub-type", HUB,
                   "--pipelines", "bm25,hublink_local", "--n-trials", "2", "--folds", "2", "--out", "out",
                   "--format", "latex"])
    assert res.exit_code == 0, res.output
    out = mine / "out"
    # the expected cost comes first, then one line per method and study
    assert res.output.index("Expected work") < res.output.index("fold 1/2 · bm25:")
    assert "\\begin{table}" in res.output  # --format latex prints the LaTeX table

    from hublab.config import settings
    from hublab.datasets.catalog import load_dataset

    uids = {p.uid for p in load_dataset(settings(), str(mine / questions))}
    folds = json.loads((out / "split.json").read_text())
    assert len(folds) == 2
    for fold in folds:
        assert not set(fold["select"]) & set(fold["report"])  # no uid both selected and reported
        assert set(fold["select"]) | set(fold["report"]) == uids
    assert sorted(u for f in folds for u in f["report"]) == sorted(uids)  # each question reported once

    # each fold's studies saw only its selection questions
    for i, fold in enumerate(folds, start=1):
        selected = {json.loads(line)["uid"] for line in (out / "folds" / str(i) / "select.jsonl").open()}
        assert selected == set(fold["select"])

    rows = list(csv.DictReader((out / "methods.csv").open()))
    for col in ("method", "variant", "map_at_10", "map_at_10_low", "map_at_10_high", "hits_at_10", "n_questions"):
        assert col in rows[0], col
    pooled = [r for r in rows if r["subset"] == "pooled"]
    assert {(r["method"], r["variant"]) for r in pooled} == {(m, v) for m in ("bm25", "hublink")
                                                             for v in ("default", "tuned")}
    for r in pooled:
        assert int(r["n_questions"]) == len(uids)
        assert float(r["map_at_10_low"]) <= float(r["map_at_10"]) <= float(r["map_at_10_high"])
    assert len([r for r in rows if r["subset"].startswith("fold")]) == 4 * 2  # per fold too
    assert sum(r["best"] == "True" for r in pooled) == 1
    for name in ("methods.md", "methods.tex", "methods.png", "methods.svg", "methods.pdf"):
        assert (out / name).stat().st_size > 0, name
    assert "cross-validation" in (out / "methods.md").read_text()
    # each fold's studies keep their trials; only the comparison is charted (dozens of small studies' charts cost
    # seconds each)
    assert list((out / "folds").rglob("trials.json")) and not list((out / "folds").rglob("*.png"))

    import mlflow

    from hublab.config import settings as load_settings

    mlflow.set_tracking_uri(load_settings().tracking_uri())
    exp = mlflow.get_experiment_by_name(next(line.split("(experiment ")[1].rstrip(")")
                                             for line in res.output.splitlines() if "(experiment " in line))
    runs = mlflow.search_runs([exp.experiment_id], filter_string="tags.`hublab.role` = 'comparison'",
                              output_format="list")
    assert len(runs) == 1


@pytest.mark.slow  # two comparisons (2 methods x 2 folds x 2 trials, MiniLM), one in two spawned job processes
def test_studies_in_two_job_processes_give_the_comparison_one_process_gives(mine: Path):
    """All folds' studies share one pool; a method's folds run in one process, so its Milvus Lite index (VSS: one
    index file, opened by one process at a time) is never asked for by two (it was, when the folds' studies were
    handed to whichever process was free). The studies are seeded: the table and tuned files are the same."""
    questions = _questions(mine)
    common = ["compare", "--graph", "graph.ttl", "--dataset", questions, "--pipelines", "vss,bm25", "--n-trials", "2",
              "--folds", "2"]
    # two job processes first: the one-process run leaves this (test) process holding the indices it opened
    two = _invoke([*common, "--out", "two", "--jobs", "2", "--storage", f"sqlite:///{mine / 'two.db'}",
                   "--experiment", "compare-two"])
    assert two.exit_code == 0, two.output
    one = _invoke([*common, "--out", "one", "--jobs", "1", "--storage", f"sqlite:///{mine / 'one.db'}"])
    assert one.exit_code == 0, one.output
    assert "fold 2/2 · vss:" in two.output and "fold 2/2 · bm25:" in two.output  # each study is told as it ends

    def same(path: str, run: str) -> str:  # the run's own folder and storage named alike
        return (mine / run / path).read_text().replace(f"{run}/", "RUN/").replace(f"{run}.db", "RUN.db")

    assert same("methods.csv", "one") == same("methods.csv", "two")
    for fold in ("1", "2"):
        for method in ("vss", "bm25"):
            tuned = f"folds/{fold}/tuned/{method}.yaml"
            assert same(tuned, "one") == same(tuned, "two"), (fold, method)


def test_an_output_folder_that_is_a_file_is_refused_before_any_work(mine: Path):
    (mine / "taken").write_text("")
    for cmd in (["compare"],):
        res = _invoke([*cmd, "--graph", "graph.ttl", "--dataset", _questions(mine), "--hub-type", HUB,
                       "--out", "taken"])
        from hublab.errors import InputError

        assert isinstance(res.exception, InputError), res.output  # the CLI's main prints it in one line, exit 2
        assert "taken" in str(res.exception) and "is not a directory" in str(res.exception)
        assert not (mine / "split.json").exists()


def test_format_and_budget_are_checked_first(mine: Path):
    res = _invoke(["compare", "--graph", "graph.ttl", "--dataset", _questions(mine), "--format", "docx"])
    assert res.exit_code == 2 and "expected md, latex or csv" in res.output
    res = _invoke(["compare", "--graph", "graph.ttl", "--dataset", _questions(mine), "--n-trials", "0"])
    assert res.exit_code == 2


def test_pipelines_all_means_every_method_and_names_resolve_to_files(mine: Path):
    from hublab.cli.compare import resolved_pipelines
    from hublab.config import settings
    from hublab.retrievers.registry import default_pipelines

    st = settings()
    every = default_pipelines(st.root)
    assert every and resolved_pipelines(st, [Path("all")]) == every == resolved_pipelines(st, None)
    assert [p.name for p in resolved_pipelines(st, [Path("bm25,hublink_local")])] == ["bm25.yaml",
                                                                                       "hublink_local.yaml"]
