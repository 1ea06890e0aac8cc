"""Score your own retrieval function with the thesis's metrics in MLflow (issue #21).

The retrieval function below is plain Python, not a HubLab retriever: BM25 (rank-bm25) over the graph's
triple texts. HubLab gives the questions as MLflow evaluation rows and the metrics as MLflow scorers; MLflow
runs the function on every question, stores one run with a trace per question and the scores as assessments
on those traces, and averages them (``hit_at_10_triples/mean`` …, the numbers ``hublab eval-file`` gives).

    .venv/bin/python examples/evaluate_with_mlflow.py                       # reduced GV1 (after `dvc repro datasets`)
    .venv/bin/python examples/evaluate_with_mlflow.py --dataset ../shared/data/kgqa/flat_distributed.csv \\
        --graph ../shared/data/orkg/gv3_flat_distributed.json --limit 20   # any KGQA file and graph, no DVC

Open the run: ``mlflow ui --backend-store-uri <the printed tracking URI>`` → the run's Traces tab.
"""

from __future__ import annotations

import argparse
import re
import tempfile
from collections.abc import Callable
from pathlib import Path

import mlflow
from rank_bm25 import BM25Okapi

from hublab.env import set_verbosity
from hublab.mlflow_eval import retrieval_scorers
from hublab.mlflow_eval.data import eval_rows, graph_for, load_questions, triple_texts


def bm25_search(documents: list[str], n_results: int = 20) -> Callable[[str], list[str]]:
    """Your retrieval function: question in, ranked triple strings out (any function of this shape works)."""
    def tokens(text: str) -> list[str]:
        return re.findall(r"\w+", text.lower())

    bm25 = BM25Okapi([tokens(d) or ["_"] for d in documents])

    def retrieve(question: str) -> list[str]:
        scores = bm25.get_scores(tokens(question))
        ranked = sorted(range(len(documents)), key=lambda i: (-round(float(scores[i]), 9), i))  # stable ties
        return [documents[i] for i in ranked[:n_results]]

    return retrieve


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="reduced_gv1", help="dataset name or KGQA .csv/.jsonl path")
    ap.add_argument("--graph", default=None, help="graph name or .ttl/.json path (default: the dataset's graph)")
    ap.add_argument("--limit", type=int, default=None, help="first N questions only")
    ap.add_argument("--store-dir", type=Path, default=None,
                    help="folder of the MLflow store: mlflow.db and the traces (default: a new temp folder)")
    ap.add_argument("--experiment", default="hublab-mlflow-evaluation")
    ap.add_argument("-v", "--verbose", action="store_true", help="MLflow's INFO lines too (default: quiet)")
    args = ap.parse_args(argv)
    set_verbosity(args.verbose)  # as the hublab command line: libraries' INFO lines only with -v
    store = (args.store_dir or Path(tempfile.mkdtemp(prefix="hublab-mlflow-"))).resolve()
    store.mkdir(parents=True, exist_ok=True)
    uri = f"sqlite:///{store / 'mlflow.db'}"
    retrieve = bm25_search(triple_texts(args.graph or graph_for(args.dataset)))
    mlflow.set_tracking_uri(uri)
    if mlflow.get_experiment_by_name(args.experiment) is None:  # traces beside the store, not in ./mlruns
        mlflow.create_experiment(args.experiment, artifact_location=(store / "artifacts").as_uri())

    # --- the part a user writes around HubLab's scorers ---
    mlflow.set_experiment(args.experiment)
    data = eval_rows(load_questions(args.dataset), limit=args.limit)
    result = mlflow.genai.evaluate(data=data, predict_fn=retrieve, scorers=retrieval_scorers())
    # ---

    for name, value in sorted(result.metrics.items()):
        print(f"{name:32s} {value:.4f}")
    print(f"MLflow run {result.run_id}: mlflow ui --backend-store-uri {uri}")
    return result.metrics


if __name__ == "__main__":
    main()
