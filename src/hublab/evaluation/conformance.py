"""Re-score a predictions file in the thesis's format and compare with the values it carries.

Two entity-level columns of the reference are *order-dependent* (the reference iterated Python sets, whose
order changes with hash randomisation): ``hit_at_10_entities`` where more than 10 entities were retrieved,
and ``map_at_10_entities`` where a retrieved triple contains several unfound golden entities. For those rows
:func:`reachable` enumerates every value the reference could have produced, so a comparison can prove
consistency instead of demanding equality with one arbitrary order.

Columns are compared under HubLab's names (``hublab.evaluation.names``); a file in the thesis's layout spells
them ``hit@10_triples``, ``factual_correctness(mode=f1)``, which :func:`reference_value` reads as well.
"""

from __future__ import annotations

import ast
import csv
from pathlib import Path
from typing import Any

from hublab.errors import InputError
from hublab.evaluation.names import at_k, thesis_column
from hublab.evaluation.retrieval import R_DIGITS, entities_of, retrieval_metrics

REQUIRED = ("uid", "retrieved_context", "golden_triples")
GEN_COLUMNS = ("generated_answer", "golden_answer")


def _list(value: str, *, file: str, row: int, field: str) -> list[str]:
    if value is None or not value.strip():
        return []
    try:
        parsed = ast.literal_eval(value)
    except (ValueError, SyntaxError) as exc:
        raise InputError(f"expected a Python list of strings: {exc.__class__.__name__}", file=file, row=row,
                         field=field) from exc
    if not isinstance(parsed, list) or not all(isinstance(x, str) for x in parsed):
        raise InputError("expected a Python list of strings", file=file, row=row, field=field)
    return parsed


def read_predictions(path: str | Path, *, need_generation: bool) -> list[dict[str, Any]]:
    path = Path(path)
    csv.field_size_limit(1 << 30)
    try:
        fh = path.open(newline="", encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError("file not found", file=str(path)) from exc
    with fh:
        reader = csv.DictReader(fh)
        try:
            cols = reader.fieldnames or []
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", file=str(path), row=0) from None
        needed = REQUIRED + (GEN_COLUMNS if need_generation else ())
        missing = [c for c in needed if c not in cols]
        if missing:
            raise InputError(f"missing columns {missing} (have {len(cols)} columns)", file=str(path))
        rows = []
        try:
            for i, rec in enumerate(reader, start=1):
                rec = dict(rec)
                if None in rec or any(v is None for v in rec.values()):
                    raise InputError(f"row has a different number of fields than the {len(cols)} header columns",
                                     file=str(path), row=i)
                rec["_retrieved"] = _list(rec["retrieved_context"], file=str(path), row=i, field="retrieved_context")
                rec["_golden"] = _list(rec["golden_triples"], file=str(path), row=i, field="golden_triples")
                rows.append(rec)
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8 text ({exc.reason})", file=str(path), row=len(rows) + 1) from None
        except csv.Error as exc:
            raise InputError(f"malformed CSV: {exc}", file=str(path), row=len(rows) + 1) from None
    if not rows:
        raise InputError("no prediction rows", file=str(path))
    return rows


def recompute(rows: list[dict[str, Any]], *, k: int = 10, generation: bool = True,
              generation_metrics: tuple[str, ...] = ("bleu", "rouge")) -> list[dict[str, Any]]:
    out = [{"uid": r["uid"], **retrieval_metrics(r["_retrieved"], r["_golden"], k)} for r in rows]
    if generation:
        from hublab.evaluation.generation import GenerationEvaluator

        ev = GenerationEvaluator(list(generation_metrics))
        gen = ev.evaluate([{"question": r.get("question", ""), "generated_answer": r["generated_answer"],
                            "golden_answer": r["golden_answer"], "retrieved_context": r["_retrieved"]}
                           for r in rows])
        for o, g in zip(out, gen, strict=True):
            o.update(g)
    return out


def _map_values(ranked: list[str], golden: list[str], k: int, limit: int = 4096) -> set[float]:
    """Every MAP@k the reference's walk can give when it marks any one of several unfound golden items."""
    results: set[float] = set()
    low = [(g, g.lower()) for g in dict.fromkeys(golden)]

    def walk(i: int, found: frozenset[str], total: float) -> None:
        if len(results) > limit:
            return
        if i > min(k, len(ranked)):
            results.add(round(total / min(len(golden), k), R_DIGITS))
            return
        rl = ranked[i - 1].lower()
        options = [g for g, gl in low if g not in found and gl in rl]
        if not options:
            walk(i + 1, found, total)
        for g in options:
            walk(i + 1, found | {g}, total + (len(found) + 1) / i)

    if golden:
        walk(1, frozenset(), 0.0)
    return results


def reachable(column: str, row: dict[str, Any], k: int = 10) -> set[float] | None:
    """All values an order-dependent reference column can take for this row (None: not order-dependent)."""
    if column == at_k("map", k, "entities"):
        return _map_values(row["_retrieved"], entities_of(row["_golden"]), k)
    if column == at_k("hit", k, "entities"):
        ents, gold = entities_of(row["_retrieved"]), set(entities_of(row["_golden"]))
        if len(ents) <= k or not gold:
            return None
        inter = len(gold & set(ents))
        lo, hi = max(0, k - (len(ents) - inter)), min(k, inter)
        return {round(c / len(gold), R_DIGITS) for c in range(lo, hi + 1)}
    return None


def reference_value(row: dict[str, Any], name: str) -> Any:
    """The value a predictions row carries for metric ``name``: under our name, else the thesis's spelling."""
    if name in row:
        return row[name]
    return row.get(thesis_column(name))


def compare(rows: list[dict[str, Any]], ours: list[dict[str, Any]], *, k: int = 10) -> dict[str, dict[str, Any]]:
    """Per column: max |ours − reference|, rows over 1e-6, and for order-dependent columns whether every
    differing reference value is reachable under some iteration order."""
    report: dict[str, dict[str, Any]] = {}
    for r, o in zip(rows, ours, strict=True):
        for col, v in o.items():
            ref_cell = reference_value(r, col)
            if col == "uid" or v is None or ref_cell in ("", None):
                continue
            ref = float(ref_cell)
            d = abs(float(v) - ref)
            e = report.setdefault(col, {"max_abs_diff": 0.0, "rows_over_1e-6": 0, "order_dependent_rows": 0,
                                        "unexplained_rows": 0})
            e["max_abs_diff"] = max(e["max_abs_diff"], d)
            if d > 1e-6:
                e["rows_over_1e-6"] += 1
                options = reachable(col, r, k)
                if options is not None and any(abs(ref - x) <= 1e-6 for x in options):
                    e["order_dependent_rows"] += 1
                else:
                    e["unexplained_rows"] += 1
    return report
