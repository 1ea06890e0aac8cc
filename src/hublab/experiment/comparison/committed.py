"""The committed comparison in MLflow. A quick-started checkout has the comparison of every LLM-free
method in git (``reports/summary/methods.csv``, written by ``dvc repro compare``, about an hour on a fresh machine)
but not in its MLflow store, where researchers look. ``hublab report publish`` logs those rows as the comparison
run, marked "from the committed reports", when the store has no comparison yet; ``dvc repro compare`` recomputes
it, and the same parent run then says it was computed."""

from __future__ import annotations

import csv
from pathlib import Path
from typing import TYPE_CHECKING

from hublab.config import Settings
from hublab.errors import InputError
from hublab.experiment.comparison.default_vs_tuned import (
    BOUND,
    CI_METRICS,
    DIFF,
    EXPERIMENT,
    METRICS,
    Row,
    log_mlflow,
)
from hublab.tracking.comparison_runs import find_comparison

if TYPE_CHECKING:
    from hublab.tracking.comparison_runs import Logged

SOURCE = "from the committed reports (reports/summary/methods.csv)"
#: the committed files the parent run carries (the table, its markdown and the chart)
FILES = ("methods.csv", "methods.md", "methods.tex", "methods.png", "methods.pdf")


def _number(value: str) -> float | None:
    return None if value in ("", "None") else float(value)


def rows_from_csv(path: Path) -> list[Row]:
    """The comparison's rows as ``default_vs_tuned.csv_rows`` wrote them. The evaluation runs behind them are in
    the store of the machine that computed them, so no row links to one here."""
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            records = list(csv.DictReader(fh))
    except OSError as exc:
        raise InputError(f"cannot read the committed comparison ({exc.strerror or exc}): run `dvc repro compare`",
                         file=str(path)) from None
    rows = []
    for i, d in enumerate(records, start=1):
        try:
            rows.append(Row(
                method=d["method"], graph=d["graph"], subset=d["subset"], config=d["config"], pipeline=d["pipeline"],
                n_questions=int(d["n_questions"]),
                metrics={m: v for m in METRICS if (v := _number(d.get(m, ""))) is not None},
                ci={m: (float(d[f"{m}_ci_low"]), float(d[f"{m}_ci_high"])) for m in CI_METRICS},
                p_value=_number(d["p_value_vs_best"]), p_vs_default=_number(d["p_value_tuned_vs_default"]),
                p_holm=_number(d["p_value_vs_best_holm"]),
                p_vs_default_holm=_number(d["p_value_tuned_vs_default_holm"]), diff=_number(d[DIFF]),
                diff_ci=None if d[f"{DIFF}_ci_low"] == "" else (float(d[f"{DIFF}_ci_low"]),
                                                                 float(d[f"{DIFF}_ci_high"])),
                best=d["best"] == "True", thesis_map=_number(d["thesis_map_at_10_triples"]), study=d["study"],
                changed=d["changed_params"], status=d.get("status") or ""))
        except (KeyError, ValueError) as exc:
            raise InputError(f"not a row of the comparison table ({type(exc).__name__}: {exc})", file=str(path),
                             row=i) from None
    if not rows:
        raise InputError("the committed comparison has no rows: run `dvc repro compare`", file=str(path))
    return rows


def publish_committed(st: Settings, *, experiment: str = EXPERIMENT) -> Logged | None:
    """Log the committed comparison to the project's MLflow store unless a comparison is there already (computed
    here, or published before); returns what was logged, or None."""
    if find_comparison(st.root, experiment, f"fair-bound{BOUND}") is not None:
        return None
    folder = st.root / "reports" / "summary"
    rows = rows_from_csv(folder / FILES[0])
    files = [folder / f for f in FILES if (folder / f).is_file()]
    return log_mlflow(st.root, rows, files, bound=BOUND, experiment=experiment, source=SOURCE)
