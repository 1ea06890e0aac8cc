"""The retriever contract as a pytest test class, shipped with the package (as ``optuna.testing`` is) so that a method
defined outside HubLab — a plugin registered with :func:`hublab.retrievers.registry.register` — is held to the same
checks as the built-in ones (``tests/retrievers/test_contract.py`` runs it over every method in
``retrievers/methods/``).

Use it in a test module (pytest must be installed; it is a test dependency, not a run-time one)::

    from hublab.testing.retriever_contract import RetrieverContract

    class TestMyMethod(RetrieverContract):
        method = "my_method"  # the name it was registered under

A method with parameters that have no default overrides :meth:`RetrieverContract.required_params`.

Each check runs the method LLM-free on a tiny ORKG-shaped graph (two papers under a research field) with a Milvus
Lite file, as a pipeline would configure it, and the hashing embedder: the contract does not depend on embedding
quality, and loads no model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

import pytest

from hublab.embedding.hashing import HashingEmbedder
from hublab.errors import InputError
from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.registry import build_retriever, get_retriever_class
from hublab.vectorstore.factory import build_vector_store

__all__ = ["RetrieverContract", "tiny_graph"]

QUESTION = "Which research method does the paper 'Microservice migration study' use?"
TOPIC = {"topic_entity_id": "R1", "topic_entity_value": "Software Architecture and Design"}


def _k(uid: str, text: str, *types: str) -> Knowledge:
    return Knowledge(uid, text, tuple(types))


def tiny_graph() -> RdfKnowledgeGraph:
    """Two papers under one research field, with contributions, years and research methods."""
    field = _k("R1", "Software Architecture and Design", "ResearchField")
    p1, p2 = _k("P1", "Microservice migration study", "Paper"), _k("P2", "Self-adaptive systems survey", "Paper")
    c1, c2 = _k("C1", "Contribution 1", "Contribution"), _k("C2", "Contribution 2", "Contribution")
    return RdfKnowledgeGraph.from_triples([
        Triple(p1, "research field", field), Triple(p2, "research field", field),
        Triple(p1, "publication year", _k("L1", "2019", "Literal")), Triple(p1, "contribution", c1),
        Triple(c1, "research method", _k("L2", "case study", "Literal")), Triple(c1, "cites", p2),
        Triple(p2, "publication year", _k("L3", "2021", "Literal")), Triple(p2, "contribution", c2),
        Triple(c2, "research method", _k("L4", "systematic literature review", "Literal")),
    ], name="tiny")


class RetrieverContract:
    """What every retrieval method promises (docs/adding-a-retriever.md). Subclass it and set :attr:`method`."""

    #: the method's registry name (a module under ``retrievers/methods/``, or a registered plugin)
    method: ClassVar[str] = ""

    @pytest.fixture(scope="class")
    def graph(self) -> RdfKnowledgeGraph:
        return tiny_graph()

    @pytest.fixture(scope="class")
    def embedder(self) -> HashingEmbedder:
        return HashingEmbedder()

    def required_params(self, tmp: Path, graph: RdfKnowledgeGraph) -> dict[str, Any]:
        """Values for the method's parameters that have no default (none by default)."""
        return {}

    def make(self, graph: RdfKnowledgeGraph, embedder: HashingEmbedder, tmp: Path, **params: Any) -> Retriever:
        """The method as a pipeline builds it (parameters validated against ``contract.yaml``), indexed."""
        tmp.mkdir(parents=True, exist_ok=True)
        res = Resources(graph=graph, embedder=embedder, llm=None, vector_store=build_vector_store({"uri": None},
                                                                                                 tmp / "ix.db"),
                        index_name=f"contract_{self.method}", cache_dir=str(tmp), index_dir=str(tmp),
                        root_entity_ids=["R1"])
        r = build_retriever(self.method, res, {**self.required_params(tmp, graph), **params}, source="contract.yaml")
        r.index(progress=False)
        return r

    def test_class_documents_its_parameters(self) -> None:
        cls = get_retriever_class(self.method)
        assert cls.params_type is not None, f"{cls.__name__} declares no params_type"
        # the parameters are documented where they are declared: the params_type dataclass and the ones it inherits
        doc = " ".join(k.__doc__ or "" for k in (*cls.__mro__, *cls.params_type.__mro__))
        assert "Args" in doc, f"{cls.__name__} has no Args section"
        own = {k for k in cls.declared_params() if k not in cls.COMMON_PARAMS}
        missing = [k for k in own if k not in doc]
        assert not missing, f"{cls.__name__} docstrings do not explain {missing}"

    def test_empty_question_gives_empty_valid_result(self, graph, embedder, tmp_path: Path) -> None:
        r = self.make(graph, embedder, tmp_path)
        for q in ("", "   "):
            res = r.retrieve(q)
            assert isinstance(res, RetrievalResult) and res.contexts == [] and res.reason

    def test_unknown_parameter_is_a_located_error(self, graph, embedder, tmp_path: Path) -> None:
        with pytest.raises(InputError) as err:
            self.make(graph, embedder, tmp_path, numbr_of_hubs=3)
        msg = str(err.value)
        assert "contract.yaml" in msg and "retriever.params.numbr_of_hubs" in msg and "valid:" in msg

    def test_wrong_type_and_range_are_located_errors(self, graph, embedder, tmp_path: Path) -> None:
        declared = get_retriever_class(self.method).declared_params()
        ints = [k for k, (_, d) in declared.items() if isinstance(d, int) and not isinstance(d, bool)]
        key = (ints or ["max_output_triples"])[0]
        with pytest.raises(InputError, match=f"retriever.params.{key}"):
            self.make(graph, embedder, tmp_path, **{key: "thirty"})
        with pytest.raises(InputError, match="retriever.params.max_output_triples"):
            self.make(graph, embedder, tmp_path, max_output_triples=-1)

    def test_unknown_topic_entity_gives_valid_result(self, graph, embedder, tmp_path: Path) -> None:
        res = self.make(graph, embedder, tmp_path).retrieve(QUESTION, topic_entity_id="R_NOT_IN_GRAPH",
                                                           topic_entity_value="nowhere")
        assert isinstance(res, RetrievalResult)
        assert res.contexts or res.reason

    def test_result_schema_bounded_and_deterministic(self, graph, embedder, tmp_path: Path) -> None:
        first = self.make(graph, embedder, tmp_path, max_output_triples=3).retrieve(QUESTION, **TOPIC)
        assert len(first.contexts) <= 3
        assert first.contexts or first.reason, "an empty result must say why"
        for c in first.contexts:
            assert isinstance(c, Context) and isinstance(c.text, str) and c.text
            assert c.score is None or isinstance(c.score, float)
            assert c.triple is None or isinstance(c.triple, Triple)
        assert len({c.text for c in first.contexts}) == len(first.contexts), "duplicate contexts"
        assert all(isinstance(s, dict) and all(isinstance(v, str) for v in s.values()) for s in first.sources)
        assert isinstance(first.fallbacks, list) and not first.fallbacks  # LLM-free: nothing to fall back from
        again = self.make(graph, embedder, tmp_path / "again", max_output_triples=3).retrieve(QUESTION, **TOPIC)
        assert again.context_strings == first.context_strings
        assert (again.answer, again.reason) == (first.answer, first.reason)
