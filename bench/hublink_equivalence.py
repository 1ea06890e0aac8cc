"""Equivalence check for HubLink retrieval: same questions in, same output out (before/after a refactor).

    # on the reference revision: write what HubLink returns for every question
    PYTHONPATH=src .venv/bin/python bench/hublink_equivalence.py dump --out ref.json [--graph gv3_orkg] [--limit N]
    # on the changed revision: compare (exit 1 on any difference)
    PYTHONPATH=src .venv/bin/python bench/hublink_equivalence.py compare --ref ref.json [--graph gv3_orkg]

Per question and strategy (direct; traversal when the question has a topic entity) it records the retrieved
triples in order with their scores, the contributing hubs in order, the answer text (the LLM-free answer lists
each hub's best path texts, so path order inside hubs is covered too) and the reason. ``compare`` requires the
same triples in the same order, the same hubs and answer, and scores equal to ``--tol`` (default 1e-6).
Uses the project's built index (``hublab index`` / ``dvc repro``) of the pipeline (default hublink_local.yaml).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("PYTHONPATH"):  # PYTHONPATH=<other checkout>/src runs that revision's code
    sys.path.insert(0, str(ROOT / "src"))

from hublab.env import apply_offline_defaults  # noqa: E402

apply_offline_defaults()


def build(pipeline: str, graph: str):
    from hublab.config import settings
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.resources import build_resources
    from hublab.retrievers.registry import build_retriever

    st = settings(ROOT)
    cfg = load_pipeline(pipeline)
    cfg.retriever_params["auto_index"] = False
    res = build_resources(cfg, graph, settings=st)
    return st, build_retriever(cfg.retriever_type, res, cfg.retriever_params)


def run_all(pipeline: str, graph: str, dataset: str | None, limit: int | None) -> dict:
    from hublab.datasets.catalog import load_dataset

    st, retr = build(pipeline, graph)
    if not retr.hub_index.is_built():
        raise SystemExit(f"no built HubLink index for {graph}: run `hublab index --graph {graph}` first")
    pairs = load_dataset(st, dataset or graph)[:limit]
    out: dict[str, dict] = {}
    t0 = time.perf_counter()
    for strategy in ("direct", "traversal"):
        retr.use_topic = strategy == "traversal"
        for i, p in enumerate(pairs):
            if strategy == "traversal" and not p.topic_entity_id:
                continue
            r = retr.retrieve(p.question, p.topic_entity_id, p.topic_entity_value)
            out[f"{strategy}:{i}"] = {
                "question": p.question,
                "triples": [c.text for c in r.contexts],
                "scores": [c.score for c in r.contexts],
                "hubs": [s["id"] for s in r.sources],
                "answer": r.answer,
                "reason": r.reason,
            }
    print(f"{len(out)} retrievals ({len(pairs)} questions) in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return out


def max_score_diff(ref: dict, new: dict) -> float:
    diffs = [abs(x - y) for k in set(ref) & set(new) if len(ref[k]["scores"]) == len(new[k]["scores"])
             for x, y in zip(ref[k]["scores"], new[k]["scores"], strict=True) if x is not None and y is not None]
    return max(diffs, default=0.0)


def compare(ref: dict, new: dict, tol: float) -> list[str]:
    problems: list[str] = []
    if set(ref) != set(new):
        problems.append(f"different retrieval keys: only in ref {sorted(set(ref) - set(new))[:5]}, "
                        f"only in new {sorted(set(new) - set(ref))[:5]}")
    for key in sorted(set(ref) & set(new)):
        a, b = ref[key], new[key]
        for f in ("question", "triples", "hubs", "answer", "reason"):
            if a[f] != b[f]:
                problems.append(f"{key}: {f} differs")
        if len(a["scores"]) == len(b["scores"]):
            for j, (x, y) in enumerate(zip(a["scores"], b["scores"], strict=True)):
                if (x is None) != (y is None) or (x is not None and abs(x - y) > tol):
                    problems.append(f"{key}: score {j} {x} != {y}")
                    break
    return problems


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["dump", "compare"])
    ap.add_argument("--out", help="dump: where to write the results (JSON)")
    ap.add_argument("--ref", help="compare: the reference dump")
    ap.add_argument("--graph", default="gv3_orkg")
    ap.add_argument("--dataset", default=None, help="dataset name (default: the graph's)")
    ap.add_argument("--pipeline", default=str(ROOT / "pipelines" / "hublink_local.yaml"))
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--tol", type=float, default=1e-6)
    args = ap.parse_args()
    new = run_all(args.pipeline, args.graph, args.dataset, args.limit)
    if args.mode == "dump":
        Path(args.out).write_text(json.dumps(new, indent=0))
        print(f"wrote {len(new)} retrievals to {args.out}")
        return
    ref = json.loads(Path(args.ref).read_text())
    problems = compare(ref, new, args.tol)
    n_triples = sum(len(v["triples"]) for v in new.values())
    if problems:
        print(f"DIFFERENT: {len(problems)} problems over {len(new)} retrievals")
        for p in problems[:30]:
            print(" ", p)
        raise SystemExit(1)
    print(f"IDENTICAL: {len(new)} retrievals ({args.graph}), {n_triples} triples, same order, same hubs and answers,"
          f" scores within {args.tol:g} (largest difference {max_score_diff(ref, new):g})")


if __name__ == "__main__":
    main()
