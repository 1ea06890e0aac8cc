"""The four LLM-reasoning baselines (FiDeLiS, MindMap, ToG, StructGPT) end to end on the GV3 export.

LLM paths are exercised with small scripted LLMs (a cooperative one, one answering garbage, one raising),
so the tests are deterministic and offline; the LLM-free paths use the bundled MiniLM embedder.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pytest

from hublab.embedding.base import Embedder
from hublab.errors import InputError
from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.llm.base import LLM, LLMResponse
from hublab.llm.jsonutil import extract_json as parse_json_text
from hublab.retrievers.base import Resources, RetrievalResult
from hublab.retrievers.components.llm_json import as_index_list, ask_json, match_option
from hublab.retrievers.registry import build_retriever, get_retriever_class

METHODS = ["fidelis", "mindmap", "tog", "structgpt"]
PAPER = "R872741"
TITLE = (
    "Availability-Driven Architectural Change Propagation Through Bidirectional Model Transformations "
    "Between UML and Petri Net Models"
)
QUESTION = f"In which venue has the paper with the title '{TITLE}' been published?"
GOLDEN = f"({PAPER}:{TITLE}, venue, R820814:International Conference on Software Architecture (ICSA))"


# ---------------------------------------------------------------- fixtures
class _Memo(Embedder):
    """In-memory memo over the project embedder, so every retriever instance shares the label vectors."""

    def __init__(self, inner: Embedder) -> None:
        self.inner, self.name, self.dim = inner, inner.name, inner.dim
        self._memo: dict[str, np.ndarray] = {}

    def embed(self, texts: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self._memo]
        if missing:
            self._memo.update(zip(missing, np.asarray(self.inner.embed(missing), dtype=np.float32), strict=True))
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.stack([self._memo[t] for t in texts])


@pytest.fixture(scope="module")
def embedder(minilm) -> Embedder:
    """The bundled all-MiniLM-L6-v2: the session's (conftest), loaded once."""
    return _Memo(minilm)


@pytest.fixture(scope="module")
def gv3(gv3_orkg_graph):
    return gv3_orkg_graph


def _build(name: str, graph, embedder=None, llm=None, **params):
    return build_retriever(name, Resources(graph=graph, embedder=embedder, llm=llm), params)


@dataclass
class OracleLLM(LLM):
    """A cooperative scripted LLM: answers each baseline prompt sensibly by looking at the schema."""

    model: str = "oracle"

    def _complete(self, prompt, *, json_schema, max_tokens, system):
        props = set((json_schema or {}).get("properties", {}))
        quoted = re.findall(r"'([^']{8,})'", prompt)
        if not json_schema:
            return LLMResponse(text="ICSA", prompt_tokens=10, completion_tokens=1)
        if "keywords" in props:
            data = {"keywords": quoted[-1:] + ["venue"], "declarative": "The paper was published at a venue."}
        elif "entities" in props and "relations" not in props:
            data = {"entities": quoted[-1:]}
        elif "selected" in props:
            lines = re.findall(r"^(\d+)\. (.*)$", prompt, flags=re.M)
            data = {"selected": [int(n) for n, text in lines if ", venue, " in text] or [1]}
        elif "relations" in props:
            rels = re.findall(r"^Relations: (.*)$", prompt, flags=re.M)[-1].split("; ")
            data = {"relations": [{"relation": r, "score": 0.9 if r == "venue" else 0.01} for r in rels]}
        elif "scores" in props:
            data = {"scores": [1.0]}
        elif "relation" in props:
            rels = re.search(r"current entities .*? are: (.*)\.\n", prompt).group(1).split("; ")
            data = {"relation": "venue" if "venue" in rels else rels[0]}
        elif "sufficient" in props:
            found = GOLDEN in prompt or f"{TITLE}, venue," in prompt
            data = {"sufficient": found, "answer": "ICSA" if found else ""}
        elif "relevant" in props:
            lines = re.findall(r"^(\d+)\. (.*)$", prompt, flags=re.M)
            data = {"relevant": [int(n) for n, text in lines if ", venue, " in text and TITLE in text]}
        else:  # pragma: no cover - a new prompt without a script
            raise AssertionError(f"unscripted schema {props}")
        # Like a chatty model: JSON wrapped in prose and a code fence, which the parser must dig out.
        return LLMResponse(text=f"Sure!\n```json\n{json.dumps(data)}\n```", prompt_tokens=50, completion_tokens=20)


@dataclass
class GarbageLLM(LLM):
    model: str = "garbage"

    def _complete(self, prompt, *, json_schema, max_tokens, system):
        return LLMResponse(text="I am sorry, as a language model I cannot do { that", prompt_tokens=5)


@dataclass
class RaisingLLM(LLM):
    model: str = "raising"

    def _complete(self, prompt, *, json_schema, max_tokens, system):
        raise RuntimeError("connection refused")


@dataclass
class NoneLLM(LLM):
    model: str = "none"
    is_llm_free: bool = True

    def _complete(self, prompt, *, json_schema, max_tokens, system):  # pragma: no cover - never called
        raise AssertionError("the LLM-free path must not call the LLM")


def _assert_valid(res: RetrievalResult) -> None:
    assert isinstance(res, RetrievalResult)
    for c in res.contexts:
        assert c.triple is not None and c.text == c.triple.render()
        assert c.score is not None
    assert len(res.context_strings) == len(set(res.context_strings)), "contexts must be unique"


# ---------------------------------------------------------------- end to end on GV3
@pytest.mark.parametrize("name", METHODS)
def test_llm_free_retrieves_the_venue_triple(name, gv3, embedder):
    retriever = _build(name, gv3, embedder, NoneLLM())
    res = retriever.retrieve(QUESTION, PAPER, TITLE)
    _assert_valid(res)
    assert GOLDEN in res.context_strings, res.context_strings[:10]
    assert res.reason is None
    assert res.answer


@pytest.mark.parametrize("name", ["fidelis", "tog"])
def test_two_hop_from_the_research_field_hub(name, gv3, embedder):
    """The dataset's own topic entity for this question is the research field R659055 (2 hops)."""
    res = _build(name, gv3, embedder, None).retrieve(QUESTION, "R659055", "Software Architecture and Design")
    _assert_valid(res)
    assert GOLDEN in res.context_strings


def test_mindmap_links_the_title_without_a_topic_entity(gv3, embedder):
    res = _build("mindmap", gv3, embedder, None).retrieve(QUESTION)
    assert GOLDEN in res.context_strings[:3]
    assert {c.metadata["evidence"] for c in res.contexts} <= {"path", "neighbour"}


def test_mindmap_entity_index_in_milvus_lite(gv3, embedder, tmp_path):
    from hublab.vectorstore.factory import build_vector_store

    store = build_vector_store({}, tmp_path / "milvus.db")
    try:
        resources = Resources(graph=gv3, embedder=embedder, vector_store=store, index_name="gv3_test",
                              root_entity_ids=["R659055"])
        mm = build_retriever("mindmap", resources, {"use_vector_store": True})
        stats = mm.index(progress=False)
        assert stats["stored"] == stats["entity_labels"] == len({e.text for e in gv3.entities() if e.text})
        assert GOLDEN in mm.retrieve(QUESTION).context_strings[:3]
    finally:
        store.close()


@pytest.mark.parametrize("name", METHODS)
def test_llm_path_with_a_cooperative_llm(name, gv3, embedder):
    llm = OracleLLM()
    res = _build(name, gv3, embedder, llm).retrieve(QUESTION, PAPER, TITLE)
    _assert_valid(res)
    assert GOLDEN in res.context_strings
    assert res.reason is None, res.reason
    assert res.answer == "ICSA"
    assert llm.usage.calls >= 1


def test_structgpt_llm_filter_keeps_only_relevant_triples(gv3, embedder):
    res = _build("structgpt", gv3, embedder, OracleLLM()).retrieve(QUESTION, PAPER, TITLE)
    assert res.context_strings == [GOLDEN]


def test_tog_stops_when_the_llm_says_the_paths_suffice(gv3, embedder):
    llm = OracleLLM()
    res = _build("tog", gv3, embedder, llm, generate_answer=False).retrieve(QUESTION, PAPER, TITLE)
    # The venue triple is found at depth 1, where the LLM's sufficiency check ends the search.
    assert GOLDEN in res.context_strings
    assert all(c.metadata["depth"] == 1 for c in res.contexts)
    assert res.answer == "ICSA"


@pytest.mark.parametrize("llm_cls", [GarbageLLM, RaisingLLM])
@pytest.mark.parametrize("name", METHODS)
def test_broken_llm_gives_a_valid_result_with_reason(name, llm_cls, gv3, embedder):
    res = _build(name, gv3, embedder, llm_cls()).retrieve(QUESTION, PAPER, TITLE)
    _assert_valid(res)
    assert res.reason, "a degraded run must say why"
    # Every method falls back to its embedding heuristic, so the result is partial, not empty.
    assert res.contexts


@pytest.mark.parametrize("name", ["tog", "structgpt"])
def test_broken_llm_without_embedder_is_empty_with_reason(name, gv3):
    res = _build(name, gv3, None, GarbageLLM()).retrieve(QUESTION, PAPER, TITLE)
    assert res.contexts == [] and res.reason and "no JSON" in res.reason


@pytest.mark.parametrize("name", ["fidelis", "tog", "structgpt"])
def test_unknown_topic_entity_is_empty_with_reason(name, gv3, embedder):
    res = _build(name, gv3, embedder, None).retrieve(QUESTION, "R0", "no such entity at all xyz")
    assert res.contexts == [] and "not found" in res.reason


def test_mindmap_unlinkable_question_is_empty_with_reason(gv3, embedder):
    res = _build("mindmap", gv3, embedder, None, link_threshold=0.99).retrieve("What is the capital of Mongolia?")
    assert res.contexts == [] and "linked" in res.reason


@pytest.mark.parametrize("name", ["fidelis", "tog", "structgpt"])
def test_budget_caps_work_and_says_so(name, gv3, embedder):
    res = _build(name, gv3, embedder, None, max_expansions=2).retrieve(QUESTION, "R659055")
    _assert_valid(res)
    assert res.reason and "budget" in res.reason


@pytest.mark.parametrize("name", ["tog", "structgpt"])
def test_random_pruning_is_seeded(name, gv3, embedder):
    a = _build(name, gv3, embedder, None, seed=7).retrieve(QUESTION, "R659055").context_strings
    b = _build(name, gv3, embedder, None, seed=7).retrieve(QUESTION, "R659055").context_strings
    assert a == b and a


# ---------------------------------------------------------------- tiny synthetic graphs
def _k(uid: str, text: str) -> Knowledge:
    return Knowledge(uid, text, ("Resource",))


@pytest.fixture(scope="module")
def cycle_graph():
    a, b, c, d = _k("R1", "Alpha"), _k("R2", "Beta"), _k("R3", "Gamma"), _k("R4", "Delta")
    triples = [
        Triple(a, "cites", b), Triple(b, "cites", c), Triple(c, "cites", a),  # a directed 3-cycle
        Triple(a, "related", a),  # self loop
        Triple(c, "extends", d), Triple(d, "cites", b),
    ]
    return RdfKnowledgeGraph.from_triples(triples, name="cycle")


@pytest.mark.parametrize("name", METHODS)
def test_cycles_terminate(name, cycle_graph, embedder):
    depth = {"fidelis": {"max_length": 50}, "tog": {"max_depth": 50}, "structgpt": {"max_depth": 50},
             "mindmap": {"max_path_length": 50}}[name]
    res = _build(name, cycle_graph, embedder, None, **depth).retrieve("Which paper does Gamma extend?", "R3", "Gamma")
    _assert_valid(res)
    assert "(R3:Gamma, extends, R4:Delta)" in res.context_strings
    assert len(res.contexts) <= 6


def test_mindmap_bidirectional_bfs_finds_all_shortest_paths(embedder):
    s, x, y, z, t = _k("R1", "Start"), _k("R2", "X"), _k("R3", "Y"), _k("R4", "Z"), _k("R5", "Target")
    graph = RdfKnowledgeGraph.from_triples(
        [Triple(s, "p", x), Triple(t, "q", x), Triple(s, "p", y), Triple(y, "q", t),  # two of length 2
         Triple(s, "p", z), Triple(z, "p", _k("R6", "W")), Triple(_k("R6", "W"), "p", t)],  # one of length 3
        name="diamond",
    )
    mm = _build("mindmap", graph, embedder, None)
    from hublab.retrievers.components.reasoning import Budget

    paths = mm.shortest_paths("R1", "R5", Budget())
    assert sorted(tuple(t.render() for t in p) for p in paths) == [
        ("(R1:Start, p, R2:X)", "(R5:Target, q, R2:X)"),
        ("(R1:Start, p, R3:Y)", "(R3:Y, q, R5:Target)"),
    ]
    assert _build("mindmap", graph, embedder, None, max_path_length=1).shortest_paths("R1", "R5", Budget()) == []


# ---------------------------------------------------------------- configuration and parsing
def test_registry_and_unknown_parameters(gv3, embedder):
    for name in METHODS:
        assert get_retriever_class(name).name == name
    with pytest.raises(InputError, match="widht"):
        _build("tog", gv3, embedder, None, widht=3)
    with pytest.raises(InputError, match="embedder"):
        _build("fidelis", gv3, None, OracleLLM())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', {"a": 1}),
        ('Here it is:\n```json\n{"a": [1, 2]}\n```\nDone.', {"a": [1, 2]}),
        ("The answer is {'a': True, 'b': 'it''s'} ok", {"a": True, "b": "its"}),
        ('{"a": [1, 2,],}', {"a": [1, 2]}),
        ('Relations: {"relation": "venue [ICSA]"} and more', {"relation": "venue [ICSA]"}),
        ('{"selected": [1, 2, 3,', {"selected": [1, 2, 3]}),  # cut off by max_tokens
        ('{"answer": "IC', {"answer": "IC"}),
    ],
)
def test_parse_json_text(text, expected):
    assert parse_json_text(text) == expected


def test_parse_json_text_rejects_prose():
    with pytest.raises(ValueError):
        parse_json_text("no structured output { here")


def test_ask_json_wraps_a_bare_list_and_reports_errors():
    @dataclass
    class ListLLM(LLM):
        def _complete(self, prompt, *, json_schema, max_tokens, system):
            return LLMResponse(text="[3, 1]")

    schema = {"type": "object", "properties": {"selected": {"type": "array"}}}
    assert ask_json(ListLLM(), "p", schema).data == {"selected": [3, 1]}
    bad = ask_json(GarbageLLM(), "p", schema)
    assert not bad.ok and bad.error
    assert not ask_json(RaisingLLM(), "p", schema).ok


def test_index_and_option_matching():
    assert as_index_list([2, "3", "[1]", 9, 2, True], 3) == [1, 2, 0]
    options = ["venue", "publication year", "authors (inverse)"]
    assert match_option("Venue", options) == 0
    assert match_option('"authors (inverse)"', options) == 2
    assert match_option("publication-year", options) == 1
    assert match_option("2", options) == 1
    assert match_option("completely different", options) is None


@pytest.mark.parametrize("name", METHODS)
@pytest.mark.parametrize("variant", ["", "_local"])
def test_pipeline_yaml_builds(name, variant, gv3, embedder):
    """pipelines/<name>{,_local}.yaml name the registered type and only parameters the class accepts."""
    from hublab.pipeline.config import load_pipeline

    root = Path(__file__).resolve().parents[2]
    cfg = load_pipeline(root / "pipelines" / f"{name}{variant}.yaml")
    assert cfg.retriever_type == name
    assert (cfg.llm["backend"] == "none") == (variant == "_local")
    llm = NoneLLM() if variant else OracleLLM()
    retriever = _build(name, gv3, embedder, llm, **cfg.retriever_params)
    assert asdict(retriever.config).items() >= cfg.retriever_params.items()  # the retriever's one copy
