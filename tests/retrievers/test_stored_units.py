"""A corpus over a graph kept on disk holds positions, not units (``StoredTripleUnits``): unit for unit the corpus
the in-memory graph gives, in the same order, read by index, slice and iteration; BM25 over it ranks the same."""

from __future__ import annotations

from pathlib import Path

import pytest

from hublab.graph.base import KnowledgeGraph
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.store import open_store
from hublab.retrievers.components import units as units_mod
from hublab.retrievers.components.lexical_index import BM25Index
from hublab.retrievers.components.units import (
    StoredNodeUnits,
    StoredTripleUnits,
    graph_node_units,
    graph_triple_units,
    node_units,
    triple_units,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def gv3_files(tmp_path: Path, gv3_orkg_graph) -> tuple[RdfKnowledgeGraph, KnowledgeGraph]:
    path = tmp_path / "g.ttl"
    gv3_orkg_graph.save(path)
    return RdfKnowledgeGraph.load(path, name="g"), open_store(path, tmp_path / "s", name="g")


@pytest.mark.parametrize("triple_text,context", [("ids", "none"), ("labels", "paper")])
def test_a_stored_corpus_is_the_in_memory_corpus(gv3_files, triple_text: str, context: str):
    mem, st = gv3_files
    expected = triple_units(mem.triples(), graph=mem, triple_text=triple_text, context=context)
    stored = graph_triple_units(st, triple_text=triple_text, context=context)
    assert isinstance(stored, StoredTripleUnits) and isinstance(graph_triple_units(mem), list)
    assert len(stored) == len(expected) > 1000
    assert list(stored) == expected  # iterated in pages
    assert stored[5:9000:7] == expected[5:9000:7] and stored[-3] == expected[-3] and stored[0] == expected[0]
    with pytest.raises(IndexError):
        stored[len(expected)]
    query = "which research problems does the paper address"
    assert [(u.key, s) for u, s in BM25Index(stored).search(query, 50)] == \
           [(u.key, s) for u, s in BM25Index(expected).search(query, 50)]


def test_triples_whose_strings_repeat_are_one_unit_even_when_every_hash_meets(tmp_path: Path, monkeypatch):
    """Two predicates with one label between the same nodes render one triple string: one unit, the first. With
    every hash made equal, each string is compared whole and the corpus is unchanged."""
    path = tmp_path / "g.ttl"
    path.write_text("""@prefix ex: <http://ex.org/> . @prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
ex:a rdfs:label "A" . ex:b rdfs:label "B" . ex:p1 rdfs:label "cites" . ex:p2 rdfs:label "cites" .
ex:a ex:p1 ex:b . ex:a ex:p2 ex:b . ex:b ex:p1 ex:a . ex:a ex:q "x" . ex:a ex:q "y" .
""", encoding="utf-8")
    mem, st = RdfKnowledgeGraph.load(path, name="g"), open_store(path, tmp_path / "s", name="g")
    expected = triple_units(mem.triples(), graph=mem)
    assert len(expected) == len(list(mem.triples())) - 1
    assert list(StoredTripleUnits(st)) == expected
    monkeypatch.setattr(units_mod, "_hash64", lambda text: 7)
    assert list(StoredTripleUnits(st)) == expected


def test_triples_at_reads_ranges_and_scattered_positions_as_walking_does(gv3_files):
    _mem, st = gv3_files
    n = len(st)
    for positions in ([0, 1, 2, 3], [n - 1, 0, 17, 17], list(range(0, n, 97)), [5, n // 2, n - 2]):
        assert st.triples_at(positions) == KnowledgeGraph.triples_at(st, positions)
    with pytest.raises(IndexError):
        st.triples_at([n])
    with pytest.raises(IndexError):
        KnowledgeGraph.triples_at(st, [n])


@pytest.mark.parametrize("add_rel,context", [(True, "none"), (False, "paper")])
def test_a_stored_node_corpus_is_the_in_memory_node_corpus(gv3_files, add_rel: bool, context: str):
    """Node documents over a graph kept on disk are written when read (``StoredNodeUnits``, only node ids held):
    the in-memory graph's documents, in its order, by index, slice and iteration; BM25 ranks them the same."""
    mem, st = gv3_files
    types = ["Paper"] if context == "paper" else None
    expected = node_units(mem, types=types, add_rel=add_rel, context=context)
    stored = graph_node_units(st, types=types, add_rel=add_rel, context=context)
    assert isinstance(stored, StoredNodeUnits) and isinstance(graph_node_units(mem), list)
    assert len(stored) == len(expected) > (100 if types else 1000)
    assert list(stored) == expected
    assert stored[3:700:11] == expected[3:700:11] and stored[-1] == expected[-1]
    with pytest.raises(IndexError):
        stored[len(expected)]
    query = "which research problems does the paper address"
    assert [(u.key, s) for u, s in BM25Index(stored).search(query, 30)] == \
           [(u.key, s) for u, s in BM25Index(expected).search(query, 30)]
