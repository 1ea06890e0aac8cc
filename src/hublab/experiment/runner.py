"""The experiment runner: a pipeline over a dataset → per-question predictions → thesis metrics → one
MLflow run. Per-question results are checkpointed as they finish, so a killed run resumes where it
stopped (same MLflow run) without recomputing finished questions.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.config import settings as load_settings
from hublab.datasets.model import QAPair, read_jsonl
from hublab.errors import InputError
from hublab.pipeline.config import PipelineConfig, flatten

OnQuestion = Callable[[int, int, dict[str, float]], bool]
SLICE_FIELDS = ("retrieval_operation", "use_case", "hops", "semi_typed")
KEY_METRICS = ("recall_triples", "precision_triples", "f1_triples", "hit@10_triples", "map@10_triples",
               "mrr@10_triples")


@dataclass
class RunSummary:
    metrics: dict[str, float]
    run_id: str | None
    config_hash: str
    n_questions: int
    runtime_s: float
    per_question: list[dict[str, Any]] = field(default_factory=list)
    stopped: bool = False
    output_dir: str = ""
    skipped_metrics: dict[str, str] = field(default_factory=dict)


def _key(i: int, p: QAPair) -> str:
    return f"{i}:{p.uid}"


class Checkpoint:
    """Append-only JSONL of finished questions plus a small state file (the MLflow run id)."""

    def __init__(self, directory: Path) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.path = directory / "predictions.jsonl"
        self.state_path = directory / "state.json"

    def load(self) -> dict[str, dict[str, Any]]:
        done: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            with self.path.open(encoding="utf-8") as fh:
                for line in fh:
                    try:
                        rec = json.loads(line)
                    except json.JSONDecodeError:
                        continue  # a line cut by a crash: that question is simply redone
                    done[rec["key"]] = rec
        return done

    def append(self, rec: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def state(self) -> dict[str, Any]:
        if self.state_path.exists():
            return json.loads(self.state_path.read_text())
        return {}

    def save_state(self, state: dict[str, Any]) -> None:
        tmp = self.state_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state))
        tmp.replace(self.state_path)

    def reset(self) -> None:
        for p in (self.path, self.state_path):
            p.unlink(missing_ok=True)


def _retrieval_metrics(retrieved: list[str], golden: list[str], k: int) -> dict[str, float]:
    from hublab.evaluation.retrieval import retrieval_metrics

    return retrieval_metrics(retrieved, golden, k=k, stark=True)


def _aggregate(rows: list[dict[str, Any]]) -> dict[str, float]:
    from hublab.evaluation.retrieval import aggregate

    return aggregate(rows)


def _metric_cols(rec: dict[str, Any]) -> dict[str, Any]:
    return dict(rec.get("metrics", {}))


def aggregate_records(records: list[dict[str, Any]]) -> dict[str, float]:
    """Macro means of retrieval + generation metrics and the operational means (runtime, tokens, carbon)."""
    rows = [_metric_cols(r) for r in records]
    agg = _aggregate(rows)
    for col in ("runtime", "llm_tokens", "llm_prompt_tokens", "llm_completion_tokens", "emissions",
                "total_energy_consumption", "cpu_energy_consumption", "gpu_energy_consumption",
                "ram_energy_consumption"):
        vals = [r.get(col) for r in records if isinstance(r.get(col), int | float) and math.isfinite(r.get(col))]
        if vals:
            agg[col] = sum(vals) / len(vals)
    agg["n_questions"] = float(len(records))
    agg["n_errors"] = float(sum(1 for r in records if r.get("error")))
    agg["n_empty_results"] = float(sum(1 for r in records if not r.get("retrieved_context")))
    return agg


def slice_metrics(records: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """{field: {value: {metric: mean}}} for the thesis's breakdowns (Tables 10.2-10.6)."""
    out: dict[str, dict[str, dict[str, float]]] = {}
    for f in SLICE_FIELDS:
        groups: dict[str, list[dict[str, Any]]] = {}
        for r in records:
            v = r.get("qa", {}).get(f)
            if v is None:
                continue
            groups.setdefault(str(v), []).append(_metric_cols(r))
        if groups:
            out[f] = {v: _aggregate(rows) for v, rows in sorted(groups.items())}
    return out


def _generation_metrics(cfg: PipelineConfig, records: list[dict[str, Any]], settings: Settings) -> dict[str, str]:
    """Fill generation metrics into records that lack them; returns {metric: why skipped}."""
    wanted = list(cfg.evaluation.get("generation_metrics") or [])
    if not wanted:
        return {}
    todo = [r for r in records if not r.get("generation_done")]
    if not todo:
        return {}
    from hublab.evaluation.generation import GenerationEvaluator

    judge = None
    judge_cfg = cfg.evaluation.get("judge_llm")
    if judge_cfg:
        from hublab.llm.factory import build_llm

        judge = build_llm(judge_cfg, cache_dir=settings.cache_dir())
    ragas_cfg = cfg.evaluation.get("ragas_llm") or {}
    ev = GenerationEvaluator(
        wanted, llm=judge, ragas_base_url=ragas_cfg.get("base_url"), ragas_model=ragas_cfg.get("model"),
        bertscore_model=cfg.evaluation.get("bertscore_model"),
        bertscore_layers=int(cfg.evaluation.get("bertscore_layers", 6)),
    )
    rows = [{"question": r["question"], "generated_answer": r["generated_answer"],
             "golden_answer": r["golden_answer"], "retrieved_context": r["retrieved_context"]} for r in todo]
    results = ev.evaluate(rows)
    for r, m in zip(todo, results, strict=True):
        r.setdefault("metrics", {}).update(m)
        r["generation_done"] = True
    return dict(getattr(ev, "skipped", {}) or {})


def run_experiment(
    cfg: PipelineConfig,
    graph: str,
    dataset: str,
    *,
    limit: int | None = None,
    experiment: str | None = None,
    parent_run_id: str | None = None,
    nested: bool = False,
    run_name: str | None = None,
    log_artifacts: bool = True,
    on_question: OnQuestion | None = None,
    settings: Settings | None = None,
    resume: bool = True,
    progress: bool = True,
    track_carbon: bool = True,
) -> RunSummary:
    st = settings or load_settings()
    pairs = read_jsonl(st.dataset_file(dataset))
    expected_graph = st.graph_for_dataset(dataset)
    if expected_graph != graph:
        raise InputError(f"dataset {dataset!r} refers to graph {expected_graph!r}, not {graph!r}: golden triple ids "
                         "would not match", field="--graph")
    if limit is not None:
        if limit <= 0:
            raise InputError("--limit must be positive", field="--limit")
        pairs = pairs[:limit]
    k = int(cfg.evaluation.get("k", 10))
    chash = cfg.config_hash(graph, dataset)
    ckpt = Checkpoint(st.root / "outputs" / "runs" / chash)
    if not resume:
        ckpt.reset()
    done = ckpt.load()
    state = ckpt.state()

    import mlflow

    from hublab.tracking import mlflow_log

    exp_name = experiment or str(st.section("tracking").get("experiment", "hublab"))
    exp_id = mlflow_log.setup(st.root, exp_name)
    run_id = state.get("run_id") if resume else None
    if run_id:
        try:
            mlflow.get_run(run_id)
        except Exception:
            run_id = None
    t_start = time.perf_counter()
    stopped = False
    records: list[dict[str, Any]] = []
    with mlflow.start_run(run_id=run_id, experiment_id=None if run_id else exp_id,
                          run_name=None if run_id else (run_name or f"{cfg.name}·{graph}·{dataset}"),
                          nested=nested, parent_run_id=parent_run_id) as run:
        if not run_id:
            ckpt.save_state({"run_id": run.info.run_id})
            params = mlflow_log.safe_params(flatten(cfg.to_dict()))
            params.update({"graph": graph, "dataset": dataset, "config_hash": chash})
            mlflow.log_params(params)
        mlflow.set_tags({"hublab.retriever": cfg.retriever_type, "hublab.pipeline": cfg.name,
                         "hublab.limit": str(limit), "hublab.config_hash": chash})
        pending = [(i, p) for i, p in enumerate(pairs) if _key(i, p) not in done]
        pipeline = None
        carbon = None
        if pending:
            from hublab.pipeline.pipeline import build_pipeline
            from hublab.tracking.carbon import CarbonTracker

            pipeline = build_pipeline(cfg, graph, st)
            carbon = CarbonTracker(str(st.section("tracking").get("country_iso_code", "DEU")),
                                   enabled=track_carbon, output_dir=str(ckpt.dir))
        finished = {k_: v for k_, v in done.items()}
        session_carbon = None
        try:
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            with Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                          TimeRemainingColumn(), disable=not progress) as bar:
                task = bar.add_task(f"{cfg.name} on {dataset}", total=len(pairs), completed=len(pairs) - len(pending))
                for i, p in pending:
                    rec = _run_question(pipeline, carbon, i, p, k)
                    ckpt.append(rec)
                    finished[rec["key"]] = rec
                    bar.advance(task)
                    if on_question is not None:
                        sel = [finished[_key(j, q)] for j, q in enumerate(pairs) if _key(j, q) in finished]
                        if on_question(len(sel), len(pairs), aggregate_records(sel)):
                            stopped = True
                            break
        finally:
            if carbon is not None:
                session_carbon = carbon.close()
        records = [finished[_key(i, p)] for i, p in enumerate(pairs) if _key(i, p) in finished]
        skipped = {} if stopped else _generation_metrics(cfg, records, st)
        if not stopped and any(r.get("generation_done") for r in records):
            _rewrite_checkpoint(ckpt, finished)
        metrics = aggregate_records(records)
        if session_carbon is not None and pending:
            # whole-session totals; per question = total / questions run in this session
            n_run = max(1, len(records) - len(done))
            metrics["session_emissions_total"] = session_carbon.emissions or 0.0
            metrics["session_energy_total"] = session_carbon.total_energy_consumption or 0.0
            metrics["session_emissions_per_question"] = (session_carbon.emissions or 0.0) / n_run
            metrics["session_energy_per_question"] = (session_carbon.total_energy_consumption or 0.0) / n_run
        mlflow.log_metrics(mlflow_log.finite_metrics(metrics))
        slices = slice_metrics(records)
        for f, groups in slices.items():
            for v, m in groups.items():
                mlflow.log_metrics({mlflow_log.metric_name(f"{name}/by_{f}/{v}"): m[name]
                                    for name in KEY_METRICS if name in m})
        if skipped:
            mlflow.set_tags({f"skipped.{mlflow_log.metric_name(k_)}": why[:500] for k_, why in skipped.items()})
        if carbon is not None:
            mlflow.set_tag("carbon.energy", "measured (RAPL)" if carbon.measured else "estimated (no RAPL)")
        if log_artifacts and not stopped:
            from hublab.tracking.artifacts import log_run_artifacts

            log_run_artifacts(cfg, records, metrics, slices, ckpt.dir, graph=graph, dataset=dataset, settings=st)
        summary = RunSummary(metrics, run.info.run_id, chash, len(records), time.perf_counter() - t_start,
                             records, stopped, str(ckpt.dir), skipped)
    return summary


def _rewrite_checkpoint(ckpt: Checkpoint, finished: dict[str, dict[str, Any]]) -> None:
    tmp = ckpt.path.with_suffix(".tmp")
    with tmp.open("w", encoding="utf-8") as fh:
        for rec in finished.values():
            fh.write(json.dumps(rec, ensure_ascii=False, default=str) + "\n")
    tmp.replace(ckpt.path)


def _run_question(pipeline, carbon, i: int, p: QAPair, k: int) -> dict[str, Any]:
    name = _key(i, p)
    for llm in pipeline.all_llms():
        llm.reset_usage()
    if carbon is not None:
        carbon.start(name)
    error = None
    try:
        out = pipeline.run(p.question, p.topic_entity_id, p.topic_entity_value)
    except Exception as exc:  # recorded per question; the run goes on
        out = None
        error = f"{type(exc).__name__}: {exc}"
    em = carbon.stop(name) if carbon is not None else None
    usage_p = usage_c = cached = 0
    for llm in pipeline.all_llms():
        u = llm.reset_usage()
        usage_p += u.prompt_tokens
        usage_c += u.completion_tokens
        cached += u.cached_calls
    retrieved = out.context_strings if out else []
    metrics = _retrieval_metrics(retrieved, list(p.golden_triples), k)
    rec: dict[str, Any] = {
        "key": name, "uid": p.uid, "question": p.question, "golden_answer": p.golden_answer,
        "golden_triples": list(p.golden_triples), "topic_entity_id": p.topic_entity_id,
        "generated_answer": out.answer if out else "", "retrieved_context": retrieved,
        "reason": (out.reason if out else None), "error": error, "notes": out.notes if out else [],
        "sources": out.sources if out else [],
        "runtime": out.runtime_s if out else None, "llm_prompt_tokens": usage_p, "llm_completion_tokens": usage_c,
        "llm_tokens": usage_p + usage_c, "llm_cached_calls": cached, "metrics": metrics,
        "qa": {f: getattr(p, f) for f in SLICE_FIELDS},
    }
    if em is not None:
        rec.update({k_: v for k_, v in em.__dict__.items()})
    return rec
