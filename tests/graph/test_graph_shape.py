"""``hublab graph check`` names the defaults that assume ORKG's shape and look wrong for a graph: each diagnosis
appears on a small graph of the shape it is about, and none on the thesis's GV3 export."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pytest
import yaml

from hublab.graph.base import KnowledgeGraph
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.shape import ShapeDefaults, shape_report
from hublab.graph.store import open_store

REPO = Path(__file__).resolve().parents[2]
PREFIXES = """@prefix ex: <https://example.org/> .
@prefix dcterms: <http://purl.org/dc/terms/> .
@prefix skos: <http://www.w3.org/2004/02/skos/core#> .
@prefix foaf: <http://xmlns.com/foaf/0.1/> .
@prefix xsd: <http://www.w3.org/2001/XMLSchema#> .
"""
ARTICLE = "https://example.org/Article"
ALBUM = "https://example.org/Album"


def skos_catalogue() -> str:
    """Articles tagged with the leaves of a four-level SKOS concept tree (root, 3, 9, 27 concepts)."""
    lines = [PREFIXES, 'ex:c a skos:Concept ; skos:prefLabel "computing" .']
    level = ["c"]
    for _ in range(3):
        nxt = []
        for parent in level:
            for i in range(3):
                child = f"{parent}{i}"
                lines.append(f'ex:{child} a skos:Concept ; skos:prefLabel "topic {child}" ; skos:broader ex:{parent} .')
                nxt.append(child)
        level = nxt
    for a in range(30):
        tags = f"ex:{level[a % 27]}, ex:{level[(a * 7 + 3) % 27]}"
        lines.append(f'ex:a{a} a ex:Article ; dcterms:title "Article {a}" ; dcterms:subject {tags} ; '
                     f'dcterms:creator ex:p{a % 6} ; dcterms:date "20{10 + a % 10}"^^xsd:gYear .')
    lines += [f'ex:p{p} a foaf:Person ; foaf:name "Person {p}" .' for p in range(6)]
    return "\n".join(lines) + "\n"


def music_graph() -> str:
    """Albums whose labels and artists have subgraphs of their own, shared by every album that names them."""
    lines = [PREFIXES]
    for lab in range(2):
        lines.append(f'ex:label{lab} a ex:Label ; dcterms:title "Label {lab}" ; ex:country ex:country{lab} ; '
                     f'ex:founded "19{50 + lab}" ; ex:parent ex:group{lab} .')
        lines.append(f'ex:country{lab} dcterms:title "Country {lab}" ; ex:continent ex:europe ; '
                     f'ex:capital "City {lab}" .')
        lines.append(f'ex:group{lab} dcterms:title "Group {lab}" ; ex:ceo ex:ceo{lab} ; ex:revenue "{lab}00" .')
    for art in range(4):
        members = ", ".join(f"ex:m{art}_{k}" for k in range(3))
        lines.append(f'ex:artist{art} a ex:Artist ; dcterms:title "Artist {art}" ; ex:member {members} ; '
                     f'ex:origin ex:country{art % 2} .')
        lines += [f'ex:m{art}_{k} dcterms:title "Member {art}.{k}" ; ex:born "19{60 + k}" ; ex:plays ex:instr{k} .'
                  for k in range(3)]
    for alb in range(20):
        lines.append(f'ex:album{alb} a ex:Album ; dcterms:title "Album {alb}" ; ex:releasedBy ex:label{alb % 2} ; '
                     f'ex:byArtist ex:artist{alb % 4} ; ex:year "{2000 + alb}" .')
    return "\n".join(lines) + "\n"


#: the backend the small graphs are read into (both: the report is measured on the store's integer tables)
_BACKEND = {"kind": "memory"}


@pytest.fixture(autouse=True, params=["memory", "store"])
def backend(request):
    _BACKEND["kind"] = request.param
    yield request.param
    _BACKEND["kind"] = "memory"


def _load(tmp_path: Path, text: str, name: str = "g.ttl") -> KnowledgeGraph:
    path = tmp_path / name
    path.write_text(text)
    if _BACKEND["kind"] == "store":
        return open_store(path, tmp_path / f"store-{uuid.uuid4().hex}", name="g")
    return RdfKnowledgeGraph.load(path)


def _params(report) -> list[str]:
    return [f.parameter for f in report.findings]


def test_the_thesis_graph_raises_no_diagnosis(gv3_orkg_graph):
    report = shape_report(gv3_orkg_graph)
    assert report.hubs > 100 and report.findings == []
    assert report.measures["leaf_share"] > 0.5 and report.measures["shared_inner_share"] < 0.05


def test_a_concept_hierarchy_is_told_that_the_leaf_boost_favours_literals(tmp_path: Path):
    report = shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE])
    boost = next(f for f in report.findings if f.parameter == "output_value_boost")
    assert boost.default == "1.0" and boost.methods == "HubLink"
    assert "shared node" in boost.evidence and "subject" in boost.evidence and "broader" in boost.evidence
    assert "shape_space" in boost.remedy


def test_topic_entities_far_from_the_hubs_name_max_retrieval_level(tmp_path: Path):
    report = shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE])
    level = next(f for f in report.findings if f.parameter == "max_retrieval_level")
    assert "more than 2 hops" in level.evidence and "up to 4" in level.evidence
    # a deeper walk is enough: the finding goes
    deeper = shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE], defaults=ShapeDefaults(max_retrieval_level=4))
    assert "max_retrieval_level" not in _params(deeper)


def test_shared_subgraphs_name_max_hub_path_length(tmp_path: Path):
    report = shape_report(_load(tmp_path, music_graph()), [ALBUM])
    paths = next(f for f in report.findings if f.parameter == "max_hub_path_length")
    assert paths.default == "-1" and "hubs share their subgraphs" in paths.evidence
    assert report.measures["hubs_per_triple"] >= 3
    assert "max_hub_path_length" not in _params(shape_report(_load(tmp_path, music_graph()), [ALBUM],
                                                             defaults=ShapeDefaults(max_hub_path_length=2)))


def test_a_missing_paper_type_names_the_candidates_and_measures_with_the_first(tmp_path: Path):
    report = shape_report(_load(tmp_path, skos_catalogue()))
    hub = next(f for f in report.findings if f.parameter == "hub_types")
    assert hub.evidence == "no node of type Paper"
    assert "--hub-type" in hub.remedy and ARTICLE in hub.remedy
    assert report.measured_with == [ARTICLE] and "output_value_boost" in _params(report)
    # no rdf:type at all: nothing to suggest, and the reason is said
    bare = shape_report(_load(tmp_path, PREFIXES + 'ex:a ex:p ex:b . ex:b ex:q "x" .\n', "bare.ttl"))
    assert "no rdf:type statement" in bare.findings[0].remedy


def test_hub_types_that_miss_most_of_the_graph_are_named(tmp_path: Path):
    report = shape_report(_load(tmp_path, skos_catalogue()), ["http://xmlns.com/foaf/0.1/Person"])
    hub = next(f for f in report.findings if f.parameter == "hub_types")
    assert "lie on no path from a hub" in hub.evidence
    assert "hub_types" not in _params(shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE]))


def test_a_node_with_more_edges_than_max_neighbours_is_named(tmp_path: Path):
    items = "\n".join(f'ex:i{k} a ex:Item ; dcterms:title "item {k}" ; ex:madeIn ex:germany .' for k in range(520))
    report = shape_report(_load(tmp_path, PREFIXES + items + '\nex:germany dcterms:title "Germany" .\n'),
                          ["https://example.org/Item"])
    busy = next(f for f in report.findings if f.parameter == "max_neighbours")
    assert "Germany, 520" in busy.evidence and "ToG" in busy.methods
    assert "max_neighbours" not in _params(shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE]))


def test_unlabelled_nodes_name_their_likely_label_predicate(tmp_path: Path):
    items = "\n".join(f'ex:i{k} a ex:Item ; ex:heading "item {k}" ; ex:madeIn ex:c{k % 3} .' for k in range(12))
    report = shape_report(_load(tmp_path, PREFIXES + items + "\n"), ["https://example.org/Item"])
    labels = next(f for f in report.findings if f.parameter.startswith("user_graphs.label_predicates"))
    assert "https://example.org/heading" in labels.remedy
    assert not any(f.parameter.startswith("user_graphs") for f in
                   shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE]).findings)


def test_derived_ids_and_no_paper_name_the_unit_text_defaults(tmp_path: Path, gv3_orkg_graph):
    report = shape_report(_load(tmp_path, skos_catalogue()), [ARTICLE])
    assert {"triple_text", "context"} <= set(_params(report))
    assert not {"triple_text", "context"} & set(_params(shape_report(gv3_orkg_graph)))


def test_the_defaults_checked_are_the_pipelines_defaults():
    """The values the checks compare against are the shipped pipelines' (a pipeline edited, the check follows)."""
    from hublab.retrievers.components.reasoning import ReasoningParams

    d = ShapeDefaults()
    hublink = yaml.safe_load((REPO / "pipelines/hublink_local.yaml").read_text())["retriever"]["params"]
    assert tuple(hublink["hub_types"]) == d.hub_types
    for key in ("output_value_boost", "max_retrieval_level", "max_hub_path_length", "output_expand_hubs"):
        assert hublink[key] == getattr(d, key), key
    for name in ("fidelis_local", "mindmap_local", "tog_local", "structgpt_local"):
        params = yaml.safe_load((REPO / f"pipelines/{name}.yaml").read_text())["retriever"]["params"]
        assert params.get("max_neighbours", ReasoningParams.max_neighbours) == d.max_neighbours, name
    for name in ("bm25", "vss", "hybrid", "difar_local", "four_step_focus_local"):
        params = yaml.safe_load((REPO / f"pipelines/{name}.yaml").read_text())["retriever"]["params"]
        assert params.get("triple_text", "ids") == d.triple_text, name


def test_the_checks_are_fast_on_a_thesis_sized_graph(gv3_orkg_graph):
    """Under a second on GV3 and on 5,000 triples where every hub reaches most of the graph (the walks are capped)."""
    import random

    from hublab.graph.model import Knowledge, Triple

    rng = random.Random(0)
    hubs = [Knowledge(f"R{i}", f"hub {i}", ("Hub",)) for i in range(500)]
    others = [Knowledge(f"R{1000 + i}", f"node {i}") for i in range(1000)]
    dense = [Triple(h, "p", rng.choice(others)) for h in hubs for _ in range(2)]
    dense += [Triple(rng.choice(others), f"q{rng.randint(0, 9)}", rng.choice(others)) for _ in range(4000)]
    for kg, hub_types in ((gv3_orkg_graph, None), (RdfKnowledgeGraph.from_triples(dense), ["Hub"])):
        started = time.perf_counter()
        shape_report(kg, hub_types)
        assert time.perf_counter() - started < 1.0


def test_graph_check_prints_and_writes_the_diagnoses(tmp_path: Path, shared: Path, monkeypatch):
    from typer.testing import CliRunner

    from conftest import shared_params_project
    from hublab.cli.app import app

    shared_params_project(tmp_path / "proj", shared, monkeypatch)
    graph = tmp_path / "catalogue.ttl"
    graph.write_text(skos_catalogue())
    out = CliRunner().invoke(app, ["graph", "check", str(graph), "--hub-type", ARTICLE, "--json"])
    assert out.exit_code == 0, out.output
    shape = json.loads(out.output)["orkg_shaped_defaults"]
    assert shape["hub_types"] == [ARTICLE] and shape["hubs"] == 30
    assert "output_value_boost" in [f["parameter"] for f in shape["findings"]]
    text = CliRunner().invoke(app, ["graph", "check", str(graph)])
    assert text.exit_code == 0, text.output
    assert "no node of type Paper" in text.output and "output_value_boost = 1.0 (HubLink)" in text.output
    assert f"measured with the candidate {ARTICLE}" in text.output


def test_graph_check_measures_with_the_hub_types_the_graph_declares(tmp_path: Path, monkeypatch):
    """A graph declared in params.yaml with its hub types is checked with them, as a run would use them."""
    from typer.testing import CliRunner

    from hublab.cli.app import app
    from hublab.config import _load_params

    root = tmp_path / "project"
    root.mkdir()
    (root / "catalogue.ttl").write_text(skos_catalogue())
    params = yaml.safe_load((REPO / "params.yaml").read_text())
    params["user_graphs"] = {"graphs": {"catalogue": {"source": "catalogue.ttl", "hub_types": [ARTICLE]}}}
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    monkeypatch.chdir(root)
    _load_params.cache_clear()
    try:
        out = CliRunner().invoke(app, ["graph", "check", "catalogue", "--json"])
    finally:
        _load_params.cache_clear()
    assert out.exit_code == 0, out.output
    shape = json.loads(out.output)["orkg_shaped_defaults"]
    assert shape["hub_types"] == shape["measured_with"] == [ARTICLE]
    assert "hub_types" not in [f["parameter"] for f in shape["findings"]]
