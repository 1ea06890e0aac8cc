"""One table of many retrieval methods on one graph (``hublab report compare --graph G``): our runs (each its own
MLflow run, resumable) side by side with the thesis's reported numbers (Table 10.5), plus the thesis's
sustainability metrics."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.evaluation import names
from hublab.pipeline.config import PipelineConfig, load_pipeline
from hublab.reports import tables
from hublab.reports.thesis import SETTING, VARIANT_TABLE, Thesis, label
from hublab.tracking.carbon import sustainability
from hublab.tracking.comparison_runs import ChildRun, log_comparison_runs

# @10 rank metrics first; full-list metrics only next to the output size they were measured at.
COLUMNS = [(n, names.LABELS[n]) for n in names.KEY_METRICS]
SOURCE_TAG = "source"  # "hublab" on our method children, "thesis" on the thesis reference children


def thesis_reference(settings: Settings) -> Thesis:
    """The thesis's numbers this table quotes: graph_variants.csv (Recall, Precision, F1, MAP@10) alone."""
    return Thesis.load(settings, variant_table_only=True)


@dataclass
class CompareResult:
    rows: list[dict[str, Any]]
    skipped: list[tuple[str, str]]


def compare_methods(pipelines: list[Path], graph: str, dataset: str, *, settings: Settings, limit: int | None,
                    experiment: str, include_llm: bool = False, track_carbon: bool = True,
                    max_output_triples: int | None = None) -> CompareResult:
    """Run each pipeline (resumable) and tabulate it. ``max_output_triples`` evaluates every method at the same
    output bound (each retriever honours it), so full-list metrics become comparable."""
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    thesis = thesis_reference(settings)
    rows: list[dict[str, Any]] = []
    skipped: list[tuple[str, str]] = []
    for path in pipelines:
        cfg: PipelineConfig = load_pipeline(path)
        if max_output_triples is not None:
            cfg.retriever_params["max_output_triples"] = int(max_output_triples)
        if cfg.llm.get("backend", "none") == "openai" and not include_llm:
            skipped.append((path.name, "needs an external OpenAI-compatible LLM (list it explicitly to run it)"))
            continue
        s = run_experiment(RunRequest(cfg, graph, dataset, settings, limit=limit, experiment=experiment,
                                      run_name=f"{cfg.name}·{graph}", track_carbon=track_carbon))
        row: dict[str, Any] = {"method": cfg.retriever_type, "pipeline": path.name, "bound": max_output_triples,
                               "llm": cfg.llm.get("backend", "none"), "n_questions": s.n_questions,
                               "scope": s.scope, "mlflow_run": s.run_id,
                               tables.STATUS: tables.run_status(s.n_questions, s.metrics.get("n_errors") or 0,
                                                                failed=s.failed, reason=s.failure_reason)}
        for key, col in COLUMNS:
            row[col] = s.metrics.get(key)
        row["s/question"] = s.metrics.get("runtime")
        row["index build s"] = s.metrics.get("index_build_s")  # once per run, never inside s/question
        row["LLM tokens/question"] = s.metrics.get("llm_tokens")
        row["kgCO2e/question"] = s.metrics.get("session_emissions_per_question", s.metrics.get("emissions"))
        ref = thesis.number(cfg.retriever_type, graph)
        for key, col in COLUMNS:
            if key in ref:
                row[f"thesis {col}"] = ref[key]
        row["thesis setting"] = SETTING if ref else ""
        rows.append(row)
    systems = {r["pipeline"]: (r["Recall"] or 0.0, r["kgCO2e/question"] or 0.0) for r in rows
               if r.get("kgCO2e/question")}
    for name, m in sustainability(systems).items():
        row = next(r for r in rows if r["pipeline"] == name)
        row.update({"CE_rel": m["CE_rel"], "ΔCE": m["delta_CE"], "n(CE)": m["n_CE"], "n(CE_rel)": m["n_CE_rel"]})
    return CompareResult(rows, skipped)


#: the columns a rerun on another machine changes although the results are the same: in the table a command prints
#: and in MLflow, never in the written (possibly committed) report, whose timings go to ``timings.csv`` beside it
#: (git-ignored), as ``hublab run --report-dir`` keeps them apart (``experiment/dvc_report.py``)
MACHINE = ("s/question", "index build s", "kgCO2e/question", "CE_rel", "ΔCE", "n(CE)", "n(CE_rel)")

#: the table's columns (row keys, each its own heading); the thesis's four Table 10.5 metrics last
TABLE = ["method", "pipeline", "llm", *[c[1] for c in COLUMNS], "s/question", "index build s", "LLM tokens/question",
         "kgCO2e/question", *[f"thesis {c[1]}" for c in COLUMNS if c[1] in ("Recall", "Precision", "F1", "MAP@10")]]


def markdown(res: CompareResult, graph: str, dataset: str, *, timings: bool = True) -> str:
    partial = sorted({r.get("scope", "full") for r in res.rows} - {"full"})
    lines = []
    if partial:
        lines = [f"**PARTIAL RUN — scope: {', '.join(partial)}.** These numbers come from a subset of the benchmark "
                 "and are not comparable with full-benchmark or thesis numbers.", ""]
    note = tables.status_note(r.get(tables.STATUS, "") for r in res.rows)
    lines += [note, ""] if note else []
    lines.append(f"Methods on {tables.md_code(graph)} / {tables.md_code(dataset)} (HubLab runs are LLM-free or "
                 "embedded; thesis numbers used OpenAI models and are shown where the thesis reports the method on "
                 "this graph variant).")
    bounds = sorted({r.get("bound") for r in res.rows if r.get("bound")})
    if bounds:
        lines.append(f"All methods evaluated at the same output bound: at most {bounds[0]} triples per question.")
    ordered = sorted(res.rows, key=lambda r: -(r.get("Hits@10") or 0))
    columns = [c for c in TABLE if timings or c not in MACHINE]
    if note:  # the run state beside the method, only in a comparison with a marked run
        columns.insert(columns.index("pipeline") + 1, tables.STATUS)
    lines += ["", tables.markdown_table([tables.field(c) for c in columns], ordered)]
    if not timings:
        lines += ["", "Seconds, index build time and emissions of these runs: `timings.csv` beside this file (not "
                  "kept in git: they differ on every machine) and each run in MLflow."]
    lines.extend(f"- not run: {tables.md_text(name)} — {tables.md_text(why)}" for name, why in res.skipped)
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
    """``<stem>.md`` and ``<stem>.csv`` with what every machine computes alike (a DVC stage commits them), and
    ``timings.csv`` with each pipeline's machine-dependent figures."""
    stem = report_stem(res)
    marked = any(r.get(tables.STATUS) for r in res.rows)  # a clean comparison's CSV keeps its columns
    quality = [{k: v for k, v in r.items() if k not in MACHINE and k != "mlflow_run" and (marked or k != tables.STATUS)}
               for r in res.rows]
    timing = [{"pipeline": r["pipeline"], **{k: r.get(k) for k in MACHINE if k in r}} for r in res.rows]
    tables.write_csv(timing, out_dir / ("timings.csv" if stem == "compare" else f"{stem}.timings.csv"))
    return tables.write_report(out_dir, stem, markdown(res, graph, dataset, timings=False), quality)


def comparison_key(graph: str, dataset: str, pipelines: list[Path], limit: int | None,
                   max_output_triples: int | None) -> str:
    """What identifies a comparison: the same key finds (and updates) the same MLflow parent run."""
    import hashlib
    import json

    from hublab.redact import without_credentials  # an endpoint with another password is the same comparison

    ident = {"graph": without_credentials(graph), "dataset": dataset, "pipelines": sorted(p.name for p in pipelines),
             "limit": limit, "max_output_triples": max_output_triples}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:16]


def headline_metrics(row: dict[str, Any]) -> dict[str, float]:
    """A table row's headline metrics under their MLflow names (``recall_at_10_triples``…; the same keys as the
    method runs and the thesis reference children)."""
    from hublab.tracking.mlflow_log import finite_metrics

    return finite_metrics({key: row.get(col) for key, col in COLUMNS})


def thesis_children(thesis: Thesis, graph: str) -> dict[str, ChildRun]:
    """child key → one thesis reference run per thesis method on this graph variant."""
    from hublab.tracking.mlflow_log import finite_metrics

    out = {}
    for name, vals in sorted(thesis.on_graph(graph).items()):
        config = label(name, graph)
        out[f"thesis:{name}"] = ChildRun(
            f"thesis · {config}", finite_metrics(vals),
            {SOURCE_TAG: "thesis", "hublab.method": thesis.method(name), "thesis.config": config,
             "thesis.setting": SETTING, "thesis.table": VARIANT_TABLE})
    return out


def method_children(res: CompareResult) -> dict[str, ChildRun]:
    """child key → one child run per method we ran."""
    out = {}
    for r in res.rows:
        tags = {SOURCE_TAG: "hublab", "hublab.method": r["method"], "hublab.pipeline": r["pipeline"],
                "hublab.llm": r.get("llm") or "none", "hublab.scope": r.get("scope", "full"),
                "hublab.n_questions": str(r.get("n_questions")), "hublab.method_run_id": str(r.get("mlflow_run")),
                "hublab.bound": str(r.get("bound"))}
        if r.get(tables.STATUS):
            tags["hublab.status"] = r[tables.STATUS]
        metrics = headline_metrics(r)
        for key, col in (("runtime", "s/question"), ("index_build_s", "index build s"),
                         ("llm_tokens", "LLM tokens/question"),
                         ("emissions", "kgCO2e/question")):
            v = r.get(col)
            if isinstance(v, int | float) and not isinstance(v, bool):
                metrics[key] = float(v)
        out[f"method:{r['pipeline']}"] = ChildRun(f"{r['method']} · {r['pipeline']}", metrics, tags)
    return out


def log_comparison(root: Path, experiment: str, graph: str, dataset: str, pipelines: list[Path],
                   limit: int | None, files: list[Path], *, res: CompareResult | None = None,
                   thesis: Thesis | None = None, max_output_triples: int | None = None) -> str:
    """The comparison in MLflow: one parent run (params, the CSV/Markdown table as artifacts) with one nested
    child run per method (its headline metrics, a link to its full run) and one per thesis method reported on
    this graph variant (``source=thesis``, the same metric keys), so MLflow's compare view puts ours next to
    the thesis's. Re-running the same comparison (same graph, dataset, pipelines, limit, bound) updates that
    parent and its children instead of adding new runs. Returns the parent's run id."""
    from hublab.tracking.mlflow_log import MAX_PARAM_LEN

    params = {"graph": graph, "dataset": dataset, "limit": str(limit), "max_output_triples": str(max_output_triples),
              "pipelines": ",".join(sorted(p.name for p in pipelines))[:MAX_PARAM_LEN]}
    children = {**method_children(res or CompareResult([], [])),
                **(thesis_children(thesis, graph) if thesis is not None else {})}
    return log_comparison_runs(root, experiment, key=comparison_key(graph, dataset, pipelines, limit,
                                                                    max_output_triples),
                               name=f"comparison {graph}/{dataset}", params=params, children=children,
                               files=files).parent
