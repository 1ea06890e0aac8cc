"""CPU cost of portable embeddings: MiniLM's forward pass in float32 (not portable) vs float64 (HubLab's CPU
default, docs/portability.md), on the GV3 export's triple texts.

    .venv/bin/python bench/bench_embedding_precision.py [--n 2000] [--repeats 3]

Prints, per precision, the best CPU seconds (process time: robust to other load on the machine) and wall seconds
over ``--repeats`` runs, texts per CPU second, and the largest difference between the two precisions' vectors."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from hublab.env import apply_offline_defaults

    apply_offline_defaults()
    import numpy as np
    import torch
    from sentence_transformers import SentenceTransformer

    from hublab.embedding.sentence_transformer import CANONICAL_BATCH, resolve_model_path, unit_float32
    from hublab.graph.rdf import RdfKnowledgeGraph

    g = RdfKnowledgeGraph.load(ROOT.parent / "shared/data/orkg/gv3_flat_distributed.json", name="gv3_orkg")
    texts = sorted({t.render() for t in g.triples()})[: args.n]
    out = {}
    for name, dtype in (("float32", torch.float32), ("float64", torch.float64)):
        model = SentenceTransformer(resolve_model_path(None), device="cpu").to(dtype)
        best_cpu = best_wall = float("inf")
        for _ in range(args.repeats):
            c0, w0 = time.process_time(), time.perf_counter()
            vecs = model.encode(texts, batch_size=CANONICAL_BATCH, convert_to_numpy=True, show_progress_bar=False)
            best_cpu = min(best_cpu, time.process_time() - c0)
            best_wall = min(best_wall, time.perf_counter() - w0)
        out[name] = unit_float32(vecs)
        print(f"{name}: {len(texts)} texts, CPU {best_cpu:.1f} s ({len(texts) / best_cpu:.0f} texts/CPU s), "
              f"wall {best_wall:.1f} s, torch threads {torch.get_num_threads()}")
    diff = np.abs(out["float32"] - out["float64"]).max()
    print(f"max |float32 - float64| per component: {diff:.2e}")


if __name__ == "__main__":
    main()
