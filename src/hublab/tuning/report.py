"""Study outputs: the thesis-shaped OFAT table (CSV + Markdown), Pareto front, Optuna plots on MLflow."""

from __future__ import annotations

import json
from pathlib import Path

from hublab.atomic import atomic_path, write_text_atomic
from hublab.evaluation import names
from hublab.experiment.dvc_report import machine_dependent
from hublab.reports.tables import Column, markdown_table, write_csv
from hublab.tuning.study import StudyResult


def _fmt(v: float | None, pct: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v:+.1f}%" if pct else f"{v:.3f}"


#: the thesis's OFAT table: one row per factor value (the base value starred), the chosen one ticked
OFAT_COLUMNS = (
    Column("Parameter", lambda r: str(r.factor)),
    Column("Value", lambda r: json.dumps(r.value) + (" ★" if r.is_base else "")),
    Column("Recall", lambda r: _fmt(r.recall)),
    Column("Hits@10", lambda r: _fmt(r.hits)),
    Column("ΔRecall", lambda r: _fmt(r.delta_recall_pct, True)),
    Column("ΔHits@10", lambda r: _fmt(r.delta_hits_pct, True)),
    Column("chosen", lambda r: "✔" if r.chosen else ""),
)


def ofat_markdown(res: StudyResult) -> str:
    lines = [markdown_table(OFAT_COLUMNS, res.table)]
    if res.skipped_factors:
        lines.append("")
        lines.extend(f"- not run: {name} ({why})" for name, why in res.skipped_factors)
    return "\n".join(lines)


def _value_cell(value: object) -> object:
    """A factor's value in the CSV: a number as itself (-1 stays a number, not a neutralised text cell), anything
    else as its JSON (``true``, ``"bm25"``)."""
    return value if isinstance(value, int | float) and not isinstance(value, bool) else json.dumps(value)


def _write(path: Path, text: str) -> Path:
    """Written whole (``atomic``): workers of one study finishing together never interleave."""
    write_text_atomic(path, text)
    return path


#: significant digits of a sampled float in ``trials.json``: TPE's samples differ between runs in the last bit or two
#: (its density sums in another order), which made the committed file differ while every choice was the same
SAMPLED_DIGITS = 12


def _stable_params(params: dict) -> dict:
    """``params`` with every float to ``SAMPLED_DIGITS`` significant digits (the metrics are left as they are)."""
    return {k: float(f"{v:.{SAMPLED_DIGITS}g}") if isinstance(v, float) else v for k, v in params.items()}


def split_trials(trials: list[dict]) -> tuple[list[dict], dict[str, dict[str, float]]]:
    """The trials without what they measured of the machine (seconds, energy, emissions), and those figures by
    trial number: ``trials.json`` is committed and must be the same on every machine that runs the same trials,
    ``timings.json`` is git- and DVC-ignored (MLflow's trial runs and Optuna's trial durations hold them too)."""
    kept: list[dict] = []
    timings: dict[str, dict[str, float]] = {}
    for t in trials:
        metrics = t.get("metrics") or {}
        row = {**t, "metrics": {k: v for k, v in metrics.items() if not machine_dependent(k)}} if "metrics" in t \
            else dict(t)
        if isinstance(row.get("params"), dict):
            row["params"] = _stable_params(row["params"])
        kept.append(row)
        measured = {k: v for k, v in metrics.items() if machine_dependent(k)}
        if measured:
            timings[str(t["number"])] = measured
    return kept, timings


def write_outputs(res: StudyResult, out_dir: Path, *, plots: bool = True) -> list[Path]:
    """The study's tables and trials under ``out_dir``, and with ``plots`` its parallel-coordinate and importance
    charts (~2 s a study: off where a caller runs dozens of small studies and charts their outcome itself)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths: list[Path] = []
    if res.table:
        fields = ["parameter", "value", "is_base", names.RECALL, names.HITS_AT_10, f"delta_{names.RECALL}_pct",
                  f"delta_{names.HITS_AT_10}_pct", "chosen"]
        rows = [dict(zip(fields, [r.factor, _value_cell(r.value), r.is_base, r.recall, r.hits, r.delta_recall_pct,
                                  r.delta_hits_pct, r.chosen], strict=True)) for r in res.table]
        paths.append(write_csv(rows, out_dir / "ofat_table.csv", fields))  # the one CSV writer and its escaping
        paths.append(_write(out_dir / "ofat_table.md", ofat_markdown(res) + "\n"))
        paths.append(_write(out_dir / "chosen.json", json.dumps(res.chosen, indent=1)))
        if res.pending:
            paths.append(_write(out_dir / "pending.json", json.dumps(res.pending, indent=1)))
        else:
            (out_dir / "pending.json").unlink(missing_ok=True)
    if res.pareto:
        front = split_trials(res.pareto)[0]  # its trials' timings are in timings.json
        paths.append(_write(out_dir / "pareto_front.json", json.dumps(front, indent=1, default=str)))
    trials, timings = split_trials(res.trials)
    paths.append(_write(out_dir / "trials.json", json.dumps(trials, indent=1, default=str)))
    paths.append(_write(out_dir / "timings.json", json.dumps(timings, indent=1, default=str)))
    if plots:
        paths.extend(_plots(res, out_dir))
    return paths


def _plots(res: StudyResult, out_dir: Path) -> list[Path]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import optuna
    from optuna.visualization import matplotlib as ovm

    complete = res.study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
    out: list[Path] = []
    plots = []
    if len(complete) >= 2:
        target = (lambda t: t.values[0]) if res.spec.mode == "nsga2" else None
        plots.append(("parallel_coordinate.png",
                      lambda: ovm.plot_parallel_coordinate(res.study, target=target,
                                                           target_name=res.spec.objectives[0])))
        # the parameters in a fixed order: given as a set, tied importances were drawn in the process's string-hash
        # order, so the committed chart changed on every rerun
        names = sorted({name for t in complete for name in t.params})
        plots.append(("param_importances.png",
                      lambda: ovm.plot_param_importances(res.study, params=names, target=target,
                                                         target_name=res.spec.objectives[0])))
    if res.spec.mode == "nsga2" and complete and len(res.spec.objectives) in (2, 3):
        plots.append(("pareto_front.png", lambda: ovm.plot_pareto_front(res.study, target_names=res.spec.objectives)))
    for name, make in plots:
        try:
            # Optuna's plots set a style (ggplot) for the whole process: kept to the one chart, so a chart drawn
            # after another study's in the same process (a comparison's job process) is drawn as a fresh one
            with matplotlib.rc_context():
                ax = make()
                fig = ax.figure if hasattr(ax, "figure") else plt.gcf()
                fig.set_size_inches(9, 5)
                fig.tight_layout()
                with atomic_path(out_dir / name) as tmp:
                    fig.savefig(tmp, dpi=100, format="png")
            plt.close("all")
            out.append(out_dir / name)
        except Exception as exc:  # e.g. importance needs variance across trials
            _write(out_dir / f"{name}.skipped.txt", f"{type(exc).__name__}: {exc}\n")
            plt.close("all")
    return out
