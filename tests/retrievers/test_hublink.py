"""HubLink retriever on a tiny synthetic graph (papers -> contributions -> values): hub roots, acyclic hub
paths that stop at other hub roots, hub score formula, diversity ranker, incremental re-index, 1-hop
retrieval (direct and traversal) and empty-but-valid results on bad input."""

from __future__ import annotations

import math

import pytest

from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.llm.base import LLM, LLMResponse
from hublab.retrievers.base import Resources, RetrievalResult
from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths
from hublab.retrievers.methods.hublink.search import Hub, HubSearch, PathHit, hub_score, prune_hubs
from hublab.retrievers.registry import get_retriever_class
from support.baseline_support import make_vector_store
from support.llm_servers import TEST_LLAMA_THREADS
from support.real_parts import need_module


def K(uid: str, text: str, *types: str) -> Knowledge:
    return Knowledge(uid, text, tuple(types))


def _graph() -> RdfKnowledgeGraph:
    root = K("R659055", "ECSA/ICSA proceedings", "Venue")
    p1, p2 = K("P1", "Microservice migration study", "Paper"), K("P2", "Self-adaptive systems survey", "Paper")
    c1, c2 = K("C1", "Contribution 1", "Contribution"), K("C2", "Contribution 2", "Contribution")
    triples = [
        Triple(root, "has paper", p1), Triple(root, "has paper", p2),
        Triple(p1, "publication year", K("L1", "2019", "Literal")), Triple(p1, "contribution", c1),
        Triple(c1, "research method", K("L2", "case study", "Literal")),
        Triple(c1, "cites", p2),  # must stop at the other hub root
        Triple(p2, "publication year", K("L3", "2021", "Literal")), Triple(p2, "contribution", c2),
        Triple(c2, "research method", K("L4", "systematic literature review", "Literal")),
    ]
    return RdfKnowledgeGraph.from_triples(triples, name="tiny")


@pytest.fixture(scope="module")
def embedder(minilm):
    return minilm  # the session's MiniLM (conftest): loaded once, each text embedded once


def _retriever(graph, embedder, tmp_path, **kw):
    res = Resources(graph=graph, root_entity_ids=["R659055"],
                    embedder=embedder, llm=None, vector_store=make_vector_store(tmp_path / "hl.db"),
                    index_name="tiny", cache_dir=str(tmp_path))
    return get_retriever_class("hublink")(res, **kw)


def test_hub_roots_and_paths_are_acyclic_and_stop_at_hub_roots():
    g = _graph()
    det = HubDetector(g, ["Paper"])
    assert sorted(all_hub_roots(g, det, ["R659055"])) == ["P1", "P2"]
    paths = hub_paths(g, det, "P1")
    rendered = {tuple(t.object.uid for t in p.triples) for p in paths}
    assert ("C1", "P2") in rendered  # ends at the other hub root, not inside it
    assert not any("L3" in r or "C2" in r for r in rendered)
    for p in paths:
        nodes = ["P1"] + [t.object.uid for t in p.triples]
        assert len(nodes) == len(set(nodes))


def test_hub_score_is_exp_weighted_mean():
    s = [0.9, 0.5]
    w = [math.exp(5 * x) for x in s]
    assert hub_score(s, 5) == pytest.approx((w[0] * 0.9 + w[1] * 0.5) / sum(w))
    assert hub_score(s, 0) == pytest.approx(0.7)
    a, b = Hub("A"), Hub("B")
    a.add(PathHit("a1", "A", 0.9, "x", "p"))
    b.add(PathHit("b1", "B", 0.8, "x", "p"))
    assert [h.root for h in prune_hubs({"A": a, "B": b}, 5, 1)] == ["A"]


def test_diversity_ranker_penalises_repeated_subjects():
    hub = Hub("A")
    for ph, score, subj in [("1", 0.90, "S1"), ("2", 0.89, "S1"), ("3", 0.88, "S2")]:
        hub.add(PathHit(ph, "A", score, "triple", f"{subj} text", subject=subj))
    ranked = [h.path_hash for h in HubSearch(None, "c", 10, 0.05).diversity_rank(hub)]
    assert ranked.index("3") < ranked.index("2")
    ranked0 = [h.path_hash for h in HubSearch(None, "c", 10, 0.0).diversity_rank(hub)]
    assert ranked0 == ["1", "2", "3"]


def test_incremental_reindex_touches_only_changed_hubs(embedder, tmp_path):
    g = _graph()
    r = _retriever(g, embedder, tmp_path)
    first = r.index(progress=False)
    assert first["hubs"] == 2 and first["hubs_reindexed"] == 2 and first["vectors_written"] > 0
    assert r.index(progress=False)["hubs_reindexed"] == 0
    g.add(Triple(K("C2", "Contribution 2", "Contribution"), "evaluation", K("L9", "controlled experiment")))
    r2 = _retriever(g, embedder, tmp_path)
    assert r2.index(progress=False)["hubs_reindexed"] == 1


@pytest.mark.parametrize("topic", [None, "R659055"])
def test_one_hop_answer_retrieved_direct_and_traversal(embedder, tmp_path, topic):
    r = _retriever(_graph(), embedder, tmp_path)
    r.index(progress=False)
    res = r.retrieve("Which research method does the self-adaptive systems survey use?", topic_entity_id=topic)
    texts = [c.text for c in res.contexts]
    assert any("systematic literature review" in t for t in texts[:10]), (res.reason, texts)
    assert res.answer and any(s["id"] == "P2" for s in res.sources)


def test_unknown_topic_entity_and_empty_graph_give_empty_valid_results(embedder, tmp_path):
    r = _retriever(_graph(), embedder, tmp_path)
    res = r.retrieve("What is the research method?", topic_entity_id="R_DOES_NOT_EXIST")
    assert res.contexts == [] and "unknown topic entity" in (res.reason or "")
    empty = _retriever(RdfKnowledgeGraph(name="empty"), embedder, tmp_path / "e")
    res = empty.retrieve("anything?")
    assert res.contexts == [] and res.reason


@pytest.mark.llama
def test_embedded_llamacpp_end_to_end_one_question(embedder, tmp_path):
    """Every LLM step through the embedded gemma (grammar JSON), on one question with a small per-call token budget:
    the LLM is called (partial answers, final answer, output filter), and the result holds retrieved triples from
    the graph, an answer and the source list. A 270M model's wording is not judged."""
    need_module("llama_cpp")
    from hublab.llm.llamacpp import LlamaCppLLM

    budget = 48  # `llm.max_tokens`: every call's completion capped (test speed)
    llm = LlamaCppLLM(model="gemma3-270m", temperature=0.0, max_tokens=budget,  # `backend: llamacpp` defaults
                      n_threads=TEST_LLAMA_THREADS)
    graph = _graph()
    res = Resources(graph=graph, root_entity_ids=["R659055"], embedder=embedder, llm=llm,
                    vector_store=make_vector_store(tmp_path / "hl.db"),
                    index_name="tiny_llm", cache_dir=str(tmp_path))
    r = get_retriever_class("hublink")(res, number_of_hubs=2, max_workers=1)
    r.index(progress=False)
    llm.reset_usage()
    out = r.retrieve("Which research method does the self-adaptive systems survey use?", topic_entity_id="R659055")
    usage = llm.reset_usage()
    assert usage.calls >= 3 and usage.errors == 0, usage  # >= 1 partial answer, the final answer, the filter
    assert usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= budget * usage.calls, usage
    assert out.contexts, (out.reason, out.fallbacks)
    known = {t.render() for t in graph.triples()}
    assert all(c.triple is not None and c.text in known for c in out.contexts), [c.text for c in out.contexts]
    assert out.answer and out.sources and {s["id"] for s in out.sources} <= {"P1", "P2"}


def test_gv3_export_hubs_and_paths(gv3_orkg_graph):
    """Real ORKG GV3 export: papers reachable from R659055 are the hub roots; their paths are acyclic, start at
    the root, and never continue past another paper."""
    g = gv3_orkg_graph
    det = HubDetector(g, ["Paper"])
    roots = all_hub_roots(g, det, ["R659055"])
    assert len(roots) == len(set(roots)) > 100 and all(det.is_hub_root(r) for r in roots)
    total = 0
    for r in roots[:20]:
        for p in hub_paths(g, det, r):
            total += 1
            assert p.triples[0].subject.uid == r
            nodes = [r] + [t.object.uid for t in p.triples]
            assert len(nodes) == len(set(nodes))
            assert not any(det.is_hub_root(n) for n in nodes[1:-1])
    assert total > 100


# ---------------------------------------------------------------- path enumeration, hub score, bad input


def test_hub_paths_acyclic_with_cycle_present_and_max_length():
    root, a, b = K("P1", "Paper 1", "Paper"), K("A", "node a"), K("B", "node b")
    g = RdfKnowledgeGraph.from_triples([
        Triple(root, "has", a), Triple(a, "next", b), Triple(b, "back", a),  # cycle A -> B -> A
        Triple(b, "root again", root),  # cycle back to the hub root
    ], name="cyclic")
    det = HubDetector(g, ["Paper"])
    paths = hub_paths(g, det, "P1")
    assert paths  # terminates despite the cycles
    for p in paths:
        nodes = ["P1"] + [t.object.uid for t in p.triples]
        assert len(nodes) == len(set(nodes)), nodes
    assert {tuple(t.object.uid for t in p.triples) for p in paths} == {("A", "B")}
    short = hub_paths(g, det, "P1", max_length=1)
    assert [tuple(t.object.uid for t in p.triples) for p in short] == [("A",)]
    assert all(len(p.triples) <= 1 for p in short)


def test_hub_score_alpha_interpolates_mean_to_max():
    s = [0.9, 0.5, 0.4]
    assert hub_score(s, 0) == pytest.approx(sum(s) / len(s))
    values = [hub_score(s, a) for a in (0, 1, 5, 20, 200)]
    assert values == sorted(values)  # monotone in alpha
    assert values[-1] == pytest.approx(max(s), abs=1e-6)
    assert hub_score([], 5) == float("-inf")


def test_diversity_ranker_penalty_grows_per_repeat_and_ignores_non_triple_levels():
    hub = Hub("A")
    for ph, score, level, subj in [("1", 0.90, "triple", "S"), ("2", 0.89, "triple", "S"),
                                   ("3", 0.88, "triple", "S"), ("4", 0.80, "path", "")]:
        hub.add(PathHit(ph, "A", score, level, "t", subject=subj))
    adjusted = {h.path_hash: h.score for h in HubSearch(None, "c", 10, 0.05).diversity_rank(hub)}
    assert adjusted["1"] == pytest.approx(0.90)
    assert adjusted["2"] == pytest.approx(0.89 - 0.05)
    assert adjusted["3"] == pytest.approx(0.88 - 0.10)
    assert adjusted["4"] == pytest.approx(0.80)


def test_empty_question_gives_empty_valid_result(embedder, tmp_path):
    r = _retriever(_graph(), embedder, tmp_path)
    for q in ("", "   "):
        res = r.retrieve(q)
        assert res.contexts == [] and res.reason == "empty question"


class _FlakyEmbedder:
    """Delegates to a real embedder but raises on every call after the first (a crash mid-indexing)."""

    def __init__(self, inner) -> None:
        self.inner, self.name, self.dim, self.calls = inner, inner.name, inner.dim, 0

    def embed(self, texts):
        self.calls += 1
        if self.calls > 1:
            raise RuntimeError("simulated crash")
        return self.inner.embed(texts)


def test_crash_mid_indexing_keeps_committed_hubs_and_rerun_completes(embedder, tmp_path):
    """A crash keeps the committed batch but the index does not count as built (issue #20: a partial index is
    resumed, never searched); the rerun indexes only the missing hub and completes it."""
    r = _retriever(_graph(), embedder, tmp_path)
    r.hub_index.embedder = _FlakyEmbedder(embedder)
    with pytest.raises(RuntimeError, match="simulated crash"):
        r.hub_index.build(progress=False, batch_hubs=1)
    assert not r.hub_index.is_built() and len(r.hub_index.manifest()) == 1  # first batch committed
    assert "incomplete" in (r.hub_index.build_state() or "")
    r.hub_index.embedder = embedder
    rerun = r.hub_index.build(progress=False, batch_hubs=1)
    assert rerun["hubs_reindexed"] == 1 and len(r.hub_index.manifest()) == 2 and r.hub_index.is_built()
    res = r.retrieve("Which research method does the study use?")
    assert res.contexts and res.reason is None
    assert r.hub_index.build(progress=False)["hubs_reindexed"] == 0


# ---------------------------------------------------------------- LLM that misbehaves


class _GarbageLLM(LLM):
    """Answers every prompt with junk: wrong JSON shapes, or a failed call."""

    def __init__(self, mode: str) -> None:
        super().__init__(model="garbage")
        self.mode = mode

    def _complete(self, prompt, *, json_schema, max_tokens, system):
        if self.mode == "error":
            return LLMResponse("", error="timeout")
        data = {"components": "not a list", "partial_answer": 42, "relevant": "maybe", "ids": "nope"}
        return LLMResponse("}{ ### not json", data=data if json_schema else None)


@pytest.mark.parametrize("mode", ["malformed", "error"])
def test_garbage_llm_still_gives_valid_result(embedder, tmp_path, mode):
    g = _graph()
    res = Resources(graph=g, root_entity_ids=["R659055"],
                    embedder=embedder, llm=_GarbageLLM(mode),
                    vector_store=make_vector_store(tmp_path / "hl.db"), index_name="tiny", cache_dir=str(tmp_path))
    r = get_retriever_class("hublink")(res, max_workers=2)
    r.index(progress=False)
    out = r.retrieve("Which research method does the self-adaptive systems survey use?", topic_entity_id="R659055")
    assert isinstance(out, RetrievalResult)
    assert out.contexts and out.answer and out.sources  # each step fell back to its LLM-free form
    assert any("systematic literature review" in c.text for c in out.contexts)


# ---------------------------------------------------------------- real GV3 subgraph (10 papers; fixture in conftest.py)


def test_gv3_subgraph_index_stats(hublink_gv3_small):
    g, papers, r, stats = hublink_gv3_small
    assert stats["hubs"] == 10 and stats["hubs_reindexed"] == 10 and stats["paths"] > 10
    assert r.index(progress=False)["hubs_reindexed"] == 0


@pytest.mark.parametrize("topic", [None, "R659055"])
def test_gv3_one_hop_venue_question(hublink_gv3_small, topic):
    g, papers, r, _ = hublink_gv3_small
    paper = papers[3]
    title = g.entity(paper).text
    venue = next(t for t in g.outgoing(paper) if t.predicate == "venue")
    res = r.retrieve(f"In which venue has the paper with the title '{title}' been published?",
                     topic_entity_id=topic)
    got = [(c.triple.subject.uid, c.triple.predicate, c.triple.object.uid) for c in res.contexts if c.triple]
    assert (paper, "venue", venue.object.uid) in got[:10], (res.reason, got[:10])
    assert any(s["id"] == paper for s in res.sources)
