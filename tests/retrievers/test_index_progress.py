"""Index builds show themselves (issue #21 item 5): a bar over the hubs or units built, with the LLM calls a
HubLink path-text build makes; one line saying "up to date" (and where) when nothing is to be built, instead of
a bar at 0 of N; nothing at all without ``progress``. And building before the first question (what the runner now
does, ``ensure_ready``) gives every method exactly the results of the lazy build on its first question."""

from __future__ import annotations

import re

import pytest

from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.base import Resources
from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths
from hublab.retrievers.registry import build_retriever
from hublab.vectorstore.factory import build_vector_store
from support.baseline_support import ScriptedLLM

QUESTIONS = ["Which papers use a case study as research method?", "What venue published the survey in 2019?",
             "Who are the authors of the architecture paper?"]


@pytest.fixture(scope="module")
def six_papers(gv3_orkg_graph) -> RdfKnowledgeGraph:
    det = HubDetector(gv3_orkg_graph, ["Paper"])
    papers = all_hub_roots(gv3_orkg_graph, det, ["R659055"])[:6]
    triples = {t.render(): t for p in papers for hp in hub_paths(gv3_orkg_graph, det, p) for t in hp.triples}
    return RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_six")


def _hublink(graph, tmp_path, hashing, llm=None, **params):
    res = Resources(graph=graph, embedder=hashing, vector_store=build_vector_store({}, tmp_path / "ix.db"), llm=llm,
                    index_name="six", cache_dir=str(tmp_path), index_dir=str(tmp_path), root_entity_ids=["R659055"])
    return build_retriever("hublink", res, params)


def test_hublink_build_shows_hubs_and_llm_calls_then_says_up_to_date(six_papers, tmp_path, hashing, capsys):
    llm = ScriptedLLM(["A paper path, told in one sentence."])
    r = _hublink(six_papers, tmp_path, hashing, llm, llm_path_text=True)
    stats = r.index(progress=True)
    err = capsys.readouterr().err
    calls = sum("path from a knowledge graph" in p for p in llm.prompts)
    assert stats["hubs"] == 6 and stats["hubs_reindexed"] == 6 and calls > 6
    assert f"HubLink index {r.hub_index.collection}" in err
    assert re.search(r"6/6\s+hubs", err), err  # hubs done of total
    assert f"LLM calls {calls}/{calls}" in err  # the calls announced are the calls made
    assert "up to date" not in err

    again = _hublink(six_papers, tmp_path, hashing, ScriptedLLM(["unused"]), llm_path_text=True)
    assert again.index(progress=True)["hubs_reindexed"] == 0
    err = capsys.readouterr().err
    assert f"HubLink index {r.hub_index.collection}: 6 hubs up to date ({tmp_path})" in err.replace("\n", "")
    assert "0/0" not in err and "hubs 0%" not in err  # no bar at "indexing 0 of N"

    again.index(progress=False)
    assert capsys.readouterr().err == ""


def test_hublink_without_llm_texts_announces_no_llm_calls(six_papers, tmp_path, hashing, capsys):
    _hublink(six_papers, tmp_path, hashing).index(progress=True)
    err = capsys.readouterr().err
    assert re.search(r"6/6\s+hubs", err) and "LLM calls" not in err


def test_dense_index_bar_then_up_to_date_with_its_store(six_papers, tmp_path, hashing, capsys):
    def vss():
        res = Resources(graph=six_papers, embedder=hashing, index_name="six",
                        vector_store=build_vector_store({}, tmp_path / "dense.db"))
        return build_retriever("vss", res, {"units": "triples"})

    n = len(list(six_papers.triples()))
    vss().index(progress=True)
    err = capsys.readouterr().err
    assert "dense index vss_triples_six_any" in err and re.search(rf"{n}/{n}\s+units", err), err
    vss().index(progress=True)
    err = capsys.readouterr().err.replace("\n", "")
    assert f"dense index vss_triples_six_any: {n} units up to date ({tmp_path / 'dense.db'})" in err
    vss().index(progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("method,params", [
    ("four_step_focus", {}), ("vss", {"units": "both"}), ("difar", {}), ("hybrid", {}), ("vector", {}),
    ("mindmap", {}), ("bm25", {}),
])
def test_building_before_the_first_question_changes_no_result(method, params, six_papers, tmp_path, hashing):
    def answers(prebuild: bool, where: str):
        res = Resources(graph=six_papers, embedder=hashing, index_name=f"six_{where}", root_entity_ids=["R659055"],
                        vector_store=build_vector_store({}, tmp_path / f"{where}.db"), cache_dir=str(tmp_path))
        r = build_retriever(method, res, params)
        if prebuild:
            r.ensure_ready(progress=False)
        return [[(c.text, None if c.score is None else round(c.score, 6)) for c in r.retrieve(q).contexts]
                for q in QUESTIONS]

    lazy = answers(False, "lazy")
    assert any(lazy)  # the method retrieves something here (else the comparison proves nothing)
    assert answers(True, "pre") == lazy
