"""The run's check: ``hublab run`` / ``index`` / ``ask`` gather every problem of the pipeline, the graph, the dataset,
the options and the environment in one pass, then raise them together (``InputErrors``) or return the warnings."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.errors import InputError, raise_all
from hublab.pipeline.validate import strict_name_problem  # the rules every name follows, a pipeline's own too
from hublab.preflight.files import config_value_problems, lite_index_problem, yaml_file_problem
from hublab.preflight.llm import missing_env_vars
from hublab.preflight.outputs import output_dir_problem, output_file_problem
from hublab.preflight.tracking import bound_tracking_retries, tracking_problem
from hublab.redact import scrub


@dataclass
class Checked:
    """What a passed check produced: the loaded config and the warnings to print."""

    cfg: Any = None
    warnings: list[str] = field(default_factory=list)
    damaged_index: Path | None = None  # ``hublab index``: HubLab's own damaged Lite folder, to rebuild from scratch


def _catch(errors: list[InputError], fn, *args: Any, **kw: Any) -> Any:
    try:
        return fn(*args, **kw)
    except InputError as exc:
        errors.extend(getattr(exc, "errors", [exc]))
    return None


# ---------------- the pass ----------------
def check_names(errors: list[InputError], **names: str | None) -> None:
    """``--experiment``, ``--study``, ``--run-name``: names, not paths, checked as the strings they become."""
    from hublab.pipeline.validate import name_problem

    for opt, value in names.items():
        if value is not None:
            what = f"{opt.replace('_', ' ')} name"
            why = name_problem(value, what) or strict_name_problem(value, what)
            if why:
                errors.append(InputError(why, field=f"--{opt.replace('_', '-')}"))


def check_run(pipeline: Path, graph: str, dataset: str | None, *, settings: Any, experiment: str | None = None,
              output: Path | None = None, report_dir: Path | None = None, stats_out: Path | None = None,
              llm_base_url: str | None = None, tracking: bool = True, strict: bool = False,
              hub_types: list[str] | None = None, rebuild_damaged: bool = False) -> Checked:
    """Everything ``hublab run`` / ``index`` / ``ask`` can refuse without doing any work; raises ``InputErrors``.
    ``strict``: a user's KGQA file whose golden ids are not all in the graph is refused (else a warning).
    ``hub_types`` (``--hub-type``, else the graph's declared ones) set HubLink's ``hub_types`` in the loaded config;
    a hub type without instances in the graph is refused, naming the graph's most frequent types.
    ``rebuild_damaged`` (``hublab index``): a damaged Lite index HubLab keeps is named in ``damaged_index``."""
    from hublab.pipeline.config import load_pipeline

    errors: list[InputError] = []
    # names first: a bad --experiment is reported with every other problem, but no graph is resolved or read for it
    # and it never reaches the artifact folder probe (a 400-character name is a path the file system refuses)
    bad_names: list[InputError] = []
    check_names(bad_names, experiment=experiment)
    names_ok = not bad_names
    out = Checked()
    if llm_base_url:
        from hublab.redact import secret_value_problem

        why = secret_value_problem(llm_base_url)
        if why:
            errors.append(InputError(f"{why} (value not shown)", field="--llm-base-url / $HUBLAB_LLM_BASE_URL"))
    if not errors:
        # a path, a name as `hublab list` prints it (pipelines/<name>.yaml), or an installed method's name
        from hublab.method_pipelines import resolve_pipeline

        pipeline = _catch(errors, resolve_pipeline, settings, pipeline) or pipeline
        bounded = yaml_file_problem(Path(pipeline)) if not errors else None
        if bounded is not None:
            errors.append(bounded)
        elif not errors:
            out.cfg = _catch(errors, load_pipeline, pipeline)
        if out.cfg is not None:
            from hublab.preflight_values import embedder_path_problem, key_value_problems

            errors.extend(config_value_problems(out.cfg))
            errors.extend(key_value_problems(out.cfg))
            if (bad_model := embedder_path_problem(out.cfg)) is not None:
                errors.append(bad_model)
    from hublab.pipeline.resources import graph_source

    source = _catch(errors, graph_source, graph, settings) if names_ok else None
    if source is not None and not source.builtin:
        # a user's file or endpoint is read here, once per process (the run reuses it), with a bar on a terminal:
        # a large file parses for minutes
        from hublab.pipeline.resources import load_graph
        from hublab.progress import want_progress

        source = source if _catch(errors, load_graph, graph, settings, progress=want_progress(None)) else None
    graph_ok = source is not None
    if out.cfg is not None and graph_ok:
        _catch(errors, apply_hub_types, out.cfg, hub_types or [], source, settings)
    if out.cfg is not None and graph_ok and not errors:
        damaged = lite_index_problem(out.cfg, graph, pipeline, settings, rebuild=rebuild_damaged)
        if isinstance(damaged, Path):
            out.damaged_index = damaged
        elif damaged is not None:
            errors.append(damaged)
    pairs = _check_dataset(errors, out, dataset, graph, settings, strict, graph_ok) if dataset is not None else None
    errors.extend(bad_names)
    errors.extend(_output_path_problems(output=output, stats_out=stats_out, report_dir=report_dir))
    if tracking and names_ok:
        bound_tracking_retries()
        why = tracking_problem(settings.root, experiment)
        if why:
            errors.append(InputError(why, field="MLFLOW_TRACKING_URI"))
    raise_all(errors)
    if out.cfg is not None:
        out.warnings.extend(missing_env_vars(out.cfg))
        if pairs:
            out.warnings.extend(blank_answer_warning(out.cfg, pairs, dataset))
    return out


def _check_dataset(errors: list[InputError], out: Checked, dataset: str, graph: str, settings: Any, strict: bool,
                   graph_ok: bool) -> list | None:
    """The dataset's part of :func:`check_run`: its file name, its rows' text, a uid used twice (a warning), and,
    where the graph could be read, its golden ids (:func:`golden_id_check`). Problems go to ``errors``, warnings to
    ``out``; returns the loaded rows (None if they could not be loaded)."""
    from hublab.datasets.catalog import duplicate_uids, is_dataset_file, load_dataset
    from hublab.preflight_values import dataset_name_problem, dataset_text_problems

    named = dataset_name_problem(dataset) if is_dataset_file(dataset) else None
    if named is not None:
        errors.append(named)
    pairs = _catch(errors, load_dataset, settings, dataset)
    if pairs:
        errors.extend(dataset_text_problems(pairs, dataset))
    if pairs and is_dataset_file(dataset):  # a built-in set's quirks are said once, by `hublab data datasets`
        for uid, rows in duplicate_uids(pairs).items():
            out.warnings.append(f"dataset {dataset}: uid {uid!r} appears in rows {rows}; each row is run and "
                                "scored as its own question")
    if pairs and graph_ok:
        _catch(errors, golden_id_check, out, pairs, dataset, graph, settings, strict)
    return pairs


def _output_path_problems(*, output: Path | None, stats_out: Path | None, report_dir: Path | None
                          ) -> list[InputError]:
    """``--output`` and ``--stats`` must be writable files, ``--report-dir`` a writable folder (each one given)."""
    errors: list[InputError] = []
    for opt, path, probe in (("--output", output, output_file_problem), ("--stats", stats_out, output_file_problem),
                             ("--report-dir", report_dir, output_dir_problem)):
        if path is not None:
            why = probe(path)
            if why:
                errors.append(InputError(why, file=str(path), field=opt))
    return errors


def hub_types_for(retriever_type: str, given: list[str], source: Any) -> list[str] | None:
    """The rule every door shares (``pipeline/hub_types.py``), re-exported for the CLI."""
    from hublab.pipeline.hub_types import hub_types_for as rule

    return rule(retriever_type, given, source)


def apply_hub_types(cfg: Any, given: list[str], source: Any, settings: Any) -> None:
    """Set the retriever's ``hub_types`` from ``--hub-type`` (or the graph's declared hub types), then check that
    each hub type it will use has instances in the graph (loaded here: the run loads it next anyway)."""
    from hublab.pipeline.hub_types import apply_hub_types as apply
    from hublab.pipeline.hub_types import refuse_empty_hub_types
    from hublab.pipeline.resources import load_graph

    if apply(cfg, given, source) is None:
        return
    if source.builtin and not Path(source.location).exists():
        return  # not built yet: the runner says so
    refuse_empty_hub_types(cfg, load_graph(source.arg, settings), source.shown,
                           given=bool(given) or not source.builtin)


def golden_id_check(out: Checked, pairs: list, dataset: str, graph: str, settings: Any, strict: bool) -> None:
    """A user's KGQA file (a built-in set is remapped to its graph when built): golden ids written for another graph
    are refused (``check_golden_ids``); rows naming ids the graph lacks are a warning with the count and the rows,
    or, with ``strict``, refused (each such triple can never be retrieved: a silent 0 on it otherwise)."""
    from hublab.datasets.catalog import (
        check_golden_ids,
        is_dataset_file,
        resolve_statements,
        rows_with_missing_golden_ids,
    )
    from hublab.pipeline.resources import graph_source, load_graph

    src = graph_source(graph, settings)
    if not is_dataset_file(dataset) or (src.builtin and not Path(src.location).exists()):
        return  # a graph not built yet is the runner's one line ("run `dvc repro`"), not this check's
    kg = load_graph(graph, settings)
    pairs, lacking = resolve_statements(pairs, kg)
    check_golden_ids(pairs, kg, dataset=dataset, graph_name=graph)
    missing = rows_with_missing_golden_ids(pairs, kg)
    for row, statements in lacking.items():
        missing.setdefault(row, []).extend(statements)
    if not missing:
        return
    shown = "; ".join(f"row {r}: {', '.join(ids[:3])}{' …' if len(ids) > 3 else ''}"
                      for r, ids in list(missing.items())[:5])
    more = f"; and {len(missing) - 5} more rows" if len(missing) > 5 else ""
    what = (f"{len(missing)} of {len(pairs)} questions name golden triple ids (or statements) that are not in graph "
            f"{graph!r} ({shown}{more}): those triples can never be retrieved")
    if strict:
        raise InputError(f"{what} (--strict)", file=dataset, row=next(iter(missing)), field="golden_triples")
    out.warnings.append(f"dataset {dataset}: {what}, so these rows score as if unanswerable on them (--strict "
                        "refuses such a file)")


#: generation metrics scored against the dataset's golden answer
GOLDEN_ANSWER_METRICS = ("bleu", "rouge", "bertscore", "semantic_similarity", "non_llm_string_similarity",
                         "factual_correctness", "instruction_following")


def blank_answer_warning(cfg: Any, pairs: list, dataset: str | None) -> list[str]:
    """A minimal KGQA file has no ``golden_answer``: answer metrics would score against an empty string. Said once,
    before the run, naming the metrics and how many questions (never a silent 0)."""
    metrics = [m for m in cfg.evaluation.get("generation_metrics") or [] if m in GOLDEN_ANSWER_METRICS]
    blank = [p.uid for p in pairs if not (p.golden_answer or "").strip()]
    if not (metrics and blank and cfg.generation.get("enabled")):
        return []
    return [f"dataset {dataset}: {len(blank)} of {len(pairs)} questions have no golden_answer (first: {blank[0]!r}); "
            f"{', '.join(metrics)} score their generated answer against an empty string"]


def print_warnings(warnings: list[str]) -> None:
    for w in warnings:
        print(f"warning: {scrub(w)}", file=sys.stderr)
