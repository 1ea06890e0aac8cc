"""CLI: ``hublab run``, ``hublab index``, ``hublab ask``."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from hublab.cli.app import AS_JSON, LLM_BASE_URL, LLM_MODEL, StrictCommand, app, use_llm_endpoint
from hublab.errors import HubLabError, InputError

#: ``hublab run --help``: what the run does first, and the minimal dataset format with three rows (docs/datasets.md)
RUN_HELP = "\n".join([
    "Run a pipeline over a KGQA dataset, evaluate it and log one MLflow run (resumable).",
    "",
    "An LLM pipeline first checks its endpoint (API key, server, model: one line saying what is missing) and "
    "prints an estimate of its tokens and cost; --dry-run prints only the estimate.",
    "",
    "Your own questions: --dataset my_questions.csv (or .jsonl) needs only the columns uid, question and "
    "golden_triples (the thesis's triple strings, with ids of the --graph); every other thesis column is "
    "optional (docs/datasets.md). Three rows, on --graph gv3_orkg:",
    "",
    "\b",
    "uid,question,golden_triples",
    "q1,Which papers did Georg Buchgeher publish in 2017?,"
    "\"['(R869393:authors list, has list element, L1522147:Georg Buchgeher)']\"",
    "q2,How many papers has Johannes Grohmann published?,"
    "\"['(R872195:authors list, has list element, L1527978:Johannes Grohmann)']\"",
    "q3,What is the replication package link of 'Trace Link Recovery for Software Architecture Documentation'?,"
    "\"['(R870187:Evidence 1, Replication Package Link, L1523846:https://doi.org/10.5281/zenodo.4730621)']\"",
])


@app.command("run", cls=StrictCommand, help=RUN_HELP)
def run_cmd(
    pipeline: Path = typer.Argument(..., help="Pipeline YAML, or its name (hublab list): pipelines/NAME.yaml."),
    graph: str = typer.Option(..., "--graph", help="gv1..gv4 or gv3_orkg."),
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
    as_json: bool = AS_JSON,
) -> None:
    """Run a pipeline over a KGQA dataset, evaluate it and log one MLflow run (resumable); help: RUN_HELP."""
    import sys

    from hublab.config import settings
    from hublab.experiment.request import RunRequest
    from hublab.preflight import check_llm, check_run, llm_endpoints, print_warnings

    use_llm_endpoint(llm_base_url, llm_model)
    st = settings()
    if dry_run and report_dir is not None:
        raise InputError("--dry-run runs no question, so there is no report to write; drop --report-dir (--output "
                         "receives the estimate as JSON)", field="--report-dir")
    checked = check_run(pipeline, graph, dataset, settings=st, experiment=experiment, output=output,
                        report_dir=report_dir, llm_base_url=llm_base_url, tracking=not dry_run)
    check_search_space(checked.cfg)
    # the run, decided once: everything below (estimate, runner, report) reads it from here
    from hublab.progress import want_progress

    show = bool(progress) if as_json and progress is None else want_progress(progress)
    req = RunRequest(checked.cfg, graph, dataset, st, limit=limit, experiment=experiment, resume=resume,
                     track_carbon=carbon, progress=show, trace=trace)
    uses_llm = bool(llm_endpoints(req.cfg))
    if dry_run:
        print_warnings(checked.warnings)
        est = _estimate(req)
        typer.echo(est.line())
        if output is not None:
            _write_atomic(output, json.dumps(_estimate_json(est), indent=1, sort_keys=True) + "\n", "--output")
        return
    if uses_llm:
        # before any model load or question; a missing key is then said once, by this check, not also warned about
        checked.warnings[:0] = check_llm(req.cfg)
    print_warnings(checked.warnings)
    if uses_llm or req.cfg.llm.get("backend") == "llamacpp":
        print(_estimate(req).line(), file=sys.stderr)
    from hublab.experiment.runner import run_experiment

    try:
        s = run_experiment(req)
    except KeyboardInterrupt:
        # the runner ended the MLflow run KILLED and kept the checkpoint: say how to go on, not just "Aborted!"
        how = ("rerun the same command to resume: the questions already answered are kept in the run's checkpoint "
               "(outputs/runs/) and are not asked again" if resume else
               "rerun it without --no-resume to resume from the questions already answered (outputs/runs/)")
        print(f"interrupted (Ctrl-C): the MLflow run (if it had started) is marked KILLED; {how}", file=sys.stderr)
        raise typer.Exit(130) from None
    con = _print_summary(req, s, as_json, per_question)
    _write_outputs(s, output, report_dir, con)
    if s.failed:
        con.print(f"[red]run FAILED[/red]: {s.failure_reason}")
        raise typer.Exit(s.exit_code)


def check_search_space(cfg) -> None:
    """A pipeline's ``search_space`` is checked by ``run`` as ``hublab tune`` checks it (a factor the method does not
    have, a value its parameter types refuse), so a file that one command accepts the other does not refuse."""
    if cfg is None or not cfg.search_space:
        return
    from hublab.tuning.space import applicable, check_space, space_from_pipeline

    base = cfg.to_dict()
    space = applicable(space_from_pipeline(cfg.search_space, source=str(cfg.source)), base)
    if space.factors:
        check_space(space, base, source=str(cfg.source))


def _estimate_json(est) -> dict:
    """``--dry-run --output f``: the estimate as a JSON document (what the console line says)."""
    import dataclasses

    return {"dry_run": True, **dataclasses.asdict(est), "tokens": est.tokens, "line": est.line()}


def _write_atomic(path: Path, text: str, opt: str) -> None:
    """Write ``text`` to ``path`` through a temporary file beside it and a rename, so a full disk leaves the old file
    (or none), never a truncated one; a device such as /dev/null is written directly. Errors name the path given."""
    import os
    import tempfile

    try:
        if path.exists() and not path.is_file():  # /dev/null, checked to be a harmless device before
            with path.open("w") as f:
                f.write(text)
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
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
    from hublab.evaluation.names import HITS_AT_10, MAP_AT_10

    return [{"uid": r.get("uid"), HITS_AT_10: (r.get("metrics") or {}).get(HITS_AT_10),
             MAP_AT_10: (r.get("metrics") or {}).get(MAP_AT_10), "triples": len(r.get("retrieved_context") or [])}
            for r in s.per_question]


def _print_summary(req, s, as_json: bool, per_question: bool = False):
    """The run's key metrics: a table on stdout, or JSON on stdout and the table on stderr (quiet) with --json; then
    the per-question table (``--per-question``), the predictions file and the MLflow run's link (stderr under
    --json). Returns the console later messages go to."""
    from rich.console import Console
    from rich.table import Table

    from hublab.experiment.runner import KEY_METRICS
    from hublab.tracking.run_link import run_link

    link = run_link(req.tracking_uri, s.experiment_id, s.run_id) if s.run_id else None
    predictions = _predictions_file(s)
    if as_json:
        doc = {"pipeline": req.cfg.name, "graph": req.graph, "dataset": req.dataset, "run_id": s.run_id,
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
    for m in (*KEY_METRICS, "runtime", "index_build_s", "llm_tokens", "emissions", "n_errors", "n_empty_results",
              "n_llm_errors", "n_llm_retries", "n_llm_fallbacks", "llm_cost", "n_degraded", "failure_share"):
        if m in s.metrics:
            t.add_row(m, f"{s.metrics[m]:.4f}")
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
    from rich.table import Table

    rows = per_question_rows(s)
    t = Table(title=f"per question ({len(rows)})")
    for col in ("question", "Hits@10", "MAP@10", "#triples"):
        t.add_column(col, justify="left" if col == "question" else "right")
    for r in rows:
        hit, ap = (r[k] for k in list(r)[1:3])
        t.add_row(str(r["uid"]), "" if hit is None else f"{hit:.0f}", "" if ap is None else f"{ap:.3f}",
                  str(r["triples"]))
    con.print(t)


def _write_outputs(s, output: Path | None, report_dir: Path | None, con) -> None:
    """--output (aggregate metrics JSON) and --report-dir (DVC metrics and plots) of a finished run."""
    try:
        if output:
            output.parent.mkdir(parents=True, exist_ok=True)
            output.write_text(json.dumps(s.metrics, indent=1, sort_keys=True))
        if report_dir:
            from hublab.experiment.dvc_report import write_eval_report

            written = write_eval_report(s, report_dir)
            if written != report_dir:
                con.print(f"[yellow]partial run ({s.scope}):[/yellow] report written to {written}, not {report_dir}")
    except OSError as exc:  # checked before the run; the disk can still fill up or vanish since
        raise HubLabError(f"the run finished (MLflow run {s.run_id}, results kept in {s.output_dir}) but writing "
                          f"{exc.filename or output or report_dir} failed: {exc.strerror or exc}; rerun the same "
                          "command to write it again (nothing is recomputed)") from None


def _estimate(req):
    """The run's LLM estimate for its number of questions (the dataset was read by the check already)."""
    from hublab.datasets.catalog import load_dataset
    from hublab.llm.endpoints import llm_endpoints
    from hublab.llm.estimate import estimate
    from hublab.preflight import bound_tracking_retries, tracking_problem
    from hublab.tracking.run_lookup import measured_tokens

    cfg, st = req.cfg, req.settings
    n = len(load_dataset(st, req.dataset))
    uses_llm = bool(llm_endpoints(cfg)) or cfg.llm.get("backend") == "llamacpp"
    measured = None
    # a store that does not answer gives no measurement in seconds, not after MLflow's minutes of retries
    if uses_llm and tracking_problem(st.root) is None:
        bound_tracking_retries()
        measured = measured_tokens(cfg, req.graph, req.dataset, req.tracking_uri)
    return estimate(cfg, min(n, req.limit) if req.limit else n, thesis_dir=st.path("thesis_results"),
                    measured=measured)


@app.command("index", cls=StrictCommand)
def index_cmd(
    pipeline: Path = typer.Option(..., "--pipeline", help="Pipeline YAML, or its name (hublab list)."),
    graph: str = typer.Option(..., "--graph", help="Graph name."),
    stats_out: Path | None = typer.Option(None, "--stats", help="Write index stats JSON here (DVC metrics)."),
    llm_base_url: str | None = LLM_BASE_URL,
    llm_model: str | None = LLM_MODEL,
    progress: bool = typer.Option(True, "--progress/--no-progress", help="A progress bar over the build (with the "
                                  "LLM calls it makes), or one line saying the index is up to date (stderr)."),
) -> None:
    """Build or incrementally update the retriever's index for a graph."""
    from hublab.config import settings
    from hublab.pipeline.pipeline import build_index
    from hublab.preflight import check_run, print_warnings

    use_llm_endpoint(llm_base_url, llm_model)
    checked = check_run(pipeline, graph, None, settings=settings(), stats_out=stats_out, llm_base_url=llm_base_url,
                        tracking=False)
    print_warnings(checked.warnings)
    stats = build_index(checked.cfg, graph, progress=progress)
    typer.echo(json.dumps(stats, indent=1, default=str))
    if stats_out:
        # timings and build history go to outputs/provenance/: the stats file is a DVC output of the index stage,
        # and a fresh clone that rebuilds the index must reproduce it byte for byte (clean `git status`)
        from hublab.config import project_root
        from hublab.graph.snapshot import write_provenance

        timing = {k: v for k, v in stats.items() if _is_timing(k)}
        write_provenance(project_root(), f"index-{stats_out.stem}", {"stats": str(stats_out), **timing})
        try:
            stats_out.parent.mkdir(parents=True, exist_ok=True)
            stats_out.write_text(json.dumps({k: v for k, v in stats.items() if not _is_timing(k)}, indent=1,
                                            default=str) + "\n")
        except OSError as exc:
            raise HubLabError(f"the index is built but writing {stats_out} failed: {exc.strerror or exc}") from None


@app.command("ask", cls=StrictCommand)
def ask_cmd(
    question: str = typer.Argument(..., help="The question."),
    pipeline: Path = typer.Option(..., "--pipeline", help="Pipeline YAML, or its name (hublab list)."),
    graph: str = typer.Option(..., "--graph", help="Graph name."),
    topic_entity: str | None = typer.Option(None, "--topic-entity", help="Entry entity id (e.g. R659055)."),
    top: int = typer.Option(10, "--top", help="How many supporting triples to print."),
    llm_base_url: str | None = LLM_BASE_URL,
    llm_model: str | None = LLM_MODEL,
    as_json: bool = AS_JSON,
) -> None:
    """Answer one question; print the answer and the supporting triples with their source papers."""
    from rich.console import Console

    from hublab.config import settings
    from hublab.pipeline.pipeline import build_pipeline
    from hublab.preflight import check_llm, check_run, print_warnings

    use_llm_endpoint(llm_base_url, llm_model)
    checked = check_run(pipeline, graph, None, settings=settings(), llm_base_url=llm_base_url, tracking=False)
    checked.warnings[:0] = check_llm(checked.cfg)  # key, server and model before the index and models load
    print_warnings(checked.warnings)
    pipe = build_pipeline(checked.cfg, graph)
    pipe.retriever.ensure_ready()
    graph_obj = pipe.retriever.resources.graph
    topic_value = graph_obj.label(topic_entity) if topic_entity else None
    out = pipe.run(question, topic_entity, topic_value)
    if as_json:
        typer.echo(json.dumps({
            "question": question, "answer": out.answer, "reason": out.reason, "notes": out.notes,
            "runtime_s": out.runtime_s, "sources": out.sources,
            "triples": [{"text": c.text, "score": c.score,
                         "paper": (p.uid if (p := graph_obj.paper_of(c.triple.subject.uid)) else None)
                         if c.triple else None} for c in out.contexts[:top]],
        }, indent=1, default=str))
        return
    con = Console()
    con.print(f"[bold]Answer[/bold] ({out.runtime_s:.2f} s):\n{out.answer}\n")
    if not out.contexts:
        con.print(f"[yellow]No supporting triples.[/yellow] {out.reason or ''}")
        return
    con.print("[bold]Supporting triples[/bold]")
    for i, c in enumerate(out.contexts[:top], start=1):
        paper = graph_obj.paper_of(c.triple.subject.uid) if c.triple else None
        src = f"  [dim]← {paper.text}[/dim]" if paper else ""
        score = f" ({c.score:.3f})" if c.score is not None else ""
        con.print(f"{i:>2}. {c.text}{score}{src}")
    for note in out.notes:
        con.print(f"[yellow]note:[/yellow] {note}")


#: Stats of the build, not of the index: what this run had to do depends on what an earlier build left.
_HISTORY = frozenset({"hubs_reindexed", "hubs_removed", "vectors_written", "skipped"})


def _is_timing(key: str) -> bool:
    """Stats that measure the machine (seconds, rates) or the build's history, not the index: a fresh clone's
    clean build and an incremental one describe the same index with the same stats file."""
    return "seconds" in key or key.endswith("_per_s") or key in _HISTORY
