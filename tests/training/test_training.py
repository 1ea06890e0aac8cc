"""The learned embedder (docs/training.md): questions generated from the graph only, split by paper, a tiny
fine-tune that saves, registers and reloads through the embedder factory with an identity of its own."""

from __future__ import annotations

import builtins
import csv
import io
from pathlib import Path

import pytest

from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.retrievers.methods.hublink.hubs import HubDetector, hub_paths
from hublab.retrievers.methods.hublink.text import path_to_text, triple_text
from hublab.training.pairs import paper_key, split_by_paper
from hublab.training.questions import generate_pairs

METHODS = ["Case Study", "Controlled Experiment", "Benchmark", "Interview"]
OBJECTS = ["Architecture Design Method", "Microservices", "Technical Debt"]


def tiny_graph(n_papers: int = 12, name: str = "tiny") -> RdfKnowledgeGraph:
    """ORKG-shaped papers: title, year, venue, authors list, a contribution with an evaluation method, a research
    object and a boolean classification."""
    k = Knowledge
    paper_t, lit = ("Paper",), ("Literal",)
    triples: list[Triple] = []
    venue = k("R9000", "International Conference on Software Architecture", ("Venue",))
    for i in range(n_papers):
        p = k(f"R{100 + i}", f"Synthetic Study {i} of Architecture Decisions", paper_t)
        authors = k(f"R{300 + i}", "authors list", ("List",))
        contrib = k(f"R{500 + i}", f"Contribution {i}", ("Contribution",))
        triples += [
            Triple(p, "publication year", k(f"L{100 + i}", str(2017 + i % 4), lit)),
            Triple(p, "venue", venue),
            Triple(p, "authors", authors),
            Triple(authors, "has list element", k(f"L{300 + i}", f"Author {chr(65 + i)}", lit)),
            Triple(authors, "has list element", k(f"L{400 + i}", f"Author {chr(65 + i)}{chr(66 + i)}", lit)),
            Triple(p, "contribution", contrib),
            Triple(contrib, "Evaluation method", k(f"L{500 + i}", METHODS[i % len(METHODS)], lit)),
            Triple(contrib, "Research Object", k(f"L{600 + i}", OBJECTS[i % len(OBJECTS)], lit)),
            Triple(contrib, "evaluation research", k(f"L{700 + i}", "True" if i % 2 else "False", lit)),
        ]
    return RdfKnowledgeGraph.from_triples(triples, name=name)


@pytest.fixture(scope="module")
def graph() -> RdfKnowledgeGraph:
    return tiny_graph()


def test_generator_reads_no_kgqa_file_and_emits_hublink_texts(graph, monkeypatch):
    opened: list[str] = []
    real_open, real_io_open = builtins.open, io.open

    def spy(file, *a, **kw):
        opened.append(str(file))
        return real_open(file, *a, **kw)

    def io_spy(file, *a, **kw):
        opened.append(str(file))
        return real_io_open(file, *a, **kw)

    monkeypatch.setattr(builtins, "open", spy)
    monkeypatch.setattr(io, "open", io_spy)
    pairs = generate_pairs(graph, seed=3)
    monkeypatch.undo()
    assert not [f for f in opened if f.lower().endswith((".csv", ".jsonl"))], opened
    assert len(pairs) > 50
    kinds = {p.kind.split(":")[0] for p in pairs}
    assert {"year", "venue", "author", "property"} <= kinds
    assert {p.kind.split(":")[1] for p in pairs} >= {"by_title", "by_value"}
    # positives are exactly what HubLink indexes (its own text functions, not a copy of them)
    det = HubDetector(graph, ["Paper"])
    indexed: set[str] = set()
    for e in graph.entities_by_type("Paper"):
        for hp in hub_paths(graph, det, e.uid):
            indexed.add(path_to_text(hp.triples))
            indexed.update(triple_text(t) for t in hp.triples)
    assert {p.positive for p in pairs} <= indexed
    assert any(p.question == "Which papers were published at International Conference on Software Architecture?"
               for p in pairs)


def test_generator_is_deterministic_and_seeded(graph):
    a, b = generate_pairs(graph, seed=7), generate_pairs(tiny_graph(), seed=7)
    assert a == b
    assert generate_pairs(graph, seed=8) != a


def test_split_holds_out_whole_papers_across_graphs(graph):
    pairs = generate_pairs(graph, seed=0) + generate_pairs(tiny_graph(name="tiny_copy"), seed=0)
    train, val = split_by_paper(pairs, val_fraction=0.25, seed=0)
    assert train and val and len(train) + len(val) == len(pairs)
    assert not {p.paper for p in train} & {p.paper for p in val}
    assert {p.graph for p in val} == {"tiny", "tiny_copy"}  # the same paper in both variants is held out in both
    assert split_by_paper(pairs, val_fraction=0.25, seed=0) == (train, val)


def test_no_generated_question_is_a_benchmark_question(gv3_orkg_graph, shared):
    pairs = generate_pairs(gv3_orkg_graph, seed=0)
    bench: set[str] = set()
    for f in sorted((shared / "data" / "kgqa").glob("*.csv")):
        with f.open(newline="", encoding="utf-8") as fh:
            bench |= {paper_key(r["question"]) for r in csv.DictReader(fh) if r.get("question")}
    generated = {paper_key(p.question) for p in pairs}
    assert len(bench) > 100 and len(generated) > 1000
    assert not generated & bench
    long_bench = [b for b in bench if len(b) > 40]
    assert not [g for g in generated if any(b in g for b in long_bench)]


@pytest.mark.slow  # subprocesses
def test_tiny_finetune_saves_registers_and_reloads(graph, tmp_path, monkeypatch):
    import yaml

    from hublab.config import _load_params
    from hublab.embedding.factory import build_embedder
    from hublab.pipeline.config import load_pipeline
    from hublab.retrievers.methods.hublink.indexing import IndexSettings
    from hublab.training.finetune import TrainConfig, train_embedder

    root = tmp_path / "proj"
    root.mkdir()
    (root / "params.yaml").write_text(yaml.safe_dump({"paths": {"cache": ".cache", "indices": "models"}}))
    monkeypatch.setenv("HUBLAB_ROOT", str(root))
    _load_params.cache_clear()
    cfg = TrainConfig(name="hublab-minilm-test", graphs=["tiny"], max_train_pairs=16, max_val_pairs=8, batch_size=8,
                      max_steps=1, device="cpu", experiment="hublab-train-test")
    res = train_embedder({"tiny": graph}, cfg, root)
    model_dir = root / "models" / "embedders" / "hublab-minilm-test"
    assert res.model_dir == str(model_dir) and (model_dir / "modules.json").exists()
    assert res.steps == 1 and res.n_train_pairs == 16 and res.device == "cpu"
    assert res.registered_model == "hublab-minilm-test" and res.version == "1" and res.run_id
    # the reported MRR@10 are those of the base and of the saved model on the run's validation pairs (recomputed)
    from sentence_transformers import SentenceTransformer

    from hublab.embedding.sentence_transformer import resolve_model_path
    from hublab.training.finetune import mrr_at_k, prepare_pairs

    _, val, _ = prepare_pairs({"tiny": graph}, cfg)
    assert len(val) == res.n_val_pairs > 0
    for path, reported in ((resolve_model_path(cfg.base_model), res.mrr10_before), (model_dir, res.mrr10_after)):
        model = SentenceTransformer(str(path), device="cpu")
        model.max_seq_length = min(model.max_seq_length, cfg.max_seq_length)  # as measured during training
        assert reported == pytest.approx(mrr_at_k(model, val, val), abs=1e-6), path

    base = build_embedder({"device": "cpu", "cache": False})
    pipe = root / "ft.yaml"
    pipe.write_text(yaml.safe_dump({
        "name": "ft", "retriever": {"type": "hublink", "params": {}}, "llm": {"backend": "none"},
        "embedder": {"model": "models/embedders/hublab-minilm-test", "device": "cpu"}}))
    from_yaml = build_embedder(load_pipeline(pipe).embedder, cache_dir=root / ".cache")
    from_registry = build_embedder({"model": "models:/hublab-minilm-test/1", "device": "cpu", "cache": False})
    latest = build_embedder({"model": "models:/hublab-minilm-test/latest", "device": "cpu", "cache": False})
    assert from_yaml.name == from_registry.name == latest.name == res.identity != base.name
    assert res.identity.startswith("st-")
    vec = from_yaml.embed(["Which papers use the evaluation method Case Study?"])
    assert vec.shape == (1, 384)
    assert (from_registry.embed(["Which papers use the evaluation method Case Study?"]) == vec).all()
    # its own vector cache, keyed on the fine-tuned model's identity (not the base model's)
    caches = [p.name for p in (root / ".cache" / "embeddings").glob("*.sqlite")]
    assert any(n.startswith(f"{res.identity}") and n.endswith("-384.sqlite") for n in caches), caches
    assert from_yaml.vectors_id.startswith(res.identity)
    # the index collection and the run identity change with the model
    settings = IndexSettings(["Paper"], [], -1, False)
    assert settings.fingerprint(from_yaml) != settings.fingerprint(base)
    ft_cfg = load_pipeline(pipe)
    base_cfg = load_pipeline(pipe)
    base_cfg.embedder = {"model": "all-MiniLM-L6-v2", "device": "cpu"}
    assert ft_cfg.config_hash("g", "d") != base_cfg.config_hash("g", "d")
    # a fresh process (no MLflow state left by the training) resolves the registry URI in the project's store
    import os
    import subprocess
    import sys

    code = ("from hublab.embedding.factory import embedder_identity as e; "
            "print(e({'model': 'models:/hublab-minilm-test/1'}))")
    env = {k: v for k, v in os.environ.items() if k != "MLFLOW_TRACKING_URI"}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True,
                         timeout=300)
    assert out.stdout.strip().splitlines()[-1] == res.identity, out.stderr[-2000:]
    with pytest.raises(Exception, match="cannot resolve"):
        build_embedder({"model": "models:/hublab-minilm-test/9", "device": "cpu", "cache": False})
    assert Path(res.model_dir).is_dir()
