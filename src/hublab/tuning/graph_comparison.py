"""The fair comparison on any graph (``hublab compare``): which method wins on a user's graph, with which
settings, and how sure that is.

The questions are split first (:mod:`hublab.datasets.split`: k-fold cross-validation below 100 questions, one
seeded split above, or a fixed selection set), and the split is written before any work (``split.json``). In each
fold every LLM-free method is tuned with the same budget on the selection questions only (:func:`tune_many`: the
same TPE studies, pruning and index reuse as the thesis comparison, here over ``search_space`` and
``shape_space``), then its default and its tuned configuration are scored on that fold's report questions at the
output bound. The report questions of all folds are pooled (each question scored by a configuration tuned without
it), and the rows get the thesis comparison's statistics, tables, chart and MLflow view
(:mod:`hublab.experiment.comparison.default_vs_tuned`): one code path for both.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hublab.config import Settings
from hublab.datasets.split import Split, fixed_split, make_split, subset, write_split
from hublab.errors import InputError
from hublab.experiment.comparison import default_vs_tuned as dvt
from hublab.experiment.comparison.display import display_name
from hublab.experiment.comparison.statistics import add_statistics
from hublab.reports import tables
from hublab.tuning.fair import DEFAULT_BOUND, DEFAULT_SEED, MethodOutcome, TuneAllRequest, tune_many

#: trials per method and fold unless told otherwise (a user's graph: smaller than the thesis's 40, per fold)
DEFAULT_TRIALS = 20
POOLED = "pooled"


@dataclass
class CompareRequest:
    """One comparison: the graph (a built-in name, an RDF file or a SPARQL endpoint URL) and its questions (a
    built-in dataset or a .csv/.jsonl file), the budget and where the outputs go."""

    graph: str
    dataset: str
    out_dir: Path | None = None  # default reports/compare/<graph's source name>
    pipelines: list[Path] | None = None  # default: every LLM-free method's default pipeline
    hub_types: list[str] = field(default_factory=list)
    n_trials: int = DEFAULT_TRIALS
    seed: int = DEFAULT_SEED
    folds: int | None = None  # None: 5-fold below 100 questions, one split above
    stratify: str | None = None  # a question-type column (default: the first the dataset fills)
    selection: str | None = None  # a dataset whose questions are the fixed selection set
    bound: int = DEFAULT_BOUND
    storage: str | None = None
    experiment: str | None = None  # default compare-<graph's source name>
    jobs: int = 1
    pruner: str = "wilcoxon"
    fresh: bool = False
    shape_space: bool = True
    log: bool = True  # log the comparison to MLflow


@dataclass
class CompareOutcome:
    split: Split
    rows: list[dvt.Row]
    files: dict[str, Any]
    experiment: str
    mlflow_parent: str
    studies: list[list[MethodOutcome]]
    failed: list[str] = field(default_factory=list)  # runs that failed or stopped early, named


def _say_nothing(_line: str) -> None:
    return None


def compare_graph(req: CompareRequest, *, settings: Settings | None = None,
                  say: Callable[[str], None] = _say_nothing) -> CompareOutcome:
    """Split, tune every method per fold on the selection questions, score on the report questions, write
    ``split.json``, ``methods.{csv,md,tex}`` and ``methods.{png,svg,pdf}`` and log the comparison to MLflow.

    Args:
        req: what to compare and how.
        settings: the project (default: the current one).
        say: receives one line per step (the expected cost first, then each study and each scored run).

    Returns:
        The split, the rows with their statistics, the files written and the MLflow comparison run.

    Raises:
        InputError: a graph, dataset, pipeline, output folder or budget that cannot be used (before any work).
    """
    from hublab.config import settings as load_settings
    from hublab.datasets.catalog import load_dataset
    from hublab.pipeline.resources import graph_source
    from hublab.retrievers.registry import default_pipelines
    from hublab.tuning.fair import plan_methods

    st = settings or load_settings()
    source = graph_source(req.graph, st)
    out = Path(req.out_dir) if req.out_dir is not None else st.root / "reports" / "compare" / source.name
    _check_out(out)
    pairs = load_dataset(st, req.dataset)
    split = (fixed_split(pairs, load_dataset(st, req.selection)) if req.selection
             else make_split(pairs, seed=req.seed, folds=req.folds, stratify=req.stratify))
    pipelines = list(req.pipelines or default_pipelines(st.root))
    plans = plan_methods(pipelines, n_trials=req.n_trials, bound=req.bound, shape=req.shape_space)
    experiment = req.experiment or f"compare-{source.name}"
    write_split(split, out / "split.json")
    files = _fold_files(pairs, split, out)
    n_select = sum(len(f.select) for f in split.folds)
    n_report = sum(len(f.report) for f in split.folds)
    say(f"{split.describe()} Expected work: {len(plans)} methods x {len(split.folds)} fold(s) x {req.n_trials} "
        f"trials on {n_select // len(split.folds)} selection questions (about {len(plans) * req.n_trials * n_select:,} "
        f"answers, fewer where a trial is pruned), then {2 * len(plans)} configurations on {n_report} report "
        f"answers each; indices are built once per configuration that changes them.")
    studies = _tune_folds(req, st, pipelines, files, out, say)
    rows, failed = _score(req, st, pipelines, files, studies, split, source.name, experiment, say)
    titles = _titles(source.name, split)
    written = write_outputs(rows, out, bound=req.bound, caption_text=caption(split, req, source.name, failed),
                            titles=titles, suptitle=_suptitle(split, req))
    parent = ""
    if req.log:
        figures = written["figures"]
        logged = dvt.log_mlflow(st.root, rows, [written["csv"], written["md"], written["tex"], *figures],
                                bound=req.bound, experiment=experiment, source=dvt.COMPUTED)
        parent = logged.parent
    return CompareOutcome(split, rows, written, experiment, parent, studies, failed)


def _check_out(out: Path) -> None:
    """The output folder is usable before any work (the rule every report's ``--out`` follows), then made."""
    from hublab.preflight import output_dir_problem

    why = output_dir_problem(out)
    if why:
        raise InputError(why, file=str(out), field="--out")
    out.mkdir(parents=True, exist_ok=True)


@dataclass(frozen=True)
class _FoldFiles:
    index: int  # 1-based
    select: Path
    report: Path
    uids: list[str]  # the report uids


def _fold_files(pairs: list[Any], split: Split, out: Path) -> list[_FoldFiles]:
    """Each fold's selection and report questions as JSONL files (the studies and runs name them: a study's name
    carries its file's content hash, so another split is another study, never a resumed one)."""
    from hublab.datasets.model import write_jsonl

    made = []
    for i, fold in enumerate(split.folds, start=1):
        folder = out / "folds" / str(i)
        folder.mkdir(parents=True, exist_ok=True)
        select, report = folder / "select.jsonl", folder / "report.jsonl"
        write_jsonl(subset(pairs, fold.select), select)
        write_jsonl(subset(pairs, fold.report), report)
        made.append(_FoldFiles(i, select, report, list(fold.report)))
    return made


def _tune_folds(req: CompareRequest, st: Settings, pipelines: list[Path], files: list[_FoldFiles], out: Path,
                say: Callable[[str], None]) -> list[list[MethodOutcome]]:
    """Every method's study on every fold's selection questions, all folds' studies in one pool of ``req.jobs``."""
    t0 = time.perf_counter()
    done = 0
    total = len(pipelines) * len(files)

    def said(i: int, o: MethodOutcome) -> None:
        nonlocal done
        done += 1
        elapsed = time.perf_counter() - t0
        left = elapsed / done * (total - done)
        best = "-" if o.best_value is None else f"{o.best_value:.4f}"
        default = "-" if o.default_value is None else f"{o.default_value:.4f}"
        say(f"fold {files[i].index}/{len(files)} · {o.plan.method}: {o.trials} trials finished, {o.pruned} pruned; "
            f"MAP@10 on the selection questions default {default}, best {best}; {o.wall_s:.0f} s "
            f"[{done}/{total} studies, {elapsed / 60:.1f} min, about {left / 60:.1f} min of tuning left]")

    return tune_many([TuneAllRequest(
        pipelines, n_trials=req.n_trials, seed=req.seed, dataset=str(f.select), bound=req.bound,
        out_dir=out / "folds" / str(f.index) / "tuned", storage=req.storage, fresh=req.fresh, progress=False,
        reports_dir=out / "folds" / str(f.index) / "studies", graph=req.graph, hub_types=list(req.hub_types),
        jobs=req.jobs, pruner=req.pruner, shape_space=req.shape_space, study_plots=False) for f in files],
        settings=st, on_method=said)


def _score(req: CompareRequest, st: Settings, pipelines: list[Path], files: list[_FoldFiles],
           studies: list[list[MethodOutcome]], split: Split, graph_name: str, experiment: str,
           say: Callable[[str], None]) -> tuple[list[dvt.Row], list[str]]:
    """Every method's default and tuned configuration on each fold's report questions; the rows pooled over the
    folds (and per fold when there are several), with the thesis comparison's statistics."""
    from hublab.evaluation.names import MAP_AT_10
    from hublab.experiment.request import RunRequest
    from hublab.experiment.runner import run_experiment
    from hublab.pipeline.config import load_pipeline
    from hublab.pipeline.hub_types import apply_hub_types, has_hub_types
    from hublab.pipeline.resources import graph_source

    source = graph_source(req.graph, st)
    pooled: dict[tuple[str, str], list[dict[str, Any]]] = {}
    per_fold: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    meta: dict[tuple[str, str], dict[str, str]] = {}
    failed: list[str] = []
    run_failed: dict[tuple[str, str], str] = {}  # (method, config) -> why one of its runs failed
    for f, outcomes in zip(files, studies, strict=True):
        for path, outcome in zip(pipelines, outcomes, strict=True):
            default = load_pipeline(path)
            both = {"default": copy.deepcopy(default), "tuned": load_pipeline(outcome.tuned_file)}
            # --hub-type is HubLink's: a method without hub types runs as it is (tune_all decides alike)
            given = tuple(req.hub_types) if has_hub_types(default.retriever_type) else ()
            for cfg in both.values():
                apply_hub_types(cfg, list(given), source)
                cfg.retriever_params["max_output_triples"] = int(req.bound)
            changed = dvt.changed_params(both["default"], both["tuned"])
            for config, cfg in both.items():
                t0 = time.perf_counter()
                s = run_experiment(RunRequest(cfg, req.graph, str(f.report), st, experiment=experiment,
                                              run_name=f"{cfg.name}·fold{f.index}", track_carbon=False,
                                              progress=False, trace=False, hub_types=given,
                                              artifact_plots=False))
                key = (default.retriever_type, config)
                records = sorted(s.per_question, key=lambda r: str(r["uid"]))
                if s.failed or s.stopped or not s.full or not records:
                    why = s.failure_reason or ("stopped" if s.stopped else s.scope)
                    failed.append(f"{default.retriever_type} ({config}, fold {f.index}): {why}")
                    run_failed[key] = why
                pooled.setdefault(key, []).extend(records)
                per_fold[(*key, f.index)] = records
                meta[key] = {"pipeline": _shown(st, outcome.tuned_file if config == "tuned" else path),
                             "study": outcome.study if config == "tuned" else "",
                             "changed": changed if config == "tuned" else ""}
                say(f"fold {f.index}/{len(files)} · {default.retriever_type} ({config}) on {len(records)} report "
                    f"questions: MAP@10 {s.metrics.get(MAP_AT_10, 0.0):.4f} ({time.perf_counter() - t0:.1f} s)")
    rows: list[dvt.Row] = []
    for (method, config), records in pooled.items():
        records = sorted(records, key=lambda r: str(r["uid"]))
        rows.append(_row(method, config, graph_name, POOLED, records, meta[(method, config)],
                         run_failed.get((method, config))))
    if len(files) > 1:
        for (method, config, i), records in per_fold.items():
            rows.append(_row(method, config, graph_name, f"fold{i}", records, meta[(method, config)],
                             run_failed.get((method, config))))
    add_statistics(rows)
    return rows, failed


def _shown(st: Settings, path: Path) -> str:
    try:
        return Path(path).resolve().relative_to(Path(st.root).resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _row(method: str, config: str, graph: str, subset_name: str, records: list[dict[str, Any]],
         meta: dict[str, str], failure: str | None = None) -> dvt.Row:
    import numpy as np

    from hublab.evaluation import names

    per_q = {m: [float(r["metrics"].get(m) or 0.0) for r in records] for m in dvt.METRICS
             if m != names.TRIPLES_PER_QUESTION}
    means = {m: float(np.mean(v)) if v else float("nan") for m, v in per_q.items()}
    means[names.TRIPLES_PER_QUESTION] = (float(np.mean([len(r.get("retrieved_context") or []) for r in records]))
                                         if records else float("nan"))
    status = tables.run_status(len(records), sum(bool(r.get("error")) for r in records), failed=failure is not None,
                               reason=failure or "")
    return dvt.Row(method, graph, subset_name, config, meta["pipeline"], len(records), means,
                   {m: per_q[m] for m in dvt.CI_METRICS}, study=meta["study"], changed=meta["changed"],
                   status=status)


def _titles(graph: str, split: Split) -> dict[tuple[str, str], str]:
    titles = {(graph, POOLED): f"{graph}, every report question"
              + (f" (pooled over {len(split.folds)} folds)" if len(split.folds) > 1 else "")}
    for i, _fold in enumerate(split.folds, start=1):
        titles[(graph, f"fold{i}")] = f"{graph}, fold {i} of {len(split.folds)}"
    return titles


def caption(split: Split, req: CompareRequest, graph: str, failed: list[str]) -> str:
    """What the tables show, in words: the split and how many questions each number rests on, the budget, the
    statistics; failed or partial runs named first."""
    from hublab.evaluation.significance import ALPHA, CORRECTION, TEST_NAME

    warn = ""
    if failed:
        warn = f"**{len(failed)} run(s) failed or stopped early; their rows rest on fewer answers:** " + "; ".join(
            failed) + ". "
    space = "search_space and shape_space" if req.shape_space else "search_space"
    return (f"{warn}Every LLM-free method on `{graph}` at most {req.bound} triples per question, with its default "
            f"parameters and with the parameters a TPE study chose on the selection questions only ({req.n_trials} "
            f"trials per method and fold, seed {req.seed}, over each pipeline's {space}). Split: {split.describe()} "
            f"[a, b]: 95% bootstrap interval over questions (10,000 resamples, seed 0). Δ MAP@10 vs best: the row's "
            f"MAP@10 minus the best row's, with the 95% paired bootstrap interval. p vs best: {TEST_NAME} against "
            f"the best row; p tuned vs default: the same test against the method's default row; both with "
            f"{CORRECTION} (each family apart). **best** = highest MAP@10; ≈ = not significantly different at "
            f"{ALPHA} after the correction.")


def _suptitle(split: Split, req: CompareRequest) -> str:
    how = f"{len(split.folds)}-fold cross-validation" if split.strategy == "k-fold" else f"{split.strategy} split"
    return (f"Every LLM-free method, default and tuned ({req.n_trials} TPE trials on the selection questions, "
            f"{how}); bars: 95% bootstrap interval; ≈: not significantly below the best (Holm)")


def csv_rows(rows: list[dvt.Row]) -> list[dict[str, Any]]:
    """The thesis comparison's CSV rows with the column names a script reads first (``variant``,
    ``map_at_10_low`` …) in front."""
    from hublab.evaluation.names import HITS_AT_10, MAP_AT_10

    out = []
    for d in dvt.csv_rows(rows):
        first = {"method": d["method"], "variant": d["config"], "subset": d["subset"],
                 "n_questions": d["n_questions"], "map_at_10": d[MAP_AT_10],
                 "map_at_10_low": d[f"{MAP_AT_10}_ci_low"], "map_at_10_high": d[f"{MAP_AT_10}_ci_high"],
                 "hits_at_10": d[HITS_AT_10], "hits_at_10_low": d[f"{HITS_AT_10}_ci_low"],
                 "hits_at_10_high": d[f"{HITS_AT_10}_ci_high"]}
        out.append({**first, **{k: v for k, v in d.items() if k not in first}})
    return out


def chosen_settings(rows: list[dvt.Row]) -> str:
    """Markdown: what tuning changed, per method and fold (the settings that win on this graph)."""
    tuned = [r for r in rows if r.config == "tuned" and (r.subset.startswith("fold") or r.subset == POOLED)]
    per_fold = [r for r in tuned if r.subset.startswith("fold")] or tuned
    if not per_fold:
        return ""
    table = tables.markdown_table(
        [tables.Column("method", lambda r: display_name(r.method)),
         tables.Column("fold", lambda r: r.subset.removeprefix("fold") if r.subset != POOLED else "all"),
         tables.Column("tuned settings (what differs from the default)", lambda r: r.changed or "(default kept)")],
        sorted(per_fold, key=lambda r: (r.method, r.subset)))
    return "\n### Chosen settings\n\n" + table + "\n"


def write_outputs(rows: list[dvt.Row], out: Path, *, bound: int, caption_text: str,
                  titles: dict[tuple[str, str], str], suptitle: str) -> dict[str, Any]:
    """``methods.csv``, ``methods.md``, ``methods.tex`` and the chart of the pooled rows (PNG, SVG, PDF)."""
    from hublab.atomic import write_text_atomic

    text = dvt.markdown(rows, bound=bound, caption_text=caption_text, titles=titles) + chosen_settings(rows)
    csv_path, md = tables.write_report(out, "methods", text, csv_rows(rows))
    tex = out / "methods.tex"
    write_text_atomic(tex, dvt.latex(rows, bound=bound, caption_text=caption_text, titles=titles,
                                     note="written by hublab compare; every value is in methods.csv"))
    pooled = [r for r in rows if r.subset == POOLED]
    figures = dvt.chart(pooled, out, bound=bound, titles=titles, suptitle=suptitle)
    return {"csv": csv_path, "md": md, "tex": tex, "figures": figures}
