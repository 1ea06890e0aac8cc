"""The retriever contract, checked for every method the registry knows (no hand-kept list): a new file in
``retrievers/methods/`` is picked up here automatically.

Each method runs LLM-free on a tiny ORKG-shaped graph (two papers under a research field) with a Milvus Lite file,
as a pipeline would configure it, and the hashing embedder: the contract does not depend on embedding quality (the
MiniLM wiring is covered by test_baselines_dense.py and test_hublink.py), and the fast tier loads no model.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from baseline_support import make_vector_store
from hublab.embedding.hashing import HashingEmbedder
from hublab.errors import InputError
from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Context, Resources, RetrievalResult
from hublab.retrievers.registry import available, build_retriever, get_retriever_class

METHODS = available(plugins=False)  # the package's methods, not test doubles other modules register
QUESTION = "Which research method does the paper 'Microservice migration study' use?"


def K(uid: str, text: str, *types: str) -> Knowledge:
    return Knowledge(uid, text, tuple(types))


def tiny_graph() -> RdfKnowledgeGraph:
    field = K("R1", "Software Architecture and Design", "ResearchField")
    p1, p2 = K("P1", "Microservice migration study", "Paper"), K("P2", "Self-adaptive systems survey", "Paper")
    c1, c2 = K("C1", "Contribution 1", "Contribution"), K("C2", "Contribution 2", "Contribution")
    return RdfKnowledgeGraph.from_triples([
        Triple(p1, "research field", field), Triple(p2, "research field", field),
        Triple(p1, "publication year", K("L1", "2019", "Literal")), Triple(p1, "contribution", c1),
        Triple(c1, "research method", K("L2", "case study", "Literal")), Triple(c1, "cites", p2),
        Triple(p2, "publication year", K("L3", "2021", "Literal")), Triple(p2, "contribution", c2),
        Triple(c2, "research method", K("L4", "systematic literature review", "Literal")),
    ], name="tiny")


@pytest.fixture(scope="module")
def graph():
    return tiny_graph()


@pytest.fixture(scope="module")
def embedder():
    return HashingEmbedder()


def required_params(name: str, tmp: Path, graph) -> dict:
    """Values for parameters without a default (today: the ``fixed`` method's predictions file)."""
    out: dict = {}
    for key, (_, default) in get_retriever_class(name).declared_params().items():
        if default is ... and key == "path":
            f = tmp / "fixed.json"
            f.write_text(json.dumps({QUESTION: [t.render() for t in list(graph.triples())[:3]]}))
            out[key] = str(f)
    return out


def make(name: str, graph, embedder, tmp: Path, **params):
    res = Resources(graph=graph, embedder=embedder, llm=None, vector_store=make_vector_store(tmp / "ix.db"),
                    index_name=f"contract_{name}", cache_dir=str(tmp), index_dir=str(tmp), root_entity_ids=["R1"])
    r = build_retriever(name, res, {**required_params(name, tmp, graph), **params}, source="contract.yaml")
    r.index(progress=False)
    return r


def test_registry_finds_every_method_file():
    assert {"hublink", "difar", "bm25", "hybrid", "vss", "fidelis", "mindmap", "tog", "structgpt",
            "four_step_focus", "fixed", "vector"} <= set(METHODS)


@pytest.mark.parametrize("name", METHODS)
def test_class_documents_its_parameters(name):
    cls = get_retriever_class(name)
    assert cls.params_type is not None, f"{cls.__name__} declares no params_type"
    # the parameters are documented where they are declared: the params_type dataclass and the ones it inherits
    doc = " ".join(k.__doc__ or "" for k in (*cls.__mro__, *cls.params_type.__mro__))
    assert "Args" in doc, f"{cls.__name__} has no Args section"
    own = {k for k in cls.declared_params() if k not in cls.COMMON_PARAMS}
    missing = [k for k in own if k not in doc]
    assert not missing, f"{cls.__name__} docstrings do not explain {missing}"


@pytest.mark.parametrize("name", METHODS)
def test_empty_question_gives_empty_valid_result(name, graph, embedder, tmp_path):
    r = make(name, graph, embedder, tmp_path)
    for q in ("", "   "):
        res = r.retrieve(q)
        assert isinstance(res, RetrievalResult) and res.contexts == [] and res.reason


@pytest.mark.parametrize("name", METHODS)
def test_unknown_parameter_is_a_located_error(name, graph, embedder, tmp_path):
    with pytest.raises(InputError) as err:
        make(name, graph, embedder, tmp_path, numbr_of_hubs=3)
    msg = str(err.value)
    assert "contract.yaml" in msg and "retriever.params.numbr_of_hubs" in msg and "valid:" in msg


@pytest.mark.parametrize("name", METHODS)
def test_wrong_type_and_range_are_located_errors(name, graph, embedder, tmp_path):
    declared = get_retriever_class(name).declared_params()
    ints = [k for k, (_, d) in declared.items() if isinstance(d, int) and not isinstance(d, bool)]
    key = (ints or ["max_output_triples"])[0]
    with pytest.raises(InputError, match=f"retriever.params.{key}"):
        make(name, graph, embedder, tmp_path, **{key: "thirty"})
    with pytest.raises(InputError, match="retriever.params.max_output_triples"):
        make(name, graph, embedder, tmp_path, max_output_triples=-1)


@pytest.mark.parametrize("name", METHODS)
def test_unknown_topic_entity_gives_valid_result(name, graph, embedder, tmp_path):
    r = make(name, graph, embedder, tmp_path)
    res = r.retrieve(QUESTION, topic_entity_id="R_NOT_IN_GRAPH", topic_entity_value="nowhere")
    assert isinstance(res, RetrievalResult)
    assert res.contexts or res.reason


@pytest.mark.parametrize("name", METHODS)
def test_result_schema_bounded_and_deterministic(name, graph, embedder, tmp_path):
    r = make(name, graph, embedder, tmp_path, max_output_triples=3)
    first = r.retrieve(QUESTION, topic_entity_id="R1", topic_entity_value="Software Architecture and Design")
    assert len(first.contexts) <= 3
    assert first.contexts or first.reason, "an empty result must say why"
    for c in first.contexts:
        assert isinstance(c, Context) and isinstance(c.text, str) and c.text
        assert c.score is None or isinstance(c.score, float)
        assert c.triple is None or isinstance(c.triple, Triple)
    assert len({c.text for c in first.contexts}) == len(first.contexts), "duplicate contexts"
    assert all(isinstance(s, dict) and all(isinstance(v, str) for v in s.values()) for s in first.sources)
    assert isinstance(first.fallbacks, list) and not first.fallbacks  # LLM-free: nothing to fall back from
    again = make(name, graph, embedder, tmp_path / "again", max_output_triples=3).retrieve(
        QUESTION, topic_entity_id="R1", topic_entity_value="Software Architecture and Design")
    assert again.context_strings == first.context_strings
    assert (again.answer, again.reason) == (first.answer, first.reason)
