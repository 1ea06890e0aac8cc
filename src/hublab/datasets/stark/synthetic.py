"""A small MAG-shaped synthetic SKB + QA set in the stark-qa layout, for offline tests and demos.

The real STaRK data downloads from the Hugging Face hub, which is unreachable here. Queries follow STaRK's
MAG templates (author→paper with a field-of-study constraint, institution→author→paper, and a title
lookup), so answers are known exactly and every method can be scored.
"""

from __future__ import annotations

import csv
import json
import pickle
import random
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

TOPICS = {
    "graph neural networks": "message passing over graph structured data with learned node embeddings",
    "protein folding": "predicting three dimensional protein structure from amino acid sequences",
    "quantum error correction": "protecting qubits from decoherence with stabilizer codes",
    "software architecture": "design decisions, components and connectors of large software systems",
    "reinforcement learning": "agents that learn policies from rewards in sequential decision problems",
    "climate modeling": "simulating atmosphere and ocean dynamics to project global warming",
    "machine translation": "translating text between natural languages with sequence models",
    "medical imaging": "segmenting tumours in MRI and CT scans with convolutional networks",
}
FIRST = ["Alice", "Bruno", "Chen", "Dana", "Emre", "Fatima", "Goran", "Hana", "Ivo", "Julia", "Kenji", "Lena",
         "Mateo", "Nadia", "Omar", "Priya"]
LAST = ["Abbott", "Brandt", "Castillo", "Dubois", "Eriksen", "Fischer", "Gupta", "Horvath", "Ivanova", "Jensen",
        "Kowalski", "Laurent", "Moreau", "Nakamura", "Okafor", "Petrov"]
INSTITUTIONS = ["University of Northbridge", "Eastlake Institute of Technology", "Southfield Research Centre",
                "Westmoor University", "Central Academy of Sciences"]
ADJ = ["Scalable", "Robust", "Efficient", "Interpretable", "Adaptive", "Probabilistic"]
METHOD = ["transformers", "benchmarks", "sampling", "optimisation", "ensembles", "distillation"]

NODE_TYPES = {0: "author", 1: "institution", 2: "field_of_study", 3: "paper"}
EDGE_TYPES = {0: "author___writes___paper", 1: "author___affiliated_with___institution",
              2: "paper___has_topic___field_of_study", 3: "paper___cites___paper"}


def _save_tensor(arr: np.ndarray, path: Path) -> None:
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is a dependency via sentence-transformers
        np.save(path.with_suffix(".npy"), arr)
        return
    torch.save(torch.as_tensor(arr, dtype=torch.long), path)


@dataclass
class _Graph:
    """The synthetic MAG: node infos and types, typed edges, and what the queries are built from."""

    node_info: dict[int, dict] = field(default_factory=dict)
    node_types: list[int] = field(default_factory=list)
    edges: list[tuple[int, int, int]] = field(default_factory=list)
    papers: list[dict] = field(default_factory=list)
    authors: list[int] = field(default_factory=list)
    insts: list[int] = field(default_factory=list)
    affil: dict[int, int] = field(default_factory=dict)

    def add(self, type_id: int, info: dict) -> int:
        i = len(self.node_types)
        self.node_types.append(type_id)
        self.node_info[i] = {"type": NODE_TYPES[type_id], **info}
        return i


def write_synthetic_skb(root: str | Path, *, n_papers: int = 48, seed: int = 7) -> Path:
    """Write ``root/processed/*`` and ``root/stark_qa/stark_qa.csv`` + ``root/split/*.index``; return root."""
    rng = random.Random(seed)  # one stream, in this order: graph, queries, their shuffle
    root = Path(root)
    for sub in ("processed", "stark_qa", "split"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    g = _graph(rng, n_papers)
    _write_qa(root, _queries(rng, g))
    _write_skb(root / "processed", g, seed)
    return root


def _graph(rng: random.Random, n_papers: int) -> _Graph:
    g = _Graph()
    g.authors = [g.add(0, {"DisplayName": f"{first} {last}"}) for first, last in zip(FIRST, LAST, strict=True)]
    g.insts = [g.add(1, {"DisplayName": name}) for name in INSTITUTIONS]
    topics = {t: g.add(2, {"DisplayName": t, "description": d}) for t, d in TOPICS.items()}
    g.affil = {a: rng.choice(g.insts) for a in g.authors}
    for a, inst in g.affil.items():
        g.edges.append((a, inst, 1))
    topic_names = list(TOPICS)
    for n in range(n_papers):
        topic = topic_names[n % len(topic_names)]
        title = f"{rng.choice(ADJ)} {rng.choice(METHOD)} for {topic} {n}"
        by = rng.sample(g.authors, rng.randint(1, 3))
        pid = g.add(3, {"title": title, "abstract": f"We study {TOPICS[topic]}. {title}.", "year": 2015 + n % 8})
        for a in by:
            g.edges.append((a, pid, 0))
        g.edges.append((pid, topics[topic], 2))
        for cited in rng.sample([p["id"] for p in g.papers], min(len(g.papers), rng.randint(0, 2))):
            g.edges.append((pid, cited, 3))
        g.papers.append({"id": pid, "title": title, "topic": topic, "authors": by})
    return g


def _queries(rng: random.Random, g: _Graph) -> list[tuple[str, list[int]]]:
    """Queries with exact answers, on STaRK's MAG templates, shuffled."""
    queries: list[tuple[str, list[int]]] = []
    topic_names = list(TOPICS)
    name = {i: g.node_info[i].get("DisplayName", "") for i in g.authors + g.insts}
    for a in g.authors:
        for topic in topic_names:
            ans = [p["id"] for p in g.papers if a in p["authors"] and p["topic"] == topic]
            if ans and rng.random() < 0.5:
                queries.append((f"Find papers by {name[a]} on {topic}.", ans))
    for inst in g.insts:
        topic = rng.choice(topic_names)
        ans = [p["id"] for p in g.papers if p["topic"] == topic and any(g.affil[a] == inst for a in p["authors"])]
        if ans:
            queries.append((f"Which papers about {topic} were written by researchers at {name[inst]}?", ans))
    for p in g.papers[::4]:
        queries.append((f"Show me the paper titled '{p['title']}'.", [p["id"]]))
    rng.shuffle(queries)
    return queries


def _write_qa(root: Path, queries: list[tuple[str, list[int]]]) -> None:
    """``stark_qa/stark_qa.csv`` and the split index files (60/20/20, plus STaRK's ``test-0.1``)."""
    with (root / "stark_qa" / "stark_qa.csv").open("w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "query", "answer_ids"])
        for qid, (q, ans) in enumerate(queries):
            w.writerow([qid, q, json.dumps(ans)])
    ids = list(range(len(queries)))
    n_train, n_val = int(0.6 * len(ids)), int(0.2 * len(ids))
    splits = {"train": ids[:n_train], "val": ids[n_train : n_train + n_val], "test": ids[n_train + n_val :]}
    splits["test-0.1"] = splits["test"][: max(1, len(splits["test"]) // 10)]
    for split, qids in splits.items():
        (root / "split" / f"{split}.index").write_text("\n".join(map(str, qids)) + "\n", encoding="utf-8")


def _write_skb(pdir: Path, g: _Graph, seed: int) -> None:
    """The SKB files of the stark-qa layout: node infos and type maps (pickles), node types and edges (tensors)."""
    with (pdir / "node_info.pkl").open("wb") as fh:
        pickle.dump(g.node_info, fh)
    with (pdir / "node_type_dict.pkl").open("wb") as fh:
        pickle.dump(NODE_TYPES, fh)
    with (pdir / "edge_type_dict.pkl").open("wb") as fh:
        pickle.dump(EDGE_TYPES, fh)
    edges = g.edges
    _save_tensor(np.asarray(g.node_types, dtype=np.int64), pdir / "node_types.pt")
    _save_tensor(np.asarray([[s for s, _, _ in edges], [d for _, d, _ in edges]], dtype=np.int64),
                 pdir / "edge_index.pt")
    _save_tensor(np.asarray([t for _, _, t in edges], dtype=np.int64), pdir / "edge_types.pt")
    (pdir / "skb_meta.json").write_text(
        json.dumps({"name": "synthetic_mag", "candidate_types": ["paper"], "seed": seed}), encoding="utf-8"
    )
