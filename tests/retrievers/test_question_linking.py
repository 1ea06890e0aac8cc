"""A walk-based baseline (FiDeLiS, ToG, StructGPT) on a question without a topic entity: a user's dataset often
has no such column, and the method used to return nothing for every question (scored 0 in a comparison). It now
starts from the longest graph label the question contains, and says so; a given topic entity still wins."""

from __future__ import annotations

from pathlib import Path

import pytest

from hublab.embedding.hashing import HashingEmbedder
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Resources
from hublab.retrievers.registry import build_retriever

TTL = """
@prefix ex: <https://example.org/sw/> .
@prefix schema: <https://schema.org/> .
ex:kestrel a schema:SoftwareApplication ; schema:name "Kestrel Backup" ; schema:license "MIT" ;
    schema:author ex:acme .
ex:kes a schema:SoftwareApplication ; schema:name "Kestrel" ; schema:license "GPL-3.0" .
ex:acme a schema:Organization ; schema:name "Acme Labs" .
"""


@pytest.fixture(scope="module")
def graph(tmp_path_factory) -> RdfKnowledgeGraph:
    path = Path(tmp_path_factory.mktemp("g")) / "graph.ttl"
    path.write_text(TTL)
    return RdfKnowledgeGraph.load(path)


@pytest.mark.parametrize("method", ["tog", "structgpt", "fidelis"])
def test_a_question_without_topic_entity_starts_from_the_longest_label_it_names(graph, method):
    r = build_retriever(method, Resources(graph, embedder=HashingEmbedder(64)), {})
    start, note = r.resolve_topic(None, None, "Under which license is kestrel backup distributed?")
    assert graph.entity(start).text == "Kestrel Backup"  # the longest label, not "Kestrel"
    assert "linked 'Kestrel Backup' from the question" in note
    res = r.retrieve("Under which license is Kestrel Backup distributed?")
    assert res.contexts, res.reason  # it walks instead of returning nothing
    assert any("MIT" in c.text for c in res.contexts)


def test_no_label_in_the_question_says_so_and_a_given_topic_wins(graph):
    r = build_retriever("tog", Resources(graph, embedder=HashingEmbedder(64)), {})
    start, note = r.resolve_topic(None, None, "What is the weather like?")
    assert start is None and "no graph label occurs in the question" in note
    acme = next(e.uid for e in graph.entities() if e.text == "Acme Labs")
    assert r.resolve_topic(acme, None, "Under which license is Kestrel Backup distributed?") == (acme, "")
