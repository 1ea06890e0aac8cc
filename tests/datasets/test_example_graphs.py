"""The example graphs of other shapes than ORKG's (examples/graphs/): a flat schema.org catalogue in Turtle, a
Dublin Core/FOAF/SKOS concept hierarchy in RDF/XML and an n-ary events graph in JSON-LD with an inline context.
Each parses with HubLab's own graph loader (what ``hublab graph check`` and ``--graph FILE`` use), its questions load
through HubLab's dataset loader (CSV or JSON Lines), and every golden N-Triples statement is a triple of the graph,
so no question is unanswerable by construction."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from rdflib import URIRef

from hublab.config import settings
from hublab.datasets.catalog import dataset_file_problem, duplicate_uids, load_dataset, resolve_statements
from hublab.datasets.model import is_statement, parse_statement
from hublab.graph.backends import load_source, resolve_graph
from hublab.graph.profile import hub_type_problem
from hublab.graph.vocabulary import node_uid

ROOT = Path(__file__).resolve().parents[2]
GRAPHS = ROOT / "examples" / "graphs"
#: name -> (graph file, questions file, hub type)
EXAMPLES = {
    "catalogue": ("graph.ttl", "questions.csv", "https://schema.org/SoftwareApplication"),
    "concepts": ("graph.rdf", "questions.jsonl", "http://xmlns.com/foaf/0.1/Document"),
    "events": ("graph.jsonld", "questions.csv", "https://example.org/events#Event"),
}


@pytest.fixture(scope="module")
def st():
    return settings(ROOT)


@pytest.fixture(scope="module", params=sorted(EXAMPLES))
def example(request, st):
    graph_file, questions_file, hub_type = EXAMPLES[request.param]
    folder = GRAPHS / request.param
    kg = load_source(resolve_graph(str(folder / graph_file), st), st)
    return kg, folder / questions_file, hub_type


def test_the_graph_parses_with_labels_and_its_hub_type(example):
    kg, _, hub_type = example
    triples = list(kg.triples())
    assert 300 <= len(triples) <= 1500
    assert hub_type_problem(kg, [hub_type], kg.name) is None
    hubs = kg.entities_by_type(hub_type)
    assert len(hubs) >= 20 and all(kg.has_label(h.uid) for h in hubs)


def test_the_questions_load_and_every_golden_statement_is_in_the_graph(example, st):
    kg, questions, _ = example
    assert dataset_file_problem(questions) is None
    pairs = load_dataset(st, str(questions))
    assert len(pairs) >= 20
    assert duplicate_uids(pairs) == {}
    ops = Counter(p.retrieval_operation for p in pairs)
    assert None not in ops and sum(1 for n in ops.values() if n >= 5) >= 3, ops
    assert all(p.question.strip() and p.golden_answer.strip() and p.golden_triples for p in pairs)
    assert all(is_statement(g) for p in pairs for g in p.golden_triples)
    resolved, missing = resolve_statements(pairs, kg)
    assert missing == {}
    for p in pairs:
        for g in p.golden_triples:
            s, _, o = parse_statement(g)
            # a node a question's answer path names has a label of its own (not the IRI's local name), except
            # the n-ary participation nodes of the events graph, which have none in the data
            for term in (s, o):
                if isinstance(term, URIRef) and "/participation/" not in str(term):
                    assert kg.has_label(node_uid(term)), (p.uid, term)
    assert all(len(r.golden_triples) == len(p.golden_triples) for r, p in zip(resolved, pairs, strict=True))
