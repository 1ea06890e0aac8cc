"""Run artifacts: predictions CSV in the thesis's column layout, config, slice tables and plots."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from hublab.atomic import write_text_atomic
from hublab.config import Settings
from hublab.evaluation import names
from hublab.pipeline.config import PipelineConfig, flatten
from hublab.reports.tables import write_csv
from hublab.reports.thesis import run_reference

PLOT_METRICS = (names.RECALL, names.PRECISION, names.F1, names.HITS_AT_10, names.MAP_AT_10)


def predictions_rows(cfg: PipelineConfig, records: list[dict[str, Any]], config_hash: str,
                     secrets: list[str] | None = None) -> list[dict[str, Any]]:
    """Thesis layout: config_hash, uid, generated_answer, retrieved_context, metric columns, runtime,
    llm_tokens, carbon columns, flattened config, then the dataset columns. Secret-looking config keys are
    dropped and secret values masked (see ``mlflow_log.scrub``)."""
    from hublab.tracking.mlflow_log import env_names_in, safe_params, secret_values

    flat = flatten(cfg.to_dict())
    if secrets is None:
        secrets = secret_values(env_names_in(flat))
    flat_cfg = {f"config.{k}": v for k, v in safe_params(flat, secrets).items()}
    rows = []
    for r in records:
        row: dict[str, Any] = {"config_hash": config_hash, "uid": r["uid"], "generated_answer": r["generated_answer"],
                               "retrieved_context": str(r["retrieved_context"])}
        row.update(r.get("metrics", {}))
        for col in ("runtime", "llm_tokens", "llm_prompt_tokens", "llm_completion_tokens", "cpu_energy_consumption",
                    "gpu_energy_consumption", "ram_energy_consumption", "total_energy_consumption",
                    "tracking_duration", "emissions", "energy_measured", "error", "reason", "n_llm_errors",
                    "n_llm_retries", "n_llm_fallbacks", "llm_cost", "timed_out", "degraded"):
            row[col] = r.get(col)
        row.update(flat_cfg)
        row.update({"question": r["question"], "golden_answer": r["golden_answer"],
                    "golden_triples": str(r["golden_triples"]), "topic_entity_id": r.get("topic_entity_id")})
        row.update(r.get("qa", {}))
        rows.append({k: _scrub_cell(v, secrets) for k, v in row.items()})
    return rows


def _scrub_cell(v: Any, secrets: list[str]) -> Any:
    from hublab.tracking.mlflow_log import scrub

    return scrub(v, secrets) if isinstance(v, str) else v


#: the per-slice figures as an MLflow table (the run page's table view), beside metrics_by_slice.csv
SLICE_TABLE = "metrics_by_slice.json"


def write_slice_table(slices: dict[str, dict[str, dict[str, float]]], path: Path) -> None:
    """The slices in the file format of ``mlflow.log_table`` (pandas' ``split`` JSON). Written here and logged with
    the other artifacts, not through ``log_table``: that appends to a table already in the run, so a resumed or
    rerun run would list every slice twice; this file is replaced whole each time."""
    import pandas as pd

    from hublab.tracking.run_page import slice_table

    write_text_atomic(path, pd.DataFrame(slice_table(slices)).to_json(orient="split", index=False))


def mark_table(artifact_file: str) -> None:
    """Tell the MLflow UI that the active run's ``artifact_file`` is a table (the tag ``log_table`` sets)."""
    import mlflow
    from mlflow.utils.mlflow_tags import MLFLOW_LOGGED_ARTIFACTS

    run = mlflow.active_run()
    listed = json.loads(mlflow.get_run(run.info.run_id).data.tags.get(MLFLOW_LOGGED_ARTIFACTS, "[]"))
    entry = {"path": artifact_file, "type": "table"}
    if entry not in listed:
        mlflow.set_tag(MLFLOW_LOGGED_ARTIFACTS, json.dumps([*listed, entry]))


def thesis_reference(cfg: PipelineConfig, graph: str, settings: Settings) -> dict[str, float]:
    """The thesis's numbers (graph_variants.csv) for this retriever on this graph variant, where the thesis reports
    them (:func:`hublab.reports.thesis.run_reference`)."""
    return run_reference(settings, cfg.retriever_type, graph)


def _plots(out: Path, metrics: dict[str, float], slices: dict[str, dict[str, dict[str, float]]],
           reference: dict[str, float], title: str) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for field, groups in slices.items():
        values = list(groups)
        fig, ax = plt.subplots(figsize=(max(6, len(values) * 0.9), 4))
        width = 0.8 / len(PLOT_METRICS)
        for j, m in enumerate(PLOT_METRICS):
            ax.bar([i + j * width for i in range(len(values))], [groups[v].get(m, 0.0) for v in values], width,
                   label=m)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(values))], values, rotation=30, ha="right")
        ax.set_ylim(0, 1)
        ax.set_title(f"{title}: by {field}")
        ax.legend(fontsize=7)
        fig.tight_layout()
        p = out / f"metrics_by_{field}.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    if reference:
        names = [m for m in reference if m in metrics]
        fig, ax = plt.subplots(figsize=(7, 4))
        ax.bar([i - 0.2 for i in range(len(names))], [metrics[m] for m in names], 0.4, label="HubLab")
        ax.bar([i + 0.2 for i in range(len(names))], [reference[m] for m in names], 0.4, label="thesis")
        ax.set_xticks(range(len(names)), names, rotation=20)
        ax.set_ylim(0, 1)
        ax.set_title(f"{title}: vs thesis")
        ax.legend()
        fig.tight_layout()
        p = out / "vs_thesis.png"
        fig.savefig(p, dpi=110)
        plt.close(fig)
        paths.append(p)
    return paths


def log_run_artifacts(cfg: PipelineConfig, records: list[dict[str, Any]], metrics: dict[str, float],
                      slices: dict[str, dict[str, dict[str, float]]], out_dir: Path, *, graph: str, dataset: str,
                      settings: Settings, config_hash: str | None = None,
                      identity: dict[str, Any] | None = None, secrets: list[str] | None = None,
                      plots: bool = True) -> None:
    """The run's artifacts (predictions, config, identity, metrics, slices, thesis reference, and with ``plots``
    their charts); ``secrets`` as the run resolved them (:attr:`RunRequest.secrets`), else read from the
    environment now."""
    import mlflow

    from hublab.tracking.mlflow_log import env_names_in, scrub_obj, secret_values

    chash = config_hash or out_dir.name
    if secrets is None:
        secrets = secret_values(env_names_in(flatten(cfg.to_dict())))
    art = out_dir / "artifacts"
    art.mkdir(parents=True, exist_ok=True)
    write_csv(predictions_rows(cfg, records, chash, secrets), art / "predictions.csv")
    write_text_atomic(art / "pipeline.yaml", yaml.safe_dump(scrub_obj(cfg.to_dict(), secrets), sort_keys=False))
    if identity is not None:
        write_text_atomic(art / "run_identity.json", json.dumps(identity, indent=1, sort_keys=True))
    write_text_atomic(art / "metrics.json", json.dumps(metrics, indent=1, sort_keys=True))
    slice_rows = [{"field": f, "value": v, **m} for f, g in slices.items() for v, m in g.items()]
    if slice_rows:
        write_csv(slice_rows, art / "metrics_by_slice.csv")
        write_slice_table(slices, art / SLICE_TABLE)
    reference = thesis_reference(cfg, graph, settings)
    if reference:
        write_text_atomic(art / "thesis_reference.json", json.dumps(reference, indent=1))
    scope = (identity or {}).get("scope", "full")
    if plots:
        _plots(art, metrics, slices, reference,
               f"{cfg.name} · {graph} · {dataset}" + ("" if scope == "full" else f" ({scope})"))
    mlflow.log_artifacts(str(art))
    if slice_rows:
        mark_table(SLICE_TABLE)
