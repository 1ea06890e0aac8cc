"""The one table writer of every report: a Markdown or LaTeX table from rows and column specs, and a CSV from row
dicts (each written atomically, ``hublab.atomic``: a reader never sees half a table).

One cell-escaping rule for all of them, because cells hold names a user chose (pipelines, methods, plugins, graphs,
questions): a CSV text cell that a spreadsheet would run as a formula is neutralised (:func:`csv_cell`), a Markdown
cell cannot open HTML, split its row or end its line (:func:`md_cell`), a LaTeX cell cannot run a command
(:func:`latex_text`). A comparison row of a run that did not answer every question is marked (:func:`run_status`),
never a silent row of zeros."""

from __future__ import annotations

import csv
import html
import io
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic

MISSING = "–"


@dataclass(frozen=True)
class Column:
    """One Markdown column: its heading and the text of its cell for a row."""

    heading: str
    cell: Callable[[Any], str]


def three_places(v: Any) -> str:
    """A metric cell: 3 decimals (scientific below 0.001, e.g. kgCO2e); ``–`` for a missing value."""
    if v is None or v == "":
        return MISSING
    if isinstance(v, float):
        return f"{v:.2e}" if 0 < abs(v) < 1e-3 else f"{v:.3f}"
    return str(v)


def by_size(v: Any) -> str:
    """A metric or count cell: whole numbers as integers, other values of 1 or more with 1 decimal, smaller ones
    with 3; ``–`` for a missing value."""
    if v is None:
        return MISSING
    if isinstance(v, float):
        return str(int(v)) if v.is_integer() and v >= 1 else (f"{v:.1f}" if v >= 1 else f"{v:.3f}")
    return str(v)


def field(key: str, heading: str | None = None, fmt: Callable[[Any], str] = three_places) -> Column:
    """The column of a row dict's ``key`` (headed by the key itself unless a heading is given)."""
    return Column(heading if heading is not None else key, lambda row: fmt(row.get(key)))


#: A text cell starting with one of these is a formula to a spreadsheet (``=HYPERLINK(…)`` in a name or a question
#: would run when the CSV is opened): such cells get a leading apostrophe, which spreadsheets display as text and do
#: not show (OWASP's advice for CSV injection). Numbers are left alone (-0.5 is written as a number).
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")

_LINE_BREAKS = str.maketrans({"\r": " ", "\n": " ", "\v": " ", "\f": " ", "\x85": " ", "\u2028": " ",
                              "\u2029": " "})


def csv_cell(v: Any) -> Any:
    """``v`` as it may go into a CSV that a spreadsheet opens (see :data:`FORMULA_LEADS`)."""
    return "'" + v if isinstance(v, str) and v.startswith(FORMULA_LEADS) else v


def md_cell(text: Any) -> str:
    """``text`` as one Markdown table cell: HTML escaped (``<script>`` is shown, never run or hidden), ``|`` escaped
    (no extra column) and line breaks as spaces (no broken row). Markdown emphasis (``**best**``) is kept."""
    out = html.escape(str(text), quote=False).replace("|", "\\|")
    return out.translate(_LINE_BREAKS)


def md_text(text: Any) -> str:
    """A line of Markdown outside a table (a heading, a note naming a graph): the same rule as :func:`md_cell`."""
    return md_cell(text)


def md_code(text: Any) -> str:
    """``text`` as inline code (HTML in it is shown as written; a backtick in it cannot end the span early)."""
    return "`" + str(text).replace("`", "'").translate(_LINE_BREAKS) + "`"


def markdown_table(columns: Sequence[Column], rows: Iterable[Any]) -> str:
    """The heading line, the separator and one line per row (no trailing newline), every cell :func:`md_cell`."""
    lines = ["| " + " | ".join(md_cell(c.heading) for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(md_cell(c.cell(r)) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


#: the column of a comparison row's run state (present only when a run did not answer every question, so a clean
#: comparison's files stay as they were)
STATUS = "status"


def run_status(n_questions: int, n_failed: int, *, failed: bool = False, reason: str = "") -> str:
    """``""`` for a run that answered every question; ``FAILED: e of n questions failed`` when none was answered
    or the run itself failed (its failure share or run budget; ``reason``), else ``PARTIAL: e of n questions
    failed``. A failed question scores 0, so without this mark such a row reads as a (poor) result."""
    n, e = int(n_questions or 0), int(n_failed or 0)
    if not failed and e == 0 and n > 0:
        return ""
    word = "FAILED" if failed or n == 0 or e >= n else "PARTIAL"
    note = " ".join(reason.split())[:160]
    return f"{word}: {e} of {n} questions failed" + (f" ({note})" if note else "")


def status_verdict(statuses: Iterable[str], where: Path) -> tuple[str, bool]:
    """What a comparison command says of its marked runs, and whether it fails: a FAILED run (no question
    answered, or the run's failure share or budget) exits non-zero after the comparison is written with the mark;
    PARTIAL runs (some questions failed) are a warning."""
    marked = [s for s in statuses if s]
    failed = [s for s in marked if s.startswith("FAILED")]
    if failed:
        return (f"error: {len(failed)} run(s) FAILED, {len(marked) - len(failed)} PARTIAL (marked in {where}); "
                f"first: {failed[0]}"), True
    if marked:
        return f"warning: {len(marked)} run(s) did not answer every question (marked PARTIAL in {where})", False
    return "", False


def status_note(statuses: Iterable[str]) -> str:
    """The loud line above a comparison's table when some of its runs are marked (``""`` when none is)."""
    marked = [s for s in statuses if s]
    if not marked:
        return ""
    failed = sum(s.startswith("FAILED") for s in marked)
    return (f"**{len(marked)} run(s) did not answer every question ({failed} FAILED, {len(marked) - failed} "
            f"PARTIAL; column `{STATUS}`): a failed question counts as 0 in their metrics.**")


#: characters LaTeX reads as commands, and what stands for each in a cell
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$",
          "≈": r"$\approx$", "–": "--", "Δ": r"$\Delta$", "≤": r"$\le$"}


def latex_text(text: str) -> str:
    """``text`` as LaTeX source (its special characters escaped, line breaks as spaces, Markdown's ``**bold**`` as
    ``\\textbf``)."""
    out = "".join(_LATEX.get(ch, ch) for ch in str(text).translate(_LINE_BREAKS))
    while out.count("**") >= 2:
        out = out.replace("**", r"\textbf{", 1).replace("**", "}", 1)
    return out


def latex_table(columns: Sequence[Column], rows: Iterable[Any], *, caption: str = "", label: str = "") -> str:
    """The same cells as :func:`markdown_table` as a booktabs ``table`` (first column left, the others right)."""
    spec = "l" + "l" * (len(columns) > 1) + "r" * max(0, len(columns) - 2)
    lines = [r"\begin{table}[t]", r"\centering", r"\small", rf"\begin{{tabular}}{{{spec}}}", r"\toprule",
             " & ".join(latex_text(c.heading) for c in columns) + r" \\", r"\midrule"]
    lines += [" & ".join(latex_text(c.cell(r)) for c in columns) + r" \\" for r in rows]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(rf"\caption{{{latex_text(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines.append(r"\end{table}")
    return "\n".join(lines)


def write_csv(rows: Sequence[dict[str, Any]], path: Path, fields: Sequence[str] | None = None) -> Path:
    """``rows`` under ``fields`` (default: every key of the rows, in the order they first appear); ``None`` is
    written as an empty cell, a formula-leading text cell neutralised (:func:`csv_cell`, headings too)."""
    if fields is None:
        fields = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(fields))
    w.writerow({f: csv_cell(f) for f in fields})
    w.writerows({k: csv_cell(v) for k, v in r.items()} for r in rows)
    write_text_atomic(path, buf.getvalue())
    return path


def write_report(out_dir: Path, stem: str, markdown: str, rows: Sequence[dict[str, Any]],
                 fields: Sequence[str] | None = None) -> tuple[Path, Path]:
    """``<stem>.csv`` (the rows) and ``<stem>.md`` (the Markdown text, credentials masked: it may name an endpoint)
    under ``out_dir``; returns both paths."""
    from hublab.redact import scrub

    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.md"
    write_csv(rows, csv_path, fields)
    write_text_atomic(md_path, scrub(markdown))
    return csv_path, md_path
