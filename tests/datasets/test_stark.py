"""STaRK adapter: the stark-qa layout on a synthetic SKB, the KnowledgeGraph wrapper, metrics, CLI, retrievers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from conftest import shared_embedding_cache
from hublab.datasets.stark.skb import SkbKnowledgeGraph, load_qa
from hublab.datasets.stark.synthetic import write_synthetic_skb
from hublab.errors import InputError
from hublab.evaluation.stark import query_metrics
from hublab.experiment.stark_eval import evaluate, ranked_node_ids
from hublab.retrievers.base import Resources
from hublab.retrievers.registry import build_retriever
from support.baseline_support import ScriptedLLM


@pytest.fixture(scope="session")
def skb_dir(tmp_path_factory):
    return write_synthetic_skb(tmp_path_factory.mktemp("skb") / "synthetic_mag")


@pytest.fixture(scope="session")
def skb(skb_dir):
    return SkbKnowledgeGraph.load(skb_dir)


@pytest.fixture(scope="session")
def stark_res(skb, minilm):
    return Resources(graph=skb, embedder=minilm, index_name="stark_t")


def _paper(skb, title_prefix: str):
    return next(e for e in skb.entities_by_type("paper") if e.text.startswith(title_prefix))


def test_skb_layout_loads_as_knowledge_graph(skb, skb_dir):
    assert skb.name == "synthetic_mag" and skb.candidate_types == ["paper"]
    assert skb.node_types() == ["author", "field_of_study", "institution", "paper"]
    assert len(skb.entities_by_type("paper")) == 48 and len(skb.entities_by_type("author")) == 16
    author = skb.entities_by_type("author")[0]
    written = [t for t in skb.outgoing(author.uid) if t.predicate == "author___writes___paper"]
    assert written and all(t.object.types == ("paper",) for t in written)
    for t in written:  # incoming of the paper mirrors outgoing of the author
        assert any(x.subject.uid == author.uid for x in skb.incoming(t.object.uid))
    assert len(skb) == sum(1 for _ in skb.triples())
    doc = skb.document(written[0].object.uid)
    assert doc.startswith("paper: ") and "abstract:" in doc
    assert skb.entity("999999") is None and skb.outgoing("nope") == []
    splits = {s: load_qa(skb_dir, s) for s in ("train", "val", "test", "test-0.1")}
    ids = [q.qid for s in ("train", "val", "test") for q in splits[s]]
    assert len(ids) == len(set(ids)) and {q.qid for q in splits["test-0.1"]} <= {q.qid for q in splits["test"]}


def test_answers_are_consistent_with_the_graph(skb, skb_dir):
    for q in load_qa(skb_dir, "train"):
        if q.query.startswith("Find papers by "):
            name = q.query[len("Find papers by ") :].split(" on ")[0]
            author = next(e for e in skb.entities_by_type("author") if e.text == name)
            written = {t.object.uid for t in skb.outgoing(author.uid)}
            assert {str(a) for a in q.answer_ids} <= written


def test_bad_qa_files_name_file_row_and_field(tmp_path):
    (tmp_path / "stark_qa").mkdir()
    (tmp_path / "split").mkdir()
    (tmp_path / "stark_qa" / "stark_qa.csv").write_text("id,query,answer_ids\n0,q,[1]\n1,q2,not a list\n")
    (tmp_path / "split" / "test.index").write_text("0\n1\n")
    with pytest.raises(InputError) as err:
        load_qa(tmp_path, "test")
    assert err.value.row == 2 and err.value.field == "answer_ids"
    with pytest.raises(InputError, match="unknown split"):
        load_qa(tmp_path, "dev")
    with pytest.raises(InputError, match="processed/node_info.pkl"):
        SkbKnowledgeGraph.load(tmp_path)


def test_stark_metrics_semantics():
    m = query_metrics([5, 3, 9, 1], [1, 3])
    assert m == {"hit_at_1": 0.0, "hit_at_5": 1.0, "recall_at_20": 1.0, "mrr": 0.5}
    assert query_metrics([], [1])["mrr"] == 0.0
    assert query_metrics(list(range(100, 125)) + [1], [1, 2])["recall_at_20"] == 0.0


@pytest.mark.parametrize("name", ["bm25", "vss", "hybrid", "four_step_focus"])
def test_retrievers_on_synthetic_skb(skb, skb_dir, stark_res, name):
    r = build_retriever(name, stark_res, {})
    r.index()
    # Known-answer query: a title lookup must put that paper first.
    target = _paper(skb, "Interpretable")
    out = r.retrieve(f"Show me the paper titled '{target.text}'.")
    ids = ranked_node_ids(out)
    assert ids and ids[0] == int(target.uid), (name, ids[:5], out.reason)
    assert all(skb.type_name(i) == "paper" for i in ids)  # STaRK-MAG candidate set
    report = evaluate(r, load_qa(skb_dir, "test"), split="test")
    assert report.n_queries == len(load_qa(skb_dir, "test"))
    assert set(report.metrics) == {"hit_at_1", "hit_at_5", "recall_at_20", "mrr"}
    assert report.metrics["hit_at_5"] >= 0.6, report.metrics
    assert report.metrics["mrr"] >= report.metrics["hit_at_1"] - 1e-9


def test_four_step_focus_solves_multi_hop_with_llm_triplets(skb, skb_dir, stark_res):
    q = next(q for q in load_qa(skb_dir, "train") + load_qa(skb_dir, "test") if "researchers at" in q.query)
    inst = q.query.split("researchers at ")[1].rstrip("?")
    topic = q.query.split("papers about ")[1].split(" were")[0]
    plan = {
        "triplets": [
            {"head": "?2", "head_type": "author", "relation": "author___affiliated_with___institution",
             "tail": inst, "tail_type": "institution"},
            {"head": "?2", "head_type": "author", "relation": "author___writes___paper", "tail": "?1",
             "tail_type": "paper"},
            {"head": "?1", "head_type": "paper", "relation": "paper___has_topic___field_of_study", "tail": topic,
             "tail_type": "field_of_study"},
        ],
        "target": "?1",
    }
    llm = ScriptedLLM([plan])
    r = build_retriever("four_step_focus", Resources(skb, stark_res.embedder, llm), {"rerank": False})
    out = r.retrieve(q.query)
    ids = ranked_node_ids(out)
    n = len(q.answer_ids)
    assert set(ids[:n]) == set(q.answer_ids)  # exactly the graph-supported answers on top
    assert all(c.metadata["graph_supported"] for c in out.contexts[:n])
    assert not any(c.metadata["graph_supported"] for c in out.contexts[n:])  # VSS backfill below them
    assert r.last_trace.rounds[-1]["1"] == n


@pytest.mark.slow  # the stark CLI loads MiniLM
def test_cli_stark_eval(skb_dir, tmp_path):
    from hublab.cli import app

    out = tmp_path / "report.json"
    res = CliRunner().invoke(app, ["stark", "eval", "--skb", str(skb_dir), "--split", "test", "--retriever", "bm25",
                                   "--limit", "4", "--out", str(out)])
    assert res.exit_code == 0, res.output
    assert "hit_at_1=" in res.output and "mrr=" in res.output
    data = json.loads(out.read_text())
    assert data["n_queries"] == 4 and len(data["per_query"]) == 4
    # Recall@20 recomputed from each query's gold and predicted node ids, and the report's value is their mean
    recalls = [len(set(q["answer_ids"]) & set(q["pred_ids"][:20])) / len(set(q["answer_ids"]))
               for q in data["per_query"]]
    assert [q["recall_at_20"] for q in data["per_query"]] == pytest.approx(recalls)
    assert data["metrics"]["recall_at_20"] == pytest.approx(sum(recalls) / len(recalls))
    assert any(q["pred_ids"] for q in data["per_query"]), "bm25 ranked no node for any query"


@pytest.mark.slow  # the stark CLI loads MiniLM
def test_cli_four_step_focus_with_milvus_index_reused(skb_dir, tmp_path, monkeypatch):
    from hublab.cli import app

    # the CLI keeps its embedding cache under ./models/embeddings: link it to the run's shared cache, where the
    # in-process tests above already put the SKB documents (embedding them again cost ~20 CPU s)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "embeddings").symlink_to(shared_embedding_cache(), target_is_directory=True)
    args = ["stark", "eval", "--skb", str(skb_dir), "--split", "test", "--retriever", "four_step_focus",
            "--vector-store", str(tmp_path / "stark.db"), "--param", "rerank=false"]
    first = CliRunner().invoke(app, args)
    assert first.exit_code == 0, first.output
    again = CliRunner().invoke(app, args)  # same SKB content: the Milvus collection is reused, same scores
    assert again.exit_code == 0, again.output
    score = [line.split("): ")[1] for line in (first.output + again.output).splitlines() if "): " in line]
    assert len(score) == 2 and score[0] == score[1] and "hit_at_5=1.0000" in score[0]
