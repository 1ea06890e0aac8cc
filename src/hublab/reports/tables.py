"""The one table writer of the comparison reports: a Markdown or LaTeX table from rows and column specs, and a CSV
from row dicts (each written atomically, ``hublab.atomic``: a reader never sees half a table)."""

from __future__ import annotations

import csv
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


def markdown_table(columns: Sequence[Column], rows: Iterable[Any]) -> str:
    """The heading line, the separator and one line per row (no trailing newline)."""
    lines = ["| " + " | ".join(c.heading for c in columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(c.cell(r) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


#: characters LaTeX reads as commands, and what stands for each in a cell
_LATEX = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{",
          "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"$<$", ">": r"$>$",
          "≈": r"$\approx$", "–": "--", "Δ": r"$\Delta$", "≤": r"$\le$"}


def latex_text(text: str) -> str:
    """``text`` as LaTeX source (its special characters escaped, Markdown's ``**bold**`` as ``\\textbf``)."""
    out = "".join(_LATEX.get(ch, ch) for ch in text)
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
    written as an empty cell."""
    if fields is None:
        fields = list(dict.fromkeys(k for r in rows for k in r))
    buf = io.StringIO(newline="")
    w = csv.DictWriter(buf, fieldnames=list(fields))
    w.writeheader()
    w.writerows(rows)
    write_text_atomic(path, buf.getvalue())
    return path


def write_report(out_dir: Path, stem: str, markdown: str, rows: Sequence[dict[str, Any]],
                 fields: Sequence[str] | None = None) -> tuple[Path, Path]:
    """``<stem>.csv`` (the rows) and ``<stem>.md`` (the Markdown text) under ``out_dir``; returns both paths."""
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out_dir / f"{stem}.csv", out_dir / f"{stem}.md"
    write_csv(rows, csv_path, fields)
    write_text_atomic(md_path, markdown)
    return csv_path, md_path
