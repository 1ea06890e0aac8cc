"""A unit's representation (issue #31): what DiFaR, VSS, BM25, hybrid and 4StepFocus embed or tokenise is a declared
parameter (``triple_text``, ``context``) with the thesis's text as the default, and two representations never share
a stored index."""

from __future__ import annotations

import pytest

from hublab.retrievers.base import Resources
from hublab.retrievers.components.unit_text import PaperOf, text_tag, unit_text
from hublab.retrievers.components.units import paper_triple_units, triple_units
from hublab.retrievers.registry import build_retriever, get_retriever_class
from hublab.testing.retriever_contract import tiny_graph
from support.baseline_support import make_vector_store

UNIT_METHODS = ("difar", "vss", "bm25", "hybrid", "four_step_focus")


def _triple(g, subject: str, predicate: str):
    return next(t for t in g.outgoing(subject) if t.predicate == predicate)


def test_forms_and_the_paper_found_by_walking_up():
    g = tiny_graph()
    method = _triple(g, "C1", "research method")  # Contribution 1 -> case study, under paper P1
    assert unit_text(method, "ids", "none", None) == method.render() == (
        "(C1:Contribution 1, research method, L2:case study)")
    assert unit_text(method, "labels", "none", None) == "Contribution 1 | research method | case study"
    papers = PaperOf(g)
    assert unit_text(method, "labels", "paper", papers) == (
        "Contribution 1 | research method | case study | paper: Microservice migration study")
    year = _triple(g, "P2", "publication year")  # the subject is the paper itself
    assert unit_text(year, "ids", "paper", papers).endswith("| paper: Self-adaptive systems survey")


def test_triple_units_keep_the_canonical_key_whatever_their_text():
    g = tiny_graph()
    default = triple_units(g.triples())
    labelled = triple_units(g.triples(), graph=g, triple_text="labels", context="paper")
    assert [u.key for u in default] == [u.key for u in labelled] == [u.text for u in default]
    assert all(u.text != v.text and "paper:" in v.text for u, v in zip(default, labelled, strict=True))
    # DiFaR knows each unit's paper from the subgraph it walked: the context is that paper, even for a shared triple
    cites = [u for u in paper_triple_units(g, ["R1"], context="paper") if u.triple.predicate == "cites"]
    assert cites and all(u.text.endswith(f" | paper: {u.meta['paper_title']}") for u in cites)


@pytest.mark.parametrize("name", UNIT_METHODS)
def test_every_unit_method_declares_the_representation_with_the_thesis_default(name):
    declared = get_retriever_class(name).declared_params()
    assert declared["triple_text"][1] == "ids" and declared["context"][1] == "none"


def test_the_defaults_keep_their_collection_names():
    assert text_tag("ids", "none") == "" and text_tag("labels", "paper") == "labels_paper"


def _difar_ranked(res: Resources, **params) -> list[str]:
    r = build_retriever("difar", res, {"indexing_root_entity_ids": ["R1"], "n_results": 5, **params})
    r.index(progress=False)
    return [c.text for c in r.retrieve("Which research method does the microservice migration study use?").contexts]


def test_two_representations_never_share_a_stored_index(tmp_path, hashing):
    def resources(path):
        return Resources(graph=tiny_graph(), embedder=hashing, vector_store=make_vector_store(path),
                         index_name="tiny", root_entity_ids=["R1"])

    shared = resources(tmp_path / "shared.db")
    ids = _difar_ranked(shared)
    labels = _difar_ranked(shared, triple_text="labels", context="paper")
    assert labels == _difar_ranked(resources(tmp_path / "alone.db"), triple_text="labels", context="paper")
    assert _difar_ranked(shared) == ids  # the default's collection is still there, untouched
    store = shared.vector_store
    names = [n for n in store.client.list_collections()]
    assert any(n.startswith("difar_tiny_any_") for n in names), names  # one collection per representation
    assert any(n.startswith("difar_labels_paper_tiny_any_") for n in names), names
    assert len(labels) == len(set(labels)) == 5  # one context per triple, however many papers hold it
