"""The closing table of the quick start: each evaluation's headline metrics (``reports/eval/*/metrics.json``)
next to the thesis's HubLink on the same graph variant — the @10 metrics first, and full-list Recall only
next to the number of triples it was measured over."""

from __future__ import annotations

import csv
import json
from typing import Any

from hublab.config import Settings

VARIANT = {"gv1": "GV1", "gv2": "GV2", "gv3": "GV3", "gv4": "GV4", "gv3_orkg": "GV3"}
COLUMNS = [("recall@10_triples", "Recall@10"), ("hit@10_triples", "Hits@10"), ("map@10_triples", "MAP@10"),
           ("mrr@10_triples", "MRR@10"), ("triples_per_question", "triples/q"), ("recall_triples", "Recall (all)"),
           ("n_questions", "questions")]


def thesis_hublink(st: Settings) -> dict[str, dict[str, float]]:
    """The thesis's HubLink per variant: GV1 from the final comparison (Traverse, o3-mini), others from the
    graph-variant table (Recall and MAP@10 only)."""
    base = st.path("thesis_results")
    out: dict[str, dict[str, float]] = {}
    final = base / "final_comparison_gv1.csv"
    if final.exists():
        with final.open() as fh:
            for row in csv.DictReader(fh):
                if row["Config"] == "HubLink (Traverse)":
                    out["GV1"] = {k: float(row[k]) for k, _ in COLUMNS if k in row and row[k] not in ("", "none")}
    variants = base / "graph_variants.csv"
    if variants.exists():
        with variants.open() as fh:
            for row in csv.DictReader(fh):
                name, _, var = row["Config"].rpartition(" (")
                var = var.rstrip(")")
                if name == "HubLink" and var not in out:
                    out[var] = {"recall_triples": float(row["Recall"]), "map@10_triples": float(row["MAP@10"])}
    return out


def evaluation_rows(st: Settings) -> list[dict[str, Any]]:
    """One row per evaluate run declared in params.yaml, with the thesis's row after it."""
    thesis = thesis_hublink(st)
    rows: list[dict[str, Any]] = []
    for run in st.section("evaluate").get("runs", []):
        path = st.root / "reports" / "eval" / f"{run['pipeline']}-{run['dataset']}" / "metrics.json"
        if not path.exists():
            continue
        m = json.loads(path.read_text())
        rows.append({"run": f"{run['pipeline']} on {run['dataset']}", **{label: m.get(k) for k, label in COLUMNS}})
        ref = thesis.get(VARIANT.get(run["graph"], ""), {})
        if ref:
            rows.append({"run": f"  thesis HubLink ({VARIANT[run['graph']]})",
                         **{label: ref.get(k) for k, label in COLUMNS}})
    return rows


def markdown_table(rows: list[dict[str, Any]]) -> str:
    cols = ["run", *[label for _, label in COLUMNS]]

    def fmt(v: Any) -> str:
        if v is None:
            return "–"
        if isinstance(v, float):
            return str(int(v)) if v.is_integer() and v >= 1 else (f"{v:.1f}" if v >= 1 else f"{v:.3f}")
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join(fmt(r.get(c)) for c in cols) + " |" for r in rows]
    return "\n".join(lines)
