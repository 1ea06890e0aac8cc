"""Build the KGQA datasets stage: load the thesis CSVs, remap golden triples onto the rebuilt graph variants
(or check them on the ORKG snapshot itself), write ``data/kgqa/<name>.jsonl`` and ``mapping_report.json``."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from hublab.atomic import write_text_atomic
from hublab.config import ORKG_GRAPH, Settings
from hublab.datasets.kgqa_csv import load_kgqa_csv, unparseable_golden
from hublab.datasets.model import write_jsonl
from hublab.datasets.remap import IdHints, remap_pairs
from hublab.errors import InputError
from hublab.graph.model import parse_triple_string


def _load_graph(s: Settings, name: str, hint: str) -> Any:
    """A built-in graph through the graph door, a missing one naming the command that builds it."""
    from hublab.graph.backends import open_graph

    path = s.graph_file(name)
    if not path.exists():
        raise InputError(f"graph not found: run `{hint}` (or `dvc repro`) first", file=str(path))
    return open_graph(name, s)


def orkg_dataset(pairs: list, kg: Any) -> tuple[list, dict[str, Any]]:
    """The thesis CSV on the snapshot itself: no remapping, but every golden triple (and its ids) must exist."""
    from dataclasses import replace

    rendered = {t.render() for t in kg.triples()}
    out, missing, placeholders, total = [], [], 0, 0
    for p in pairs:
        bad = unparseable_golden(p.golden_triples)
        placeholders += len(bad)
        total += len(p.golden_triples)
        for g in p.golden_triples:
            if g in bad:
                continue
            parsed = parse_triple_string(g)
            absent = [i for i in (parsed.subject_id, parsed.object_id) if kg.entity(i) is None]
            if absent or g not in rendered:
                missing.append({"row": p.row, "uid": p.uid, "triple": g, "missing_ids": absent})
        out.append(replace(p, original_golden_triples=list(p.golden_triples), unmapped_golden_triples=bad))
    mappable = total - placeholders
    report = {
        "questions": len(pairs),
        "golden_total": total,
        "thesis_placeholders": placeholders,
        "mapped": mappable - len(missing),
        "mapping_rate": round((mappable - len(missing)) / mappable, 6) if mappable else 1.0,
        "unmapped": missing,
        "remapped": False,
    }
    return out, report


def build_datasets(s: Settings, only: list[str] | None = None) -> tuple[dict[str, Any], Path]:
    """Build every configured dataset (or ``only`` these); returns the mapping report and its path.
    ``report["ok"]`` is False when a dataset maps fewer golden triples than ``min_mapping_rate``."""
    cfg = s.section("datasets")
    kgqa_dir = s.path("kgqa_dir")
    out_dir = s.path("datasets")
    min_rate = float(cfg.get("min_mapping_rate", 0.95))
    files: dict[str, str] = dict(cfg.get("files") or {})
    reduced = dict(cfg.get("reduced") or {})
    orkg = dict(cfg.get("orkg") or {"name": ORKG_GRAPH, "file": files.get("gv3", "flat_distributed.csv")})
    hint_graph = str(cfg.get("id_hints_graph") or orkg["name"])

    # dataset name -> (csv file, graph name, remap?)
    jobs: dict[str, tuple[str, str, bool]] = {v: (f, v, True) for v, f in files.items()}
    if reduced:
        jobs[str(reduced["name"])] = (str(reduced["file"]), str(reduced.get("graph", "gv1")), True)
    jobs[str(orkg["name"])] = (str(orkg["file"]), str(orkg["name"]), False)
    if only:
        unknown = sorted(set(only) - set(jobs))
        if unknown:
            raise InputError(f"unknown dataset(s) {unknown}; valid: {', '.join(sorted(jobs))}", field="--only")
        jobs = {k: v for k, v in jobs.items() if k in only}

    graphs: dict[str, Any] = {}

    def graph(name: str) -> Any:
        if name not in graphs:
            hint = "hublab data snapshot" if name == orkg["name"] else "hublab data graphs"
            graphs[name] = _load_graph(s, name, hint)
        return graphs[name]

    hints = None
    if any(remap for _f, _g, remap in jobs.values()):
        hints = IdHints(graph(hint_graph))

    report: dict[str, Any] = {"min_mapping_rate": min_rate, "datasets": {}}
    for name, (csv_name, gname, remap) in jobs.items():
        pairs = load_kgqa_csv(kgqa_dir / csv_name)
        if remap:
            new, stats = remap_pairs(pairs, graph(gname), dataset=name, graph=gname, hints=hints)
            entry = {**stats.to_dict(), "remapped": True}
        else:
            new, entry = orkg_dataset(pairs, graph(gname))
            entry = {"dataset": name, "graph": gname, **entry}
        # paths relative to the repo root: the report is a DVC output and must not depend on the checkout
        entry["csv"] = os.path.relpath(kgqa_dir / csv_name, s.root)
        entry["output"] = os.path.relpath(s.dataset_file(name), s.root)
        write_jsonl(new, s.dataset_file(name))
        report["datasets"][name] = entry

    failed = [n for n, e in report["datasets"].items() if e["mapping_rate"] < min_rate]
    report["ok"] = not failed
    rp = out_dir / "mapping_report.json"
    write_text_atomic(rp, json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    from hublab.graph.snapshot import write_provenance

    write_provenance(s.root, "datasets", {"kgqa_dir": str(kgqa_dir.resolve()), "out_dir": str(out_dir.resolve())})
    return report, rp
