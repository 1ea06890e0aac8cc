"""HubLink's LLM path against the thesis (Ch. 4, Appendix A.1.1): the listings are the prompts sent, each path
carries its own triples into the partial-answer prompt, a hub is dropped only on "Insufficient Information",
failed LLM steps fall back visibly (RetrievalResult.fallbacks), FINDHUBROOTS walks with direction and the
PathToEntity reaches the prompt, GETHUBPATHSFORHUB fills every hub, LLM PATHTOTEXT is cached and fingerprinted.
All offline: the LLM doubles subclass ``hublab.llm.base.LLM``."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import yaml

from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.llm.base import LLM, LLMResponse
from hublab.retrievers.base import Resources, RetrievalResult
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.hubs import HubDetector, find_hub_roots
from hublab.retrievers.methods.hublink.search import HubSearch
from hublab.retrievers.registry import get_retriever_class
from support.baseline_support import make_vector_store

ROOT = Path(__file__).resolve().parents[2]
QUESTION = "Which research method does the self-adaptive systems survey use?"


def K(uid: str, text: str, *types: str) -> Knowledge:
    return Knowledge(uid, text, tuple(types))


def _graph() -> RdfKnowledgeGraph:
    root = K("R659055", "ECSA/ICSA proceedings", "Venue")
    p1, p2 = K("P1", "Microservice migration study", "Paper"), K("P2", "Self-adaptive systems survey", "Paper")
    c1, c2 = K("C1", "Contribution 1", "Contribution"), K("C2", "Contribution 2", "Contribution")
    return RdfKnowledgeGraph.from_triples([
        Triple(root, "has paper", p1), Triple(root, "has paper", p2),
        Triple(p1, "publication year", K("L1", "2019", "Literal")), Triple(p1, "contribution", c1),
        Triple(c1, "research method", K("L2", "case study", "Literal")), Triple(c1, "cites", p2),
        Triple(p2, "publication year", K("L3", "2021", "Literal")), Triple(p2, "contribution", c2),
        Triple(c2, "research method", K("L4", "systematic literature review", "Literal")),
    ], name="tiny")


class ThesisLLM(LLM):
    """A well-behaved LLM: answers each thesis prompt in the shape the listing asks for and records prompts."""

    def __init__(self, insufficient_for: tuple[str, ...] = ()) -> None:
        super().__init__(model="thesis-double")
        self.insufficient_for = insufficient_for
        self.prompts: list[str] = []

    def _complete(self, prompt, *, json_schema, max_tokens, system):
        self.prompts.append(prompt)
        if "break it down into its key components" in prompt:
            return LLMResponse("['Research Method', 'self-adaptive systems survey']",
                               data=["Research Method", "self-adaptive systems survey"])
        if "All Texts have the following information in common" in prompt:
            if any(f"(hub root) '{t}'" in prompt for t in self.insufficient_for):
                return LLMResponse("```\nInsufficient Information.\n```")
            return LLMResponse("The survey uses a systematic literature review.")
        if "expert text synthesizer" in prompt:
            return LLMResponse("The survey uses a systematic literature review [1].")
        if "ID-triple mappings" in prompt:
            ids = [int(m.group(1)) for m in re.finditer(r"^(\d+): .*research method", prompt, re.M)]
            return LLMResponse(json.dumps(ids), data=ids)
        if "path from a knowledge graph" in prompt:
            return LLMResponse("LLM TEXT: " + prompt.rsplit("### Path:", 1)[1].split("###")[0].strip())
        return LLMResponse("")


class BrokenLLM(LLM):
    """Every call fails (``error``), raises, answers nothing, or every structured answer is malformed."""

    def __init__(self, mode: str) -> None:
        super().__init__(model="broken")
        self.mode = mode

    def _complete(self, prompt, *, json_schema, max_tokens, system):
        if self.mode == "raise":
            raise RuntimeError("backend exploded")
        if self.mode == "error":
            return LLMResponse("", error="timeout")
        if self.mode == "empty":
            return LLMResponse("   ")
        return LLMResponse("}{ ### not json", data={"components": 7, "ids": "nope"} if json_schema else None)


@pytest.fixture(scope="module")
def embedder(minilm):
    return minilm  # the session's MiniLM (conftest): loaded once, each text embedded once


def _retriever(tmp_path, embedder, llm, graph=None, **kw):
    res = Resources(root_entity_ids=["R659055"], graph=graph or _graph(), embedder=embedder, llm=llm,
                    vector_store=make_vector_store(tmp_path / "hl.db"), index_name="tiny", cache_dir=str(tmp_path))
    r = get_retriever_class("hublink")(res, max_workers=2, **kw)
    r.index(progress=False)
    return r


def _partial_prompts(llm: ThesisLLM) -> list[str]:
    return [p for p in llm.prompts if "All Texts have the following information in common" in p]


def _prompt_of(llm: ThesisLLM, title: str) -> str:
    return next(p for p in _partial_prompts(llm) if f"(hub root) '{title}'" in p)


# ---------------------------------------------------------------- defect 1: each path carries its own triples


@pytest.mark.parametrize("topic", [None, "R659055"])
def test_partial_prompt_pairs_each_path_with_its_own_triples(embedder, tmp_path, topic):
    llm = ThesisLLM()
    r = _retriever(tmp_path, embedder, llm)
    r.retrieve(QUESTION, topic_entity_id=topic)
    prompt = _prompt_of(llm, "Self-adaptive systems survey")
    texts = prompt.split("**Provided Texts:**", 1)[1]
    blocks = re.findall(r"Description: (.*)\n\s+Triples: (.*)", texts)
    assert len(blocks) >= 2, texts
    records = r.hub_index.path_records()
    by_text = {rec["path_text"]: rec["triples"] for rec in records.values() if rec["hub_root"] == "P2"}
    for desc, triples in blocks:
        own = by_text[desc]
        assert triples.count("(") == len(own), (desc, triples)
        if "2021" in desc:
            assert "research method" not in triples and "2021" in triples
        if "systematic literature review" in desc:
            assert "publication year" not in triples and "systematic literature review" in triples


def test_thesis_order_of_output_triples():
    from hublab.retrievers.methods.hublink.answer import HubContext, Partial, PathEvidence, thesis_triple_order

    a = HubContext("A", "a", None, 0.5, [PathEvidence("pa", ["t1", "t2"], 0.5)])
    b = HubContext("B", "b", None, 0.9, [PathEvidence("pb1", ["t3", "t1"], 0.9), PathEvidence("pb2", ["t4"], 0.2)])
    order = thesis_triple_order([Partial(a, "x"), Partial(b, "y")])
    assert [t for t, _ in order] == ["t3", "t1", "t2", "t4"]  # paths by score, triples in path order, once
    assert dict(order)["t1"] == pytest.approx(0.9)


# ---------------------------------------------------------------- defect 2: failures are visible fallbacks


def test_well_behaved_llm_has_no_fallbacks(embedder, tmp_path):
    llm = ThesisLLM()
    r = _retriever(tmp_path, embedder, llm)
    for topic in (None, "R659055"):
        out = r.retrieve(QUESTION, topic_entity_id=topic)
        assert out.fallbacks == [], out.fallbacks
        assert out.answer.startswith("The survey uses a systematic literature review [1].")
        assert any("systematic literature review" in c.text for c in out.contexts)
        assert all("research method" in c.text for c in out.contexts)  # the LLM filter was applied


@pytest.mark.parametrize("mode", ["error", "raise", "empty", "malformed"])
def test_failing_llm_steps_fall_back_and_are_reported(embedder, tmp_path, mode):
    r = _retriever(tmp_path, embedder, BrokenLLM(mode))
    out = r.retrieve(QUESTION, topic_entity_id="R659055")
    assert isinstance(out, RetrievalResult)
    assert out.contexts and out.answer and out.sources  # still a valid result, from the LLM-free forms
    assert any("systematic literature review" in c.text for c in out.contexts)
    assert out.fallbacks
    steps = {f.split(":", 1)[0] for f in out.fallbacks}
    if mode == "malformed":  # free-text steps cannot be malformed; the structured ones can
        assert steps == {"components", "triple_filter"}
    else:
        assert {"components", "partial_answer", "final_answer", "triple_filter"} <= steps
        assert sum(f.startswith("partial_answer") for f in out.fallbacks) == len(out.sources)
    if mode == "error":
        assert "partial_answer: timeout" in out.fallbacks
    if mode == "raise":
        assert "final_answer: RuntimeError: backend exploded" in out.fallbacks


# ---------------------------------------------------------------- item 3: the thesis's listings, no extra gate


def test_prompts_sent_are_the_thesis_listings(embedder, tmp_path):
    llm = ThesisLLM()
    r = _retriever(tmp_path, embedder, llm)
    r.retrieve(QUESTION, topic_entity_id="R659055")
    sent = "\n".join(llm.prompts)
    for listing_line in ("#### Example 4: Partial Information",  # A.1 few-shot examples
                         "Do not conclude 'Insufficient Information' if at least one explicit data point exists.",
                         "You are an expert text synthesizer.",  # A.2
                         "Components: ['Publisher', 'SpringerLink', '2020']",  # A.3 few-shot
                         "[ID1, ID2, ID3, ...]"):  # A.4
        assert listing_line in sent, listing_line
    assert "relevant" not in json.dumps(prompts.COMPONENTS_SCHEMA) + json.dumps(prompts.FILTER_SCHEMA)


def test_thesis_listings_match_the_thesis_text(shared):
    """Every non-empty line of the prompts A.1-A.4 occurs in the thesis text (modulo whitespace and fences)."""
    thesis = (shared / "seeds" / "004_83388ef96cc2ee42.txt").read_text()
    norm = re.sub(r"[\s*#`']+", " ", thesis)
    for name in ("PARTIAL", "FINAL", "COMPONENTS", "FILTER"):
        for line in getattr(prompts, name).splitlines():
            words = re.sub(r"[\s*#`']+", " ", line).strip()
            if len(words) > 25 and "{" not in words:
                assert words[:60] in norm or words[-60:] in norm, (name, line)


def test_hub_dropped_only_when_partial_answer_is_insufficient(embedder, tmp_path):
    llm = ThesisLLM(insufficient_for=("Microservice migration study",))
    r = _retriever(tmp_path, embedder, llm)
    out = r.retrieve(QUESTION, topic_entity_id="R659055")
    assert [s["id"] for s in out.sources] == ["P2"]  # P1 said "Insufficient Information"; P2 kept on free text
    assert out.fallbacks == []


# ---------------------------------------------------------------- item 4: directed FINDHUBROOTS, PathToEntity


def test_find_hub_roots_keeps_walker_direction():
    from hublab.retrievers.methods.hublink.hubs import EntityWithDirection, HubRootFinder

    t, a, p1 = K("T", "topic"), K("A", "node a"), K("P1", "Paper 1", "Paper")
    p0, c, p3 = K("P0", "Paper 0", "Paper"), K("C", "contribution"), K("P3", "Paper 3", "Paper")
    g = RdfKnowledgeGraph.from_triples([
        Triple(t, "x", a), Triple(p1, "y", a),  # T -> A <- P1: needs a direction change to reach P1
        Triple(p0, "cites", t), Triple(p3, "cites", p0),  # P3 -> P0 -> T: left walker passes hub roots
        Triple(t, "has", c), Triple(c, "part of", K("P4", "Paper 4", "Paper")),  # right walker
    ], name="dir")
    det = HubDetector(g, ["Paper"])
    assert "P1" in find_hub_roots(g, det, ["T"], max_levels=5)[0]  # the undirected search flips direction
    finder = HubRootFinder(g, det)
    entities = [EntityWithDirection("T", True), EntityWithDirection("T", False)]
    found: list[list[str]] = []
    paths = {}
    for _ in range(4):
        roots, entities = finder.find(entities)
        found.append([r.uid for r in roots])
        paths.update({r.uid: r.path for r in roots})
    # level 1 is the topic entity itself (not a hub); hop 1: P0 by the left walker; hop 2: P3 (the left walker
    # went on past the hub root P0) and P4 (right walker via C); P1 would need a direction change
    assert found[:3] == [[], ["P0"], ["P3", "P4"]]
    assert "P1" not in sum(found, [])
    assert [tr.render() for tr in paths["P3"]] == [Triple(p0, "cites", t).render(), Triple(p3, "cites", p0).render()]


def test_path_to_topic_entity_is_in_the_partial_answer_context(embedder, tmp_path):
    llm = ThesisLLM()
    r = _retriever(tmp_path, embedder, llm)
    r.retrieve(QUESTION, topic_entity_id="R659055")
    prompt = _prompt_of(llm, "Self-adaptive systems survey")
    common = prompt.split("**All Texts have the following information in common:**", 1)[1].split("**Provided")[0]
    assert "Path from the topic entity" in common and "ECSA/ICSA proceedings: has paper Self-adaptive" in common
    llm2 = ThesisLLM()
    r2 = _retriever(tmp_path / "d", embedder, llm2)
    r2.retrieve(QUESTION)  # direct strategy: no topic entity, no path
    assert all("Path from the topic entity" not in p for p in _partial_prompts(llm2))


# ---------------------------------------------------------------- item 5: GETHUBPATHSFORHUB per hub


def test_every_hub_gets_top_paths_to_keep_paths(tmp_path):
    store = make_vector_store(tmp_path / "v.db")
    store.ensure_collection("c", 2, "COSINE")
    rows, vecs = [], []
    for hub, n, vec in (("A", 12, [1.0, 0.0]), ("B", 3, [0.6, 0.8])):
        for i in range(n):
            for level in ("path", "predicate"):
                rows.append({"hub_root": hub, "path_hash": f"{hub}{i}", "level": level, "text": f"{hub}{i}",
                             "subject": "", "gen": "g"})
                vecs.append(vec)
    store.insert("c", np.asarray(vecs, dtype=np.float32), rows)
    search = HubSearch(store, "c", 2, 0.05)
    hubs: dict = {}
    search.paths_for_hubs(np.asarray([[1.0, 0.0]], dtype=np.float32), ["A", "B"], hubs)
    assert sorted(hubs) == ["A", "B"]
    assert len(hubs["A"].paths) == 2 and len(hubs["B"].paths) == 2  # B is not crowded out by A's hits


def test_hub_searches_from_threads_give_the_sequential_result(tmp_path, monkeypatch):
    """A store that answers searches concurrently (a server) gets each hub's searches from a thread pool: the hubs,
    their paths and scores are exactly those of one search after another."""
    store = make_vector_store(tmp_path / "v.db")
    store.ensure_collection("c", 2, "COSINE")
    rows, vecs = [], []
    rng = np.random.default_rng(3)
    for hub in "ABCDEF":
        for i in range(15):
            rows.append({"hub_root": hub, "path_hash": f"{hub}{i}", "level": "path", "text": f"{hub}{i}",
                         "subject": f"s{i % 4}", "gen": "g"})
            vecs.append(rng.normal(size=2))
    store.insert("c", np.asarray(vecs, dtype=np.float32), rows)
    query = np.asarray([[1.0, 0.2], [0.1, 1.0]], dtype=np.float32)
    found = {}
    for workers in (1, 4):
        monkeypatch.setattr(type(store), "concurrent_searches", lambda self, name, w=workers: w)
        search = HubSearch(store, "c", 5, 0.05)
        hubs: dict = {}
        search.paths_for_hubs(query, list("ABCDEF"), hubs)
        candidates = {r: h for r, h in search.global_search(query, []).items()}
        filled = search.fill_or_prune(query, candidates)
        found[workers] = ([(r, sorted((p.path_hash, p.score) for p in h.paths.values())) for r, h in hubs.items()],
                          [(r, sorted((p.path_hash, p.score) for p in h.paths.values())) for r, h in filled.items()])
        assert (search._pool is not None) == (workers > 1)
    assert found[1] == found[4] and found[1][0] and found[1][1]


# ---------------------------------------------------------------- item 6: LLM PATHTOTEXT


def test_llm_path_text_cached_and_fingerprinted(embedder, tmp_path):
    llm = ThesisLLM()
    r = _retriever(tmp_path, embedder, llm, llm_path_text=True)
    n_calls = sum("path from a knowledge graph" in p for p in llm.prompts)
    stats = r.index(progress=False)
    assert stats["hubs_reindexed"] == 0
    texts = [rec["path_text"] for rec in r.hub_index.path_records().values()]
    assert n_calls == len(texts) and all(t.startswith("LLM TEXT: ") for t in texts)
    free = _retriever(tmp_path / "f", embedder, ThesisLLM(), llm_path_text=False)
    assert free.hub_index.collection != r.hub_index.collection  # switching it re-indexes
    none_on = _retriever(tmp_path / "n", embedder, None, llm_path_text=True)
    none_off = _retriever(tmp_path / "m", embedder, None, llm_path_text=False)
    assert none_on.hub_index.collection == none_off.hub_index.collection  # LLM-free: the template either way
    # a rebuilt index (new store, same index folder) verbalises nothing again: the texts are cached
    llm2 = ThesisLLM()
    res = Resources(root_entity_ids=["R659055"], graph=_graph(), embedder=embedder, llm=llm2,
                    vector_store=make_vector_store(tmp_path / "o" / "hl.db"), index_name="tiny",
                    cache_dir=str(tmp_path))
    again = get_retriever_class("hublink")(res, llm_path_text=True)
    assert again.index(progress=False)["hubs_reindexed"] == 2
    assert not any("path from a knowledge graph" in p for p in llm2.prompts)
    assert sorted(rec["path_text"] for rec in again.hub_index.path_records().values()) == sorted(texts)


def test_thesis_pipelines_verbalise_paths_with_the_llm():
    for name, expected in (("hublink", True), ("hublink_fast", True), ("hublink_local", None)):
        params = yaml.safe_load((ROOT / "pipelines" / f"{name}.yaml").read_text())["retriever"]["params"]
        assert params.get("llm_path_text") is expected, name


def test_failed_llm_path_text_falls_back_to_the_template_and_is_counted(embedder, tmp_path):
    res = Resources(root_entity_ids=["R659055"], graph=_graph(), embedder=embedder, llm=BrokenLLM("raise"),
                    vector_store=make_vector_store(tmp_path / "hl.db"), index_name="tiny", cache_dir=str(tmp_path))
    r = get_retriever_class("hublink")(res, llm_path_text=True)
    stats = r.index(progress=False)
    records = r.hub_index.path_records()
    assert stats["llm_path_text"] and stats["path_text_fallbacks"] == stats["paths"] == len(records)
    assert all(":" in rec["path_text"] and not rec["path_text"].startswith("LLM") for rec in records.values())
    out = r.retrieve(QUESTION, topic_entity_id="R659055")
    assert out.contexts and any(f.startswith("path_to_text: RuntimeError") for f in out.fallbacks)
