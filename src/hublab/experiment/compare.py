"""One table of many retrieval methods on one graph: our runs (each its own MLflow run, resumable) side by
side with the thesis's reported numbers, plus the thesis's sustainability metrics."""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.evaluation import names
from hublab.pipeline.config import PipelineConfig, load_pipeline
from hublab.tracking.artifacts import THESIS_NAMES, write_csv
from hublab.tracking.carbon import sustainability

# @10 rank metrics first; full-list metrics only next to the output size they were measured at.
COLUMNS = [(n, names.LABELS[n]) for n in names.KEY_METRICS]
VARIANT = {"gv1": "GV1", "gv2": "GV2", "gv3": "GV3", "gv4": "GV4", "gv3_orkg": "GV3"}


def default_pipelines(root: Path) -> list[Path]:
    """Every LLM-free pipeline: *_local.yaml plus the lexical/dense baselines that need no LLM."""
    pipes = sorted((root / "pipelines").glob("*_local.yaml"))
    pipes += [root / "pipelines" / n for n in ("bm25.yaml", "vss.yaml", "hybrid.yaml")
              if (root / "pipelines" / n).exists()]
    return pipes


def thesis_rows(settings: Settings, graph: str) -> dict[str, dict[str, float]]:
    """Thesis numbers per method for this graph variant (graph_variants.csv: Recall, Precision, F1, MAP@10)."""
    path = settings.path("thesis_results") / "graph_variants.csv"
    variant = VARIANT.get(graph)
    out: dict[str, dict[str, float]] = {}
    if not variant or not path.exists():
        return out
    with path.open() as fh:
        for row in csv.DictReader(fh):
            name, _, var = row["Config"].rpartition(" (")
            if var.rstrip(")") == variant:
                out[name] = {names.RECALL: float(row["Recall"]), names.PRECISION: float(row["Precision"]),
                             names.F1: float(row["F1"]), names.MAP_AT_10: float(row["MAP@10"])}
    return out


@dataclass
class CompareResult:
    rows: list[dict[str, Any]]
    skipped: list[tuple[str, str]]


def compare_methods(pipelines: list[Path], graph: str, dataset: str, *, settings: Settings, limit: int | None,
                    experiment: str, include_llm: bool = False, track_carbon: bool = True,
                    max_output_triples: int | None = None) -> CompareResult:
    """Run each pipeline (resumable) and tabulate it. ``max_output_triples`` evaluates every method at the same
    output bound (each retriever honours it), so full-list metrics become comparable."""
    from hublab.experiment.runner import run_experiment

    thesis = thesis_rows(settings, graph)
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for path in pipelines:
        cfg: PipelineConfig = load_pipeline(path)
        if max_output_triples is not None:
            cfg.retriever_params["max_output_triples"] = int(max_output_triples)
        if cfg.llm.get("backend", "none") == "openai" and not include_llm:
            skipped.append((path.name, "needs an external OpenAI-compatible LLM (list it explicitly to run it)"))
            continue
        s = run_experiment(cfg, graph, dataset, limit=limit, experiment=experiment, settings=settings,
                           run_name=f"{cfg.name}·{graph}", track_carbon=track_carbon)
        row: dict[str, Any] = {"method": cfg.retriever_type, "pipeline": path.name, "bound": max_output_triples,
                               "llm": cfg.llm.get("backend", "none"), "n_questions": s.n_questions,
                               "scope": s.scope, "mlflow_run": s.run_id}
        for key, label in COLUMNS:
            row[label] = s.metrics.get(key)
        row["s/question"] = s.metrics.get("runtime")
        row["LLM tokens/question"] = s.metrics.get("llm_tokens")
        row["kgCO2e/question"] = s.metrics.get("session_emissions_per_question", s.metrics.get("emissions"))
        ref = thesis.get(THESIS_NAMES.get(cfg.retriever_type, ""), {})
        for key, label in COLUMNS:
            if key in ref:
                row[f"thesis {label}"] = ref[key]
        row["thesis setting"] = "OpenAI LLM + embeddings (Table 10.5)" if ref else ""
        rows.append(row)
    systems = {r["pipeline"]: (r["Recall"] or 0.0, r["kgCO2e/question"] or 0.0) for r in rows
               if r.get("kgCO2e/question")}
    for name, m in sustainability(systems).items():
        row = next(r for r in rows if r["pipeline"] == name)
        row.update({"CE_rel": m["CE_rel"], "ΔCE": m["delta_CE"], "n(CE)": m["n_CE"], "n(CE_rel)": m["n_CE_rel"]})
    return CompareResult(rows, skipped)


def markdown(res: CompareResult, graph: str, dataset: str) -> str:
    cols = ["method", "pipeline", "llm", *[c[1] for c in COLUMNS], "s/question", "LLM tokens/question",
            "kgCO2e/question", *[f"thesis {c[1]}" for c in COLUMNS if c[1] in ("Recall", "Precision", "F1", "MAP@10")]]

    def fmt(v: Any) -> str:
        if v is None or v == "":
            return "–"
        if isinstance(v, float):
            return f"{v:.2e}" if 0 < abs(v) < 1e-3 else f"{v:.3f}"
        return str(v)

    partial = sorted({r.get("scope", "full") for r in res.rows} - {"full"})
    head = []
    if partial:
        head = [f"**PARTIAL RUN — scope: {', '.join(partial)}.** These numbers come from a subset of the benchmark "
                "and are not comparable with full-benchmark or thesis numbers.", ""]
    lines = [*head, f"Methods on `{graph}` / `{dataset}` (HubLab runs are LLM-free or embedded; thesis numbers used "
             "OpenAI "
             "models and are shown where the thesis reports the method on this graph variant).", "",
             "| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    bounds = sorted({r.get("bound") for r in res.rows if r.get("bound")})
    if bounds:
        lines.insert(len(head) + 1, f"All methods evaluated at the same output bound: at most {bounds[0]} triples per "
                     "question.")
    for r in sorted(res.rows, key=lambda r: -(r.get("Hits@10") or 0)):
        lines.append("| " + " | ".join(fmt(r.get(c)) for c in cols) + " |")
    lines.extend(f"- not run: {name} — {why}" for name, why in res.skipped)
    return "\n".join(lines) + "\n"


def is_full(res: CompareResult) -> bool:
    return all(r.get("scope", "full") == "full" for r in res.rows)


def report_stem(res: CompareResult) -> str:
    """``compare`` for full runs; ``compare.partial-<n>q`` otherwise, so a short run never overwrites the
    git-tracked full-benchmark table."""
    if is_full(res):
        return "compare"
    n = max((int(r.get("n_questions") or 0) for r in res.rows), default=0)
    return f"compare.partial-{n}q"


def write_report(res: CompareResult, out_dir: Path, graph: str, dataset: str) -> tuple[Path, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = report_stem(res)
    csv_path, md_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.md"
    write_csv(res.rows, csv_path)
    md_path.write_text(markdown(res, graph, dataset))
    return csv_path, md_path


def log_comparison(root: Path, experiment: str, graph: str, dataset: str, pipelines: list[Path],
                   limit: int | None, files: list[Path]) -> str:
    """One MLflow run holding the comparison table files; returns its run id."""
    import mlflow

    from hublab.tracking import mlflow_log

    exp_id = mlflow_log.setup(root, experiment)
    with mlflow.start_run(experiment_id=exp_id, run_name=f"comparison {graph}/{dataset}") as run:
        mlflow.log_params({"graph": graph, "dataset": dataset, "limit": str(limit),
                           "pipelines": ",".join(p.name for p in pipelines)[:6000]})
        for f in files:
            mlflow.log_artifact(str(f))
    return run.info.run_id
