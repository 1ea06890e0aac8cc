"""How HubLink's cost grows with the graph: ORKG-shaped graphs at 1×, 10× and 100× the papers of the real GV3
export (153 → 1,530 → 15,300 papers; hublab.graph.synthetic), LLM-free HubLink on each.

    .venv/bin/python bench/bench_scale.py [--factors 1 10 100] [--embedder minilm|hash] [--questions 40]

Per size: papers, triples, hub paths, vectors, index build time and vectors/s, peak RSS of a fresh process,
index size on disk, retrieval latency median/p95 (KGQA questions about the original papers, which every
size contains), and the share of those questions whose golden triple is in the top 10. ``--embedder hash``
replaces MiniLM by a deterministic hashing embedder (no model cost) to measure what is *not* embedding:
graph walks, Milvus inserts, the exact mirror and search. Each size runs in its own process. Prints a table
and writes docs/scale.json and docs/scale.png.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def one_size(factor: int, embedder: str, n_questions: int, work: Path, shared: Path) -> dict:
    import resource

    import numpy as np

    from hublab.env import apply_offline_defaults

    apply_offline_defaults()
    from hublab.datasets.kgqa_csv import load_kgqa_csv
    from hublab.embedding.base import Embedder
    from hublab.embedding.factory import build_embedder
    from hublab.evaluation import names
    from hublab.evaluation.retrieval import retrieval_metrics
    from hublab.graph.rdf import RdfKnowledgeGraph
    from hublab.graph.synthetic import replicate
    from hublab.retrievers.base import Resources
    from hublab.retrievers.registry import build_retriever
    from hublab.vectorstore.factory import build_vector_store

    class HashEmbedder(Embedder):
        """Token-hash bag of words, L2-normalised: same texts → same vectors, no model cost."""

        name, dim = "hash384", 384

        def embed(self, texts):
            out = np.zeros((len(texts), self.dim), dtype=np.float32)
            for i, t in enumerate(texts):
                for w in t.lower().split():
                    out[i, hash(w) % self.dim] += 1.0
            norms = np.linalg.norm(out, axis=1, keepdims=True)
            return out / np.maximum(norms, 1e-12)

    base = RdfKnowledgeGraph.load(shared / "data/orkg/gv3_flat_distributed.json", name="gv3_orkg")
    t0 = time.perf_counter()
    graph = replicate(base, factor)
    gen_s = time.perf_counter() - t0
    d = work / f"x{factor}_{embedder}"
    import shutil

    shutil.rmtree(d, ignore_errors=True)  # a cold build every time
    emb = HashEmbedder() if embedder == "hash" else build_embedder({"model": "all-MiniLM-L6-v2", "device": "auto"},
                                                                   None)
    res = Resources(graph=graph, embedder=emb, vector_store=build_vector_store({}, d / "index.db"),
                    index_name=f"scale_x{factor}", cache_dir=str(d), index_dir=str(d), root_entity_ids=["R659055"])
    r = build_retriever("hublink", res, {"auto_index": False, "use_topic_if_given": False})
    t0 = time.perf_counter()
    stats = r.index(progress=False)
    build_s = time.perf_counter() - t0
    size_mb = sum(f.stat().st_size for f in d.rglob("*") if f.is_file()) / 2**20
    pairs = load_kgqa_csv(shared / "data/kgqa/flat_distributed.csv")[:n_questions]
    r.retrieve(pairs[0].question)  # warm-up: mirror load, path records
    lat, hits = [], []
    for p in pairs:
        t = time.perf_counter()
        out = r.retrieve(p.question)
        lat.append(time.perf_counter() - t)
        hits.append(retrieval_metrics(out.context_strings, list(p.golden_triples), 10)[names.HITS_AT_10])
    lat.sort()
    vectors = int(stats.get("vectors_written") or 0)
    return {
        "factor": factor, "embedder": embedder, "papers": len(graph.entities_by_type("Paper")),
        "triples": len(graph), "hubs": stats.get("hubs"), "paths": stats.get("paths"), "vectors": vectors,
        "graph_generation_s": round(gen_s, 1), "index_build_s": round(build_s, 1),
        "vectors_per_s": round(vectors / build_s, 1) if build_s and vectors else None,
        "index_size_mb": round(size_mb, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "latency_median_s": round(statistics.median(lat), 4),
        "latency_p95_s": round(lat[int(0.95 * (len(lat) - 1))], 4),
        names.HITS_AT_10: round(statistics.mean(hits), 4), "questions": len(pairs),
    }


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for emb in sorted({r["embedder"] for r in rows}):
        rs = [r for r in rows if r["embedder"] == emb]
        x = [r["papers"] for r in rs]
        axes[0].plot(x, [r["index_build_s"] for r in rs], "o-", label=emb)
        axes[1].plot(x, [r["peak_rss_mb"] for r in rs], "o-", label=emb)
        axes[2].plot(x, [r["latency_median_s"] * 1000 for r in rs], "o-", label=f"{emb} median")
        axes[2].plot(x, [r["latency_p95_s"] * 1000 for r in rs], "x--", label=f"{emb} p95")
    for ax, title in zip(axes, ("index build (s)", "peak RSS (MB)", "retrieval latency (ms)"), strict=True):
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("papers")
        ax.set_title(title)
        ax.legend(fontsize=7)
    fig.suptitle("LLM-free HubLink on ORKG-shaped graphs (GV3 × 1, 10, 100), 2 CPU cores")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def main() -> None:
    from hublab.evaluation.names import HITS_AT_10

    ap = argparse.ArgumentParser()
    ap.add_argument("--factors", type=int, nargs="+", default=[1, 10, 100])
    ap.add_argument("--embedder", choices=["minilm", "hash"], nargs="+", default=["hash", "minilm"])
    ap.add_argument("--questions", type=int, default=40)
    ap.add_argument("--max-minilm-factor", type=int, default=10, help="skip MiniLM above this factor (CPU time)")
    ap.add_argument("--shared", default=str(ROOT.parent / "shared"))
    ap.add_argument("--one", nargs=2, metavar=("FACTOR", "EMBEDDER"), help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "docs"))
    args = ap.parse_args()
    work = ROOT / ".cache" / "bench_scale"
    if args.one:
        row = one_size(int(args.one[0]), args.one[1], args.questions, work, Path(args.shared))
        print(json.dumps(row))
        return
    rows = []
    for emb in args.embedder:
        for f in args.factors:
            if emb == "minilm" and f > args.max_minilm_factor:
                continue
            cmd = [sys.executable, __file__, "--one", str(f), emb, "--questions", str(args.questions),
                   "--shared", args.shared]
            res = subprocess.run(cmd, capture_output=True, text=True, env={**os.environ, "PYTHONHASHSEED": "0"})
            if res.returncode != 0:
                print(f"x{f} {emb} failed:\n{res.stderr[-2000:]}", file=sys.stderr)
                continue
            rows.append(json.loads(res.stdout.strip().splitlines()[-1]))
            print(json.dumps(rows[-1]), flush=True)
    cols = ["embedder", "factor", "papers", "triples", "paths", "vectors", "index_build_s", "vectors_per_s",
            "index_size_mb", "peak_rss_mb", "latency_median_s", "latency_p95_s", HITS_AT_10]
    print("| " + " | ".join(cols) + " |\n|" + "---|" * len(cols))
    for r in rows:
        print("| " + " | ".join(str(r.get(c)) for c in cols) + " |")
    out = Path(args.out)
    (out / "scale.json").write_text(json.dumps(rows, indent=1))
    if rows:
        plot(rows, out / "scale.png")


if __name__ == "__main__":
    main()
