"""A changed label setting is a new graph model: a rerun after ``--label-predicate`` (or the API's
``label_predicates=``) gives the new labels, in a run of its own and from an index of its own, with no manual step;
``graph check`` names the predicates that would label the unlabelled nodes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import hublab
from hublab.config import settings
from hublab.errors import InputError
from hublab.graph.backends import resolve_graph
from hublab.graph.source import with_label_predicates

ROOT = Path(__file__).resolve().parents[2]
TITLE = "https://example.org/title"
GRAPH = """@prefix ex: <https://example.org/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:d1 a ex:Dataset ; ex:title "Ocean temperatures 2020" ; ex:maintainer ex:p1 ; ex:topic ex:t1 .
ex:d2 a ex:Dataset ; ex:title "Glacier melt records" ; ex:maintainer ex:p2 ; ex:topic ex:t1 .
ex:p1 rdfs:label "Ada Lovelace" .
ex:p2 rdfs:label "Alan Turing" .
ex:t1 ex:title "Climate" .
"""
QUESTIONS = [
    {"uid": "q1", "question": "Which dataset does Ada Lovelace maintain?",
     "golden_triples": ["<https://example.org/d1> <https://example.org/maintainer> <https://example.org/p1> ."]},
    {"uid": "q2", "question": "Which dataset does Alan Turing maintain?",
     "golden_triples": ["<https://example.org/d2> <https://example.org/maintainer> <https://example.org/p2> ."]},
]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    from support.small_projects import small_project

    return small_project(tmp_path, GRAPH, QUESTIONS)


def _subjects(result) -> list[str]:
    return [t.split(", ")[0] for r in result.per_question for t in r["retrieved_context"]]


def test_the_label_setting_is_part_of_the_graphs_key_and_nothing_else_moves(project: Path):
    st = settings(project)
    plain = resolve_graph(str(project / "graph.ttl"), st)
    titled = resolve_graph(str(project / "graph.ttl"), with_label_predicates(st, [TITLE]))
    assert plain.model == "" and plain.index_name == plain.name  # the default list: the key files always had
    assert titled.model and titled.digest != plain.digest and titled.index_name != plain.index_name
    assert with_label_predicates(st, None) is st
    again = with_label_predicates(with_label_predicates(st, [TITLE]), [TITLE])
    assert again.section("user_graphs")["label_predicates"].count(TITLE) == 1
    with pytest.raises(InputError, match="expected a predicate IRI"):
        with_label_predicates(st, ["title"])


def test_a_rerun_with_another_label_predicate_gives_the_new_labels_in_a_new_run(project: Path):
    graph, questions = str(project / "graph.ttl"), str(project / "q.jsonl")
    before = hublab.run("bm25", graph, questions, root=project)
    assert any(s.endswith(":d1") for s in _subjects(before))  # no label predicate names d1: its local name
    after = hublab.run("bm25", graph, questions, root=project, label_predicates=[TITLE])
    assert after.mlflow_run_id != before.mlflow_run_id
    assert any(s.endswith(":Ocean temperatures 2020") for s in _subjects(after))
    assert not any(s.endswith(":d1") for s in _subjects(after))
    # the default setting again resumes its own run, with its own answers
    back = hublab.run("bm25", graph, questions, root=project)
    assert back.mlflow_run_id == before.mlflow_run_id and _subjects(back) == _subjects(before)


def test_graph_check_names_the_label_candidates_and_the_option_applies_them(project: Path, tmp_path: Path):
    env = {"HUBLAB_ROOT": str(project), "PYTHONPATH": str(ROOT / "src"), "HF_HUB_OFFLINE": "1",
           "PATH": "/usr/bin:/bin"}
    cmd = [sys.executable, "-m", "hublab.cli", "graph", "check", str(project / "graph.ttl")]
    out = subprocess.run([*cmd, "--json"], capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert got["label_candidates"] == [{"predicate": TITLE, "unlabelled_nodes": 3}]
    assert got["label_coverage"] == 0.4
    shown = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    assert f"--label-predicate {TITLE}" in shown.stdout
    fixed = subprocess.run([*cmd, "--json", "--label-predicate", TITLE], capture_output=True, text=True, env=env,
                           timeout=120)
    assert json.loads(fixed.stdout)["label_coverage"] == 1.0 and json.loads(fixed.stdout)["label_candidates"] == []


@pytest.mark.slow
def test_hublink_builds_an_index_of_its_own_for_the_new_labels(project: Path):
    """MiniLM and two HubLink index builds (a few seconds each): the case the stale index answered wrongly."""
    graph = str(project / "graph.ttl")
    hubs = ["https://example.org/Dataset"]
    old = hublab.load_pipeline("hublink_local", graph=graph, root=project, hub_types=hubs)
    question = "Who maintains Ocean temperatures 2020?"
    assert {t.subject for t in old.retrieve(question)} >= {"d1"}  # the local name: no label predicate names d1
    new = hublab.load_pipeline("hublink_local", graph=graph, root=project, hub_types=hubs, label_predicates=[TITLE])
    subjects = {t.subject for t in new.retrieve(question)}
    assert "Ocean temperatures 2020" in subjects and "d1" not in subjects
    folders = sorted(p.name for p in (project / "models").iterdir() if p.name.endswith("__hublink"))
    assert len(folders) == 2 and any("_labels_" in f for f in folders), folders


@pytest.mark.slow
def test_hub_type_given_wins_over_the_graphs_declared_hub_types(project: Path):
    """MiniLM and a HubLink index on six triples: ``--hub-type`` is what the run uses, also on a declared graph."""
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.pipeline.config import load_pipeline

    params = yaml.safe_load((project / "params.yaml").read_text())
    params["user_graphs"]["graphs"]["lab"] = {"source": "graph.ttl", "hub_types": ["https://example.org/Person"]}
    (project / "params.yaml").write_text(yaml.safe_dump(params))
    (project / "graph.ttl").write_text(GRAPH + "ex:p1 a ex:Person .\nex:p2 a ex:Person .\n")
    st = settings(project)
    given = ("https://example.org/Dataset",)
    runs = {}
    for hub_types in ((), given):
        cfg = load_pipeline(project / "pipelines" / "hublink_local.yaml")
        s = run_experiment(RunRequest(cfg, "lab", str(project / "q.jsonl"), st, progress=False, track_carbon=False,
                                      trace=False, hub_types=hub_types))
        runs[hub_types] = (cfg.retriever_params["hub_types"], s.config_hash)
    assert runs[()][0] == ["https://example.org/Person"]  # the graph's declared hub types
    assert runs[given][0] == list(given) and runs[given][1] != runs[()][1]


def test_the_cli_run_takes_label_predicates_and_reruns_with_the_new_labels(project: Path, monkeypatch):
    from typer.testing import CliRunner

    from hublab.cli import app

    monkeypatch.setenv("HUBLAB_ROOT", str(project))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    args = ["run", "bm25", "--graph", str(project / "graph.ttl"), "--dataset", str(project / "q.jsonl"), "--json",
            "--no-carbon", "--no-trace", "--per-question"]
    runs = {}
    for extra in ([], ["--label-predicate", TITLE]):
        res = CliRunner().invoke(app, [*args, *extra])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        runs[bool(extra)] = doc["run_id"], doc["predictions"]
    assert runs[True][0] != runs[False][0]
    titled = Path(runs[True][1]).read_text()
    assert "Ocean temperatures 2020, maintainer" in titled and ":d1, maintainer" in Path(runs[False][1]).read_text()
