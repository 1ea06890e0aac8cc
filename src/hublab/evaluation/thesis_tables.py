"""The thesis's reported results (``params.yaml: paths.thesis_results``), read in one place.

Two tables are used: ``graph_variants.csv`` (Table 10.5: Recall, Precision, F1, MAP@10 of each method on each
graph variant, rows ``"<method> (GV<n>)"``) and ``final_comparison_gv1.csv`` (every metric of each configuration
on GV1, columns in the thesis's spelling). Each file is parsed once per process (cached by path and modification
time); callers get copies. Methods are named as the thesis names them (``HubLink``); a retriever class declares
that name (``Retriever.thesis_name``).
"""

from __future__ import annotations

import csv
import os
from functools import lru_cache
from pathlib import Path

from hublab.config import ORKG_GRAPH
from hublab.errors import InputError
from hublab.evaluation import names

GRAPH_VARIANTS_CSV = "graph_variants.csv"
FINAL_COMPARISON_CSV = "final_comparison_gv1.csv"
#: The thesis's graph variant each of our graphs reproduces (the ORKG export is the thesis's GV3).
VARIANT = {"gv1": "GV1", "gv2": "GV2", "gv3": "GV3", "gv4": "GV4", ORKG_GRAPH: "GV3"}
#: graph_variants.csv column → our metric name, in the order every reference dict lists them.
_VARIANT_COLUMNS = {"Recall": names.RECALL, "Precision": names.PRECISION, "F1": names.F1, "MAP@10": names.MAP_AT_10}
#: The final comparison's HubLink row the thesis reports as HubLink on GV1 (Traverse strategy, o3-mini).
FINAL_HUBLINK = "HubLink (Traverse)"
_MISSING = ("", "none")  # cells the thesis left empty (LLM-judged metrics it did not compute)


def variant(graph: str) -> str | None:
    """The thesis's variant (``GV3``) for one of our graph names, None for a graph the thesis has no table for."""
    return VARIANT.get(graph)


def _stamp(path: Path) -> tuple[str, int, int] | None:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return str(path), st.st_mtime_ns, st.st_size


def _number(value: str | None, path: str, line: int, column: str) -> float:
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(f"expected a number, got {value!r}", file=path, line=line, field=column) from None


@lru_cache(maxsize=8)
def _graph_variants(stamp: tuple[str, int, int]) -> dict[str, dict[str, dict[str, float]]]:
    path = stamp[0]
    out: dict[str, dict[str, dict[str, float]]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            method, _, var = str(row.get("Config") or "").rpartition(" (")
            if not method or not var.endswith(")"):
                raise InputError("expected '<method> (<variant>)'", file=path, line=line, field="Config")
            out.setdefault(method, {})[var[:-1]] = {
                name: _number(row.get(col), path, line, col) for col, name in _VARIANT_COLUMNS.items()}
    return out


@lru_cache(maxsize=8)
def _final_comparison(stamp: tuple[str, int, int]) -> dict[str, dict[str, float]]:
    path = stamp[0]
    out: dict[str, dict[str, float]] = {}
    with open(path, newline="", encoding="utf-8") as fh:
        for line, row in enumerate(csv.DictReader(fh), start=2):
            out[str(row.get("Config"))] = {names.from_thesis(col): _number(v, path, line, col)
                                           for col, v in row.items() if col != "Config" and v not in _MISSING}
    return out


def graph_variants(base: Path) -> dict[str, dict[str, dict[str, float]]]:
    """``{thesis method: {variant: {metric name: value}}}`` from graph_variants.csv (Recall, Precision, F1,
    MAP@10); ``{}`` when the file is absent."""
    stamp = _stamp(Path(base) / GRAPH_VARIANTS_CSV)
    return {} if stamp is None else {m: {v: dict(vals) for v, vals in by.items()}
                                     for m, by in _graph_variants(stamp).items()}


def final_comparison(base: Path) -> dict[str, dict[str, float]]:
    """``{configuration: {metric name: value}}`` from final_comparison_gv1.csv (GV1, every metric the thesis
    computed, under our names); ``{}`` when the file is absent."""
    stamp = _stamp(Path(base) / FINAL_COMPARISON_CSV)
    return {} if stamp is None else {c: dict(vals) for c, vals in _final_comparison(stamp).items()}


def on_graph(base: Path, graph: str) -> dict[str, dict[str, float]]:
    """``{thesis method: metrics}`` of graph_variants.csv for this graph's variant (``{}`` if it has none)."""
    var = variant(graph)
    return {} if var is None else {m: by[var] for m, by in graph_variants(base).items() if var in by}


def by_method(base: Path) -> dict[str, dict[str, dict[str, float]]]:
    """``{thesis method: {variant: metrics}}``: graph_variants.csv, with HubLink on GV1 taken from the final
    comparison (``FINAL_HUBLINK``: every metric, not only the four of the variant table)."""
    out = graph_variants(base)
    hublink = final_comparison(base).get(FINAL_HUBLINK)
    if hublink is not None:
        out.setdefault("HubLink", {})["GV1"] = hublink
    return out
