"""Portability probe, run as a script under varied CPU-kernel settings (``test_portable_results.py``).

Embeds a fixed text set with the project's MiniLM embedder, indexes a 4-paper subgraph of the ORKG GV3 export
with LLM-free HubLink (the pipeline's factories, a Milvus Lite file in ``argv[1]``) and prints, as JSON, the
sha256 of the embeddings, the raw float32 forward pass (the control: not made portable) and, unless ``argv[2]`` is
``embed``, HubLink's ranked output for a few questions with both strategies on a 2-paper subgraph and the sha256 of
every file of its index folder."""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ.get("HUBLAB_SHARED", ROOT.parent / "shared"))

TEXTS = ["Which papers use the evaluation method Case Study?", "software architecture decision making",
         "In which venue has the paper been published?", "ECSA 2019", "microservices", "Technical debt"]


def main(tmp: Path, mode: str = "full") -> dict:
    from hublab.env import apply_offline_defaults

    apply_offline_defaults()
    import numpy as np
    import torch

    from hublab.embedding.factory import build_embedder
    from hublab.embedding.sentence_transformer import resolve_model_path
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.llm.factory import build_llm
    from hublab.retrievers.base import Resources
    from hublab.retrievers.methods.hublink.hubs import HubDetector, all_hub_roots, hub_paths
    from hublab.retrievers.registry import get_retriever_class
    from hublab.vectorstore.factory import build_vector_store

    emb = build_embedder({"model": "all-MiniLM-L6-v2", "device": "cpu", "cache": False}, tmp)
    vecs = emb.embed(TEXTS)
    from sentence_transformers import SentenceTransformer

    raw = SentenceTransformer(resolve_model_path(None), device="cpu").encode(TEXTS, convert_to_numpy=True)
    out = {"embeddings": hashlib.sha256(np.ascontiguousarray(vecs).tobytes()).hexdigest(),
           "raw_float32": hashlib.sha256(np.ascontiguousarray(raw).tobytes()).hexdigest(),
           "capability": torch.backends.cpu.get_cpu_capability(), "ranked": {}}
    if mode == "embed":
        return out

    full = RdfKnowledgeGraph.load(SHARED / "data/orkg/gv3_flat_distributed.json", name="gv3_orkg")
    det = HubDetector(full, ["Paper"])
    papers = all_hub_roots(full, det, ["R659055"])[:2]
    triples = {t.render(): t for p in papers for hp in hub_paths(full, det, p) for t in hp.triples}
    g = RdfKnowledgeGraph.from_triples(list(triples.values()), name="gv3_probe")
    res = Resources(graph=g, root_entity_ids=["R659055"], embedder=emb, llm=build_llm({"backend": "none"}),
                    vector_store=build_vector_store(None, tmp / "probe.db"), index_name="gv3_probe",
                    cache_dir=str(tmp))
    r = get_retriever_class("hublink")(res, max_output_triples=20)
    r.index(progress=False)
    # one question about a paper and one of free text, each with both strategies (every retrieval re-ranks with
    # MiniLM: most of the probe's time)
    questions = [f"In which venue has the paper with the title '{g.entity(papers[0]).text}' been published?", TEXTS[0]]
    ranked = out["ranked"]
    for q in questions:
        for topic in (None, "R659055"):
            res_q = r.retrieve(q, topic_entity_id=topic)
            ranked[f"{topic}|{q}"] = [[c.text, c.score] for c in res_q.contexts]
    r.resources.vector_store.close()  # settles the engine's files, as a process exit does
    # the index folder's bytes, as DVC hashes an index stage's output (issue #42: the same dvc.lock on any CPU)
    out["index_files"] = {str(f.relative_to(tmp)): hashlib.sha256(f.read_bytes()).hexdigest()
                          for f in sorted(tmp.rglob("*")) if f.is_file()}
    return out


if __name__ == "__main__":
    print("PROBE " + json.dumps(main(Path(sys.argv[1]), sys.argv[2] if len(sys.argv) > 2 else "full")))
