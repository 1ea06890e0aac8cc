"""Retrieval quality of a pipeline under the reduced-set protocol (issue #11).

    .venv/bin/python bench/bench_quality.py --pipeline pipelines/hublink_local.yaml --graphs gv1 --subset reduced
    .venv/bin/python bench/bench_quality.py --graphs gv1,gv2,gv3,gv4,gv3_orkg --json reports/protocol.json

Protocol: parameters and rules are chosen on the 44-question reduced GV1 set only (``--subset reduced``);
results are reported on all 170 questions and separately on the 126 outside the reduced set. The reduced
set is defined on GV1 (``reduced_gv1``); every graph variant's dataset holds the same questions under the
same ``uid`` (the thesis built the variants' datasets from the same question rows), so membership carries
over to GV2-GV4 and gv3_orkg by uid. The rows are *evaluation* slices only: the retriever never sees a uid.

In-process (no MLflow run, no CodeCarbon): one pipeline per graph, the question loop of the runner, the
thesis's metrics (``evaluation.retrieval``). ``--set key=value`` overrides a retriever parameter (YAML value)
for ablations. The thesis's HubLink numbers (docs/results.md, README) are printed next to ours.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from hublab.env import apply_offline_defaults  # noqa: E402

apply_offline_defaults()

from hublab.evaluation import names  # noqa: E402

KEYS = (names.HITS_AT_10, names.MAP_AT_10, names.RECALL_AT_10, names.MRR_AT_10, names.RECALL,
        names.TRIPLES_PER_QUESTION)
SHORT = {**names.LABELS, names.RECALL: "Recall(all)"}
#: Thesis HubLink (T), o3-mini, all 170 questions: GV1 from final_comparison_gv1.csv, MAP@10 and full-list
#: recall per variant from graph_variants.csv (../shared/reference/thesis_results); gv3_orkg is the thesis's GV3.
THESIS = {
    "gv1": {names.HITS_AT_10: 0.513, names.MAP_AT_10: 0.298, names.RECALL_AT_10: 0.512, names.MRR_AT_10: 0.500,
            names.RECALL: 0.755},
    "gv2": {names.MAP_AT_10: 0.333, names.RECALL: 0.759},
    "gv3": {names.MAP_AT_10: 0.408, names.RECALL: 0.812},
    "gv4": {names.MAP_AT_10: 0.425, names.RECALL: 0.804},
    "gv3_orkg": {names.MAP_AT_10: 0.408, names.RECALL: 0.812},
}


def _value(text: str):
    return yaml.safe_load(text)


def load_pairs(st, name: str):
    from hublab.datasets.catalog import load_dataset

    return load_dataset(st, name)


def run_graph(cfg, graph: str, dataset: str, uids: set[str] | None, k: int, progress: bool):
    from hublab.config import settings
    from hublab.evaluation.retrieval import retrieval_metrics
    from hublab.pipeline.pipeline import build_pipeline

    st = settings()
    pairs = load_pairs(st, dataset)
    if uids is not None:
        pairs = [p for p in pairs if p.uid in uids]
    pipe = build_pipeline(cfg, graph, settings=st)
    retr = pipe.retriever
    if hasattr(retr, "index"):
        retr.index(progress=False)
    rows = []
    t_all = time.perf_counter()
    for i, p in enumerate(pairs):
        t0 = time.perf_counter()
        out = pipe.run(p.question, p.topic_entity_id, p.topic_entity_value)
        dt = time.perf_counter() - t0
        retrieved = out.context_strings
        m = retrieval_metrics(retrieved, list(p.golden_triples), k)
        m["triples_per_question"] = float(len(retrieved))
        # the headline metrics per question (the slices are re-computable from them); the retrieved triples
        # themselves are what `hublab run` writes to its predictions artifact
        rows.append({"uid": p.uid, "metrics": {key: m[key] for key in KEYS}, "seconds": round(dt, 4)})
        if progress and (i + 1) % 10 == 0:
            print(f"  {graph}: {i + 1}/{len(pairs)} ({time.perf_counter() - t_all:.0f} s)", file=sys.stderr)
    return rows


def summarise(rows, uids: set[str] | None = None, exclude: bool = False) -> dict[str, float]:
    sel = [r for r in rows if uids is None or ((r["uid"] in uids) != exclude)]
    out: dict[str, float] = {"n": float(len(sel))}
    for key in KEYS:
        vals = [r["metrics"][key] for r in sel if key in r["metrics"]]
        out[key] = round(statistics.fmean(vals), 4) if vals else float("nan")
    out["s_per_question"] = round(statistics.fmean(r["seconds"] for r in sel), 3) if sel else float("nan")
    return out


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    head = "| graph | questions | n | " + " | ".join(SHORT[k] for k in KEYS) + " | s/q |"
    lines = [head, "|" + "---|" * (len(KEYS) + 4)]
    for graph, parts in results.items():
        for part, m in parts.items():
            cells = " | ".join(f"{m.get(k, float('nan')):.3f}" if k != "triples_per_question"
                               else f"{m.get(k, float('nan')):.1f}" for k in KEYS)
            lines.append(f"| {graph} | {part} | {int(m['n'])} | {cells} | {m['s_per_question']:.2f} |")
        if graph in THESIS:
            t = THESIS[graph]
            cells = " | ".join(f"{t[k]:.3f}" if k in t else "" for k in KEYS)
            lines.append(f"| {graph} | thesis HubLink (o3-mini), all | 170 | {cells} | |")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pipeline", default="pipelines/hublink_local.yaml")
    ap.add_argument("--graphs", default="gv1", help="comma-separated: gv1,gv2,gv3,gv4,gv3_orkg")
    ap.add_argument("--subset", choices=["all", "reduced", "rest"], default="all",
                    help="reduced: only the 44 reduced-set questions (the selection set); all: all 170, "
                         "reported as all / reduced / rest")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a retriever parameter (YAML value), e.g. --set max_output_triples=20")
    ap.add_argument("--json", default=None, help="write the results (and each question's headline metrics) here")
    ap.add_argument("--quiet", action="store_true")
    args = ap.parse_args()

    from hublab.config import settings
    from hublab.pipeline.config import load_pipeline

    st = settings()
    cfg = load_pipeline(args.pipeline)
    for kv in args.set:
        key, _, val = kv.partition("=")
        cfg.retriever_params[key.strip()] = _value(val)
    k = int(cfg.evaluation.get("k", 10))
    reduced = {p.uid for p in load_pairs(st, "reduced_gv1")}
    results: dict[str, dict[str, dict[str, float]]] = {}
    dump: dict[str, object] = {"pipeline": args.pipeline, "overrides": args.set, "subset": args.subset}
    for graph in [g.strip() for g in args.graphs.split(",") if g.strip()]:
        if args.subset == "reduced" and graph == "gv1":
            rows = run_graph(cfg, graph, "reduced_gv1", None, k, not args.quiet)
            results[graph] = {"reduced (44)": summarise(rows)}
        else:
            uids = reduced if args.subset == "reduced" else None
            rows = run_graph(cfg, graph, graph, uids, k, not args.quiet)
            if args.subset == "reduced":
                results[graph] = {"reduced (44)": summarise(rows)}
            else:
                parts = {"all (170)": summarise(rows), "reduced (44)": summarise(rows, reduced),
                         "rest (126)": summarise(rows, reduced, exclude=True)}
                if args.subset == "rest":
                    parts = {"rest (126)": parts["rest (126)"]}
                results[graph] = parts
        dump[graph] = {"metrics": results[graph], "rows": rows}
    print(table(results))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(dump, indent=1, default=str))


if __name__ == "__main__":
    main()
