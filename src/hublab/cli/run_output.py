"""What ``hublab run`` prints and writes after (or instead of) the run: the metrics table or JSON, the per-question
rows, --output and --report-dir, and the LLM estimate of --dry-run."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from rich.console import Console
from rich.table import Table

from hublab.atomic import write_text_atomic
from hublab.cli.run_table import summary_rows
from hublab.datasets.catalog import load_dataset
from hublab.errors import HubLabError
from hublab.evaluation.names import HITS_AT_10, MAP_AT_10
from hublab.llm.endpoints import llm_endpoints
from hublab.llm.estimate import estimate
from hublab.preflight import bound_tracking_retries, tracking_problem
from hublab.tracking.run_link import run_link
from hublab.tracking.run_lookup import measured_tokens


def estimate_json(est) -> dict:
    """``--dry-run --output f``: the estimate as a JSON document (what the console line says)."""
    return {"dry_run": True, **dataclasses.asdict(est), "tokens": est.tokens, "line": est.line()}


def write_atomic(path: Path, text: str, opt: str) -> None:
    """``write_text_atomic`` with a failure said as one line naming the option and the path given."""
    try:
        write_text_atomic(path, text)
    except OSError as exc:
        raise HubLabError(f"field '{opt}': writing {path} failed: {exc.strerror or exc}") from None


def _predictions_file(s) -> Path | None:
    """The run's per-question records (``outputs/runs/<hash>/predictions.jsonl``), as a path from the current folder
    where it lies below it."""
    if not s.output_dir:
        return None
    path = Path(s.output_dir) / "predictions.jsonl"
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def per_question_rows(s) -> list[dict]:
    """One row per question of the run: its id, Hits@10, MAP@10 and how many triples it returned."""
    return [{"uid": r.get("uid"), HITS_AT_10: (r.get("metrics") or {}).get(HITS_AT_10),
             MAP_AT_10: (r.get("metrics") or {}).get(MAP_AT_10), "triples": len(r.get("retrieved_context") or [])}
            for r in s.per_question]


def print_summary(req, s, as_json: bool, per_question: bool = False):
    """The run's key metrics: a table on stdout, or JSON on stdout and the table on stderr (quiet) with --json; then
    the per-question table (``--per-question``), the predictions file and the MLflow run's link (stderr under
    --json). Returns the console later messages go to."""
    link = run_link(req.tracking_uri, s.experiment_id, s.run_id) if s.run_id else None
    predictions = _predictions_file(s)
    if as_json:
        doc = {"pipeline": req.cfg.name, "graph": req.graph_shown, "dataset": req.dataset, "run_id": s.run_id,
               "n_questions": s.n_questions, "scope": s.scope, "metrics": s.metrics,
               "index_build_s": s.index_build_s, "skipped_metrics": s.skipped_metrics,
               "predictions": str(predictions) if predictions else None}
        if per_question:
            doc["per_question"] = per_question_rows(s)
        typer.echo(json.dumps(doc, indent=1, sort_keys=True, default=str))
    con = Console(stderr=as_json, quiet=as_json)
    t = Table(title=f"{req.cfg.name} on {req.dataset} ({s.scope if not s.full else f'{s.n_questions} questions'}) "
                    f"— MLflow run {s.run_id}")
    t.add_column("metric")
    t.add_column("value", justify="right")
    for label, value in summary_rows(s.metrics):
        t.add_row(label, value)
    con.print(t)
    for m, why in s.skipped_metrics.items():
        con.print(f"[yellow]skipped[/yellow] {m}: {why}")
    if per_question:
        _print_per_question(con, s)
    if predictions:  # on stderr under --json, as the link
        typer.echo(f"per-question results: {predictions}", err=as_json)
    if link:  # on stderr under --json: stdout stays the JSON document
        typer.echo(link, err=as_json)
    return con


def _print_per_question(con, s) -> None:
    rows = per_question_rows(s)
    t = Table(title=f"per question ({len(rows)})")
    for col in ("question", "Hits@10", "MAP@10", "#triples"):
        t.add_column(col, justify="left" if col == "question" else "right")
    for r in rows:
        hit, ap = (r[k] for k in list(r)[1:3])
        t.add_row(str(r["uid"]), "" if hit is None else f"{hit:.3f}", "" if ap is None else f"{ap:.3f}",
                  str(r["triples"]))
    con.print(t)


def write_outputs(s, output: Path | None, report_dir: Path | None, con) -> None:
    """--output (aggregate metrics JSON) and --report-dir (DVC metrics and plots) of a finished run."""
    try:
        if output:
            write_text_atomic(output, json.dumps(s.metrics, indent=1, sort_keys=True))
        if report_dir:
            from hublab.experiment.dvc_report import write_eval_report  # local: pandas (~0.2 s), --report-dir only

            written = write_eval_report(s, report_dir)
            if written != report_dir:
                con.print(f"[yellow]partial run ({s.scope}):[/yellow] report written to {written}, not {report_dir}")
    except OSError as exc:  # checked before the run; the disk can still fill up or vanish since
        raise HubLabError(f"the run finished (MLflow run {s.run_id}, results kept in {s.output_dir}) but writing "
                          f"{exc.filename or output or report_dir} failed: {exc.strerror or exc}; rerun the same "
                          "command to write it again (nothing is recomputed)") from None


def run_estimate(req):
    """The run's LLM estimate for its number of questions (the dataset was read by the check already)."""
    cfg, st = req.cfg, req.settings
    n = len(load_dataset(st, req.dataset))
    uses_llm = bool(llm_endpoints(cfg)) or cfg.llm.get("backend") == "llamacpp"
    measured = None
    # a store that does not answer gives no measurement in seconds, not after MLflow's minutes of retries
    if uses_llm and tracking_problem(st.root) is None:
        bound_tracking_retries()
        measured = measured_tokens(cfg, req.graph, req.dataset, req.tracking_uri)
    from hublab.reports.thesis import tokens_for

    return estimate(cfg, min(n, req.limit) if req.limit else n, thesis=tokens_for(st, cfg), measured=measured)
