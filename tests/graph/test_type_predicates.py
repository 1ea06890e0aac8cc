"""Type predicates are a per-call setting, as label predicates are: a graph that states its classes with Wikidata's
P31 (or ``schema:additionalType``, ``dcterms:type``) gets its types with ``--type-predicate`` / ``type_predicates=``;
a list other than ``rdf:type`` alone is a graph model of its own (its own key, index folder and runs), while the
default keeps every key the graphs always had; ``graph check`` names the candidates on an untyped graph; and
``params.yaml: user_graphs.type_predicates`` is checked like every other key."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import yaml
from rdflib import RDF, URIRef
from typer.testing import CliRunner

from hublab.cli import app
from hublab.config import settings
from hublab.errors import InputError
from hublab.graph.backends import load_source, resolve_graph
from hublab.graph.source import (
    model_key,
    vocabulary,
    with_label_predicates,
    with_type_predicates,
)
from hublab.graph.vocabulary import DEFAULT_LABEL_PREDICATES, Vocabulary
from hublab.params_schema import load_params
from hublab.pipeline.resources import index_path
from hublab.preflight import check_run

ROOT = Path(__file__).resolve().parents[2]
P31 = "http://www.wikidata.org/prop/direct/P31"
ADDITIONAL_TYPE = "http://schema.org/additionalType"
ARTICLE = "http://www.wikidata.org/entity/Q13442814"
TITLE = "https://example.org/title"
#: typed by P31 only: no rdf:type statement at all
GRAPH = """@prefix wd: <http://www.wikidata.org/entity/> .
@prefix wdt: <http://www.wikidata.org/prop/direct/> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
wd:Q1 wdt:P31 wd:Q13442814 ; rdfs:label "Attention is all you need" ; wdt:P50 wd:Q10 ; wdt:P921 wd:Q20 .
wd:Q2 wdt:P31 wd:Q13442814 ; rdfs:label "BERT pre-training" ; wdt:P50 wd:Q11 ; wdt:P921 wd:Q20 .
wd:Q10 rdfs:label "Ashish Vaswani" .
wd:Q11 rdfs:label "Jacob Devlin" .
wd:Q20 rdfs:label "natural language processing" .
wd:Q13442814 rdfs:label "scholarly article" .
"""
QUESTIONS = [
    {"uid": "q1", "question": "Which scholarly article did Ashish Vaswani write?",
     "golden_triples": ["<http://www.wikidata.org/entity/Q1> <http://www.wikidata.org/prop/direct/P50> "
                        "<http://www.wikidata.org/entity/Q10> ."]},
    {"uid": "q2", "question": "Which scholarly article did Jacob Devlin write?",
     "golden_triples": ["<http://www.wikidata.org/entity/Q2> <http://www.wikidata.org/prop/direct/P50> "
                        "<http://www.wikidata.org/entity/Q11> ."]},
]


@pytest.fixture()
def project(tmp_path: Path) -> Path:
    from support.small_projects import small_project

    return small_project(tmp_path, GRAPH, QUESTIONS)


def test_a_graph_typed_by_p31_has_its_hub_type_only_with_the_type_predicate(project: Path):
    graph = str(project / "graph.ttl")
    st = settings(project)
    typed = with_type_predicates(st, [P31])
    plain_kg = load_source(resolve_graph(graph, st), st)
    typed_kg = load_source(resolve_graph(graph, typed), typed)
    assert plain_kg.entities_by_type(ARTICLE) == []
    assert sorted(e.text for e in typed_kg.entities_by_type(ARTICLE)) == ["Attention is all you need",
                                                                          "BERT pre-training"]
    # a type statement describes a node: P31 is an edge by default, no edge once it is a type predicate
    assert any(t.predicate == "P31" for t in plain_kg.triples())
    assert not any(t.predicate == "P31" for t in typed_kg.triples())
    # HubLink's preflight: the hub type has no instances by rdf:type, and has them by P31
    pipeline = project / "pipelines" / "hublink_local.yaml"
    with pytest.raises(InputError, match="has no instances"):
        check_run(pipeline, graph, None, settings=st, tracking=False, hub_types=[ARTICLE])
    checked = check_run(pipeline, graph, None, settings=typed, tracking=False, hub_types=[ARTICLE])
    assert checked.cfg.retriever_params["hub_types"] == [ARTICLE]


def test_the_default_keeps_every_key_and_another_list_is_a_graph_model_of_its_own(project: Path):
    graph = str(project / "graph.ttl")
    st = settings(project)
    sha = hashlib.sha256((project / "graph.ttl").read_bytes()).hexdigest()
    plain = resolve_graph(graph, st)
    # the default: the key a file always had (its bytes' sha256; no model part in the name or the index folder)
    assert model_key(st) == "" and vocabulary(st) == Vocabulary()
    assert (plain.digest, plain.name, plain.index_name) == (sha, f"graph-{sha[:12]}", f"graph-{sha[:12]}")
    assert index_path(st, graph, "bm25").parent.name == f"graph_{sha[:12]}__bm25"
    # rdf:type given explicitly is the default
    explicit = with_type_predicates(st, [str(RDF.type)])
    assert model_key(explicit) == "" and resolve_graph(graph, explicit) == plain
    # the label key is the one label predicates always had
    labelled = with_label_predicates(st, [TITLE])
    label_key = hashlib.sha256("\n".join(["labels", TITLE, *DEFAULT_LABEL_PREDICATES]).encode()).hexdigest()[:12]
    assert model_key(labelled) == label_key
    assert resolve_graph(graph, labelled).index_name.endswith(f"-labels-{label_key}")
    # a type list other than the default: a new key, digest (the run identity) and index folder
    typed = with_type_predicates(st, [P31])
    assert vocabulary(typed).type_predicates == (URIRef(P31), RDF.type)  # rdf:type stays, after P31
    src = resolve_graph(graph, typed)
    assert src.model and src.digest != plain.digest and src.index_name == f"{src.name}-types-{src.model}"
    assert index_path(typed, graph, "bm25") != index_path(st, graph, "bm25")
    both = resolve_graph(graph, with_type_predicates(labelled, [P31]))
    assert both.index_name.endswith(f"-labels-types-{both.model}") and len({both.model, src.model, label_key}) == 3
    # a node's types are every class any type predicate names: their order is not part of the key
    assert model_key(with_type_predicates(st, [P31, ADDITIONAL_TYPE])) == \
        model_key(with_type_predicates(st, [ADDITIONAL_TYPE, P31]))
    assert with_type_predicates(st, None) is st
    with pytest.raises(InputError, match="expected a predicate IRI") as bad:
        with_type_predicates(st, ["P31"])
    assert bad.value.field == "--type-predicate"


def test_a_cli_rerun_with_another_type_predicate_is_a_new_run_and_the_default_resumes_its_own(project: Path,
                                                                                               monkeypatch):
    monkeypatch.setenv("HUBLAB_ROOT", str(project))
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    args = ["run", "bm25", "--graph", str(project / "graph.ttl"), "--dataset", str(project / "q.jsonl"), "--json",
            "--no-carbon", "--no-trace", "--per-question"]
    runs = []
    for extra in ([], ["--type-predicate", P31], []):
        res = CliRunner().invoke(app, [*args, *extra])
        assert res.exit_code == 0, res.output
        doc = json.loads(res.stdout)
        runs.append((doc["run_id"], Path(doc["predictions"]).read_text()))
    (plain_id, plain), (typed_id, typed), (back_id, back) = runs
    assert typed_id != plain_id  # never the resumed run of the other graph model
    assert ", P31, " in plain and ", P31, " not in typed  # the new run searched the new model: P31 is no edge
    assert back_id == plain_id and back == plain  # the default again resumes its own run


def test_graph_check_names_the_type_candidates_and_the_option_applies_them(project: Path, monkeypatch):
    monkeypatch.setenv("HUBLAB_ROOT", str(project))
    cmd = ["graph", "check", str(project / "graph.ttl")]
    got = CliRunner().invoke(app, [*cmd, "--json"])
    assert got.exit_code == 0, got.output
    doc = json.loads(got.stdout)
    assert doc["types"] == [] and doc["type_candidates"][0] == {"predicate": P31, "typed_nodes": 2, "classes": 1}
    shown = CliRunner().invoke(app, cmd, env={"COLUMNS": "80"})
    assert f"--type-predicate {P31}" in shown.stdout, shown.stdout
    fixed = json.loads(CliRunner().invoke(app, [*cmd, "--json", "--type-predicate", P31]).stdout)
    assert [t["name"] for t in fixed["types"]] == [ARTICLE] and fixed["type_candidates"] == []
    assert fixed["suggested_hub_types"] == [ARTICLE]


@pytest.mark.parametrize(("value", "said"), [
    (f"'{P31}'", "list"),  # one IRI, not a list of them
    ("[P31]", "expected predicate IRIs"),
    (f"[{P31}, 'wdt P31']", "expected predicate IRIs"),
])
def test_params_yaml_type_predicates_is_one_located_error(tmp_path: Path, value: str, said: str):
    p = tmp_path / "params.yaml"
    p.write_text(f"paths: {{indices: models}}\nuser_graphs:\n  type_predicates: {value}\n")
    with pytest.raises(InputError) as got:
        load_params(p)
    errors = getattr(got.value, "errors", [got.value])
    assert len(errors) == 1, str(got.value)
    assert errors[0].field == "user_graphs.type_predicates" and errors[0].line == 3 and errors[0].file == str(p)
    assert said in str(errors[0]), str(errors[0])


def test_params_yaml_type_predicates_are_the_options_model(project: Path, tmp_path: Path):
    """The same predicates from params.yaml or from the option: the same vocabulary and the same key."""
    params = yaml.safe_load((project / "params.yaml").read_text())
    params.setdefault("user_graphs", {})["type_predicates"] = [P31]
    configured = tmp_path / "configured"
    configured.mkdir()
    (configured / "params.yaml").write_text(yaml.safe_dump(params))
    st = settings(configured)
    assert [str(p) for p in vocabulary(st).type_predicates] == [P31, str(RDF.type)]
    assert model_key(st) == model_key(with_type_predicates(settings(project), [P31])) != ""
    # the call's predicates come first, then the configured ones
    more = with_type_predicates(st, [ADDITIONAL_TYPE])
    assert more.section("user_graphs")["type_predicates"] == [ADDITIONAL_TYPE, P31, str(RDF.type)]
