"""CLI: ``hublab run`` (what it prints and writes: :mod:`hublab.cli.run_output`)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import typer

from hublab.cli.app import (
    AS_JSON,
    GRAPH_HELP,
    HUB_TYPE,
    LABEL_PREDICATE,
    LLM_BASE_URL,
    LLM_MODEL,
    TYPE_PREDICATE,
    StrictCommand,
    app,
    call_settings,
    use_llm_endpoint,
)
from hublab.cli.run_output import estimate_json, print_summary, run_estimate, write_atomic, write_outputs
from hublab.errors import InputError
from hublab.preflight import check_llm, check_run, llm_endpoints, print_warnings
from hublab.progress import want_progress
from hublab.tuning.space import applicable, check_shape_space, check_space, space_from_pipeline

#: ``hublab run --help``: what the run does first, and the minimal dataset format with three rows (docs/datasets.md)
RUN_HELP = "\n".join([
    "Run a pipeline over a KGQA dataset, evaluate it and log one MLflow run (resumable).",
    "",
    "An LLM pipeline first checks its endpoint (API key, server, model: one line saying what is missing) and "
    "prints an estimate of its tokens and cost; --dry-run prints only the estimate.",
    "",
    "Your own questions: a .csv or .jsonl with the columns uid, question and golden_triples (thesis triple "
    "strings or N-Triples statements; docs/datasets.md). Your own graph: docs/your-graph.md.",
])



@app.command("run", cls=StrictCommand, help=RUN_HELP)
def run_cmd(
    pipeline: Path = typer.Argument(..., help="Pipeline YAML, or its name (hublab list): pipelines/NAME.yaml."),
    graph: str = typer.Option(..., "--graph", help=GRAPH_HELP),
    hub_type: list[str] | None = HUB_TYPE,
    label_predicate: list[str] | None = LABEL_PREDICATE,
    type_predicate: list[str] | None = TYPE_PREDICATE,
    dataset: str = typer.Option(..., "--dataset", help="gv1..gv4, gv3_orkg, reduced_gv1, or your own .csv/.jsonl "
                                "(columns uid, question, golden_triples; see below)."),
    limit: int | None = typer.Option(None, "--limit", min=1, help="Only the first N questions."),
    output: Path | None = typer.Option(None, "--output", help="Write aggregate metrics JSON here."),
    experiment: str | None = typer.Option(None, "--experiment", help="MLflow experiment name."),
    resume: bool = typer.Option(True, "--resume/--no-resume", help="Reuse finished questions of this config."),
    carbon: bool = typer.Option(True, "--carbon/--no-carbon", help="Track energy/emissions with CodeCarbon."),
    trace: bool = typer.Option(True, "--trace/--no-trace",
                               help="Log one MLflow trace per question (the run's Traces tab)."),
    report_dir: Path | None = typer.Option(None, "--report-dir",
                                           help="Also write metrics.json + per-slice CSVs here (DVC metrics/plots)."),
    llm_base_url: str | None = LLM_BASE_URL,
    llm_model: str | None = LLM_MODEL,
    dry_run: bool = typer.Option(False, "--dry-run", help="Only print the estimate of LLM tokens and cost for "
                                 "these questions (no LLM call, no question run, nothing written)."),
    progress: bool | None = typer.Option(None, "--progress/--no-progress", help="Progress bars (an index built "
                                         "before the first question, the questions) on stderr; default: when "
                                         "stderr is a terminal and not --json."),
    per_question: bool = typer.Option(False, "--per-question", help="Also print one row per question (id, Hits@10, "
                                      "MAP@10, triples returned); every field is in the predictions file."),
    strict: bool = typer.Option(False, "--strict", help="Refuse a KGQA file naming golden triple ids that are "
                                "not in --graph (default: a warning with the rows)."),
    as_json: bool = AS_JSON,
) -> None:
    """Run a pipeline over a KGQA dataset, evaluate it and log one MLflow run (resumable); help: RUN_HELP."""
    use_llm_endpoint(llm_base_url, llm_model)
    st = call_settings(label_predicate, type_predicate)
    if dry_run and report_dir is not None:
        raise InputError("--dry-run runs no question, so there is no report to write; drop --report-dir (--output "
                         "receives the estimate as JSON)", field="--report-dir")
    checked = check_run(pipeline, graph, dataset, settings=st, experiment=experiment, output=output,
                        report_dir=report_dir, llm_base_url=llm_base_url, tracking=not dry_run, strict=strict,
                        hub_types=hub_type)
    check_search_space(checked.cfg)
    # the run, decided once: everything below (estimate, runner, report) reads it from here
    show = bool(progress) if as_json and progress is None else want_progress(progress)
    # local: the run machinery (pipeline, retrievers, tracking: ~0.3 s of imports) loads when a run starts, so that
    # `hublab --help`, `hublab list` and the other commands start in a quarter of a second
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment

    req = RunRequest(checked.cfg, graph, dataset, st, limit=limit, experiment=experiment, resume=resume,
                     track_carbon=carbon, progress=show, trace=trace,
                     hub_types=tuple(hub_type or ()))
    uses_llm = bool(llm_endpoints(req.cfg))
    if dry_run:
        print_warnings(checked.warnings)
        est = run_estimate(req)
        typer.echo(est.line())
        if output is not None:
            write_atomic(output, json.dumps(estimate_json(est), indent=1, sort_keys=True) + "\n", "--output")
        return
    if uses_llm:
        # before any model load or question; a missing key is then said once, by this check, not also warned about
        checked.warnings[:0] = check_llm(req.cfg)
    print_warnings(checked.warnings)
    if uses_llm or req.cfg.llm.get("backend") == "llamacpp":
        print(run_estimate(req).line(), file=sys.stderr)
    try:
        s = run_experiment(req)
    except KeyboardInterrupt as exc:  # Ctrl-C, SIGTERM or SIGHUP (hublab.signals)
        raise _interrupted(exc, resume) from None
    con = print_summary(req, s, as_json, per_question)
    write_outputs(s, output, report_dir, con)
    if s.failed:
        con.print(f"[red]run FAILED[/red]: {s.failure_reason}")
        raise typer.Exit(s.exit_code)


def _interrupted(exc: KeyboardInterrupt, resume: bool) -> typer.Exit:
    """The exit of an interrupted run, after one line on stderr: the runner ended the MLflow run KILLED and kept the
    checkpoint, so it says how to go on, not just "Aborted!"."""
    from hublab.signals import describe

    what, code = describe(exc)
    how = ("rerun the same command to resume: the questions already answered are kept in the run's checkpoint "
           "(outputs/runs/) and are not asked again" if resume else
           "rerun it without --no-resume to resume from the questions already answered (outputs/runs/)")
    print(f"interrupted ({what}): the MLflow run (if it had started) is marked KILLED; {how}", file=sys.stderr)
    return typer.Exit(code)


def check_search_space(cfg) -> None:
    """A pipeline's ``search_space`` and ``shape_space`` are checked by ``run`` as ``hublab tune`` checks them (a
    factor the method does not have, a value its parameter types refuse), so a file that one command accepts the
    other does not refuse."""
    if cfg is None or not (cfg.search_space or cfg.shape_space):
        return
    base = cfg.to_dict()
    space = applicable(space_from_pipeline(cfg.search_space, source=str(cfg.source)), base)
    if space.factors:
        check_space(space, base, source=str(cfg.source))
    check_shape_space(cfg.search_space, cfg.shape_space, base, source=str(cfg.source))
