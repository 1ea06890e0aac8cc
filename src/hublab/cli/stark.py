"""``hublab stark eval`` (run a retriever on a STaRK split) and ``hublab stark synth`` (a small synthetic SKB)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import typer

from hublab.atomic import write_text_atomic
from hublab.cli.app import app
from hublab.errors import InputError

stark_app = typer.Typer(help="STaRK semi-structured retrieval benchmark (docs/stark.md).", no_args_is_help=True)
app.add_typer(stark_app, name="stark")


def _parse_params(items: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in items:
        if "=" not in item:
            raise InputError(f"expected KEY=VALUE, got {item!r}", field="--param")
        key, raw = item.split("=", 1)
        try:
            out[key.strip()] = json.loads(raw)
        except json.JSONDecodeError:
            out[key.strip()] = raw
    return out


def _from_pipeline(path: Path) -> tuple[str, dict[str, Any], Any, dict[str, Any]]:
    """Retriever type, params, LLM and embedder config from a pipeline YAML (docs/pipeline-config.md)."""
    from hublab.cli.app import pipeline_arg
    from hublab.llm.factory import build_llm
    from hublab.pipeline.config import load_pipeline

    cfg = load_pipeline(pipeline_arg(path))
    llm = build_llm(cfg.llm) if (cfg.llm or {}).get("backend", "none") != "none" else None
    return cfg.retriever_type, dict(cfg.retriever_params or {}), llm, dict(cfg.embedder or {})


@stark_app.command("eval")
def eval_cmd(
    skb: Path = typer.Option(..., help="SKB directory (holds processed/node_info.pkl, ...)"),
    qa: Path = typer.Option(None, help="QA directory (stark_qa/stark_qa.csv, split/*.index); default: --skb"),
    split: str = typer.Option("test", help="train | val | test | test-0.1 | human_generated_eval"),
    retriever: str = typer.Option("vss", help="vss | bm25 | hybrid | four_step_focus | difar"),
    pipeline: Path = typer.Option(None, help="take retriever type, params and LLM from this pipeline YAML (or name)"),
    param: list[str] = typer.Option([], help="retriever parameter KEY=VALUE (JSON values), repeatable"),
    limit: int = typer.Option(None, help="evaluate only the first N queries of the split"),
    candidate_types: str = typer.Option(None, help="comma-separated candidate node types (default: per SKB)"),
    out: Path = typer.Option(None, help="write the report (metrics + per-query rankings) as JSON here"),
    vector_store: str = typer.Option(None, help="Milvus Lite file or Milvus URI to keep the dense index in "
                                     "(reused across runs); default: in memory"),
) -> None:
    """Score a retriever on a STaRK split: hit_at_1, hit_at_5, recall_at_20, mrr."""
    from hublab.experiment.stark_eval import build_stark_resources, evaluate, load_split
    from hublab.retrievers.registry import build_retriever

    llm = None
    params: dict[str, Any] = {}
    embedder_cfg: dict[str, Any] | None = None
    if pipeline is not None:
        retriever, params, llm, embedder_cfg = _from_pipeline(pipeline)
    params.update(_parse_params(param))
    types = [t.strip() for t in candidate_types.split(",")] if candidate_types else None
    queries = load_split(qa or skb, split, limit)
    store = None
    if vector_store:
        from hublab.vectorstore.factory import build_vector_store

        is_uri = "://" in vector_store
        store = build_vector_store({"uri": vector_store if is_uri else None}, Path(vector_store))
    from hublab.experiment.stark_eval import default_embedder

    resources = build_stark_resources(skb, llm=llm, embedder=default_embedder(embedder_cfg), vector_store=store,
                                      candidate_types=types)
    ret = build_retriever(retriever, resources, params)
    ret.index(progress=False)
    report = evaluate(ret, queries, split=split)
    m = report.metrics
    typer.echo(f"{retriever} on {resources.graph.name}/{split} ({report.n_queries} queries, {report.seconds:.1f}s): "
               + ", ".join(f"{k}={v:.4f}" for k, v in m.items()))
    if out is not None:
        write_text_atomic(out, json.dumps({"retriever": retriever, "params": params, "split": split,
                                           "n_queries": report.n_queries, "metrics": m, "per_query": report.per_query},
                                          indent=1))


@stark_app.command("synth")
def synth_cmd(
    out_dir: Path = typer.Argument(..., help="where to write the synthetic SKB + QA (stark-qa layout)"),
    papers: int = typer.Option(48, help="number of paper nodes"),
    seed: int = typer.Option(7),
) -> None:
    """Write a small MAG-shaped synthetic SKB with exact answers (offline tests and demos)."""
    from hublab.datasets.stark.synthetic import write_synthetic_skb

    root = write_synthetic_skb(out_dir, n_papers=papers, seed=seed)
    n_q = sum(1 for _ in (root / "stark_qa" / "stark_qa.csv").open(encoding="utf-8")) - 1
    typer.echo(f"synthetic SKB written to {root} ({papers} papers, {n_q} queries)")
