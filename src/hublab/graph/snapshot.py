"""The ORKG snapshot stage: the papers of one research field, frozen to Turtle plus a manifest.

Source ``export`` reads an ORKG export JSON; source ``api`` reads the live ORKG REST API. Both keep the same
thing: for each paper of the research field, every triple reachable from the paper along outgoing edges,
without descending into research-field nodes or other papers. This drops the export's template/comparison
noise (thesis §7.3.6: the allow-list keeps paper metadata and the selected variant's contributions).
``contribution_pattern`` (a regex on contribution labels) selects a variant's contributions where a paper
carries several variants, as on the live sandbox (GV3's labels end in `` 1``, GV4's is ``Classifications_1``).

The manifest's ``content_hash`` is the sha256 of the sorted, de-duplicated canonical triple strings
(``Triple.render()``), joined by newlines: it is independent of the source, of predicate ids and of the
Turtle serialisation, so two snapshots with the same content hash hold the same statements.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections import defaultdict
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from hublab.atomic import atomic_path, write_text_atomic
from hublab.config import ORKG_GRAPH
from hublab.errors import InputError
from hublab.graph.base import PAPER_TYPE
from hublab.graph.model import Triple

RESEARCH_FIELD_TYPE = "ResearchField"
CONTRIBUTION_PREDICATE = "contribution"
RESEARCH_FIELD_PREDICATE = "research field"
#: An ORKG research field is a resource: its id is ``R`` followed by digits (R659055, R11 "Science").
RESEARCH_FIELD_ID = re.compile(r"R[0-9]+")


def check_research_field(value: Any, *, field: str = "snapshot.research_field", file: str | None = None) -> str:
    """The research field id, or an :class:`InputError` naming where the malformed id came from."""
    text = value.strip() if isinstance(value, str) else value
    if not isinstance(text, str) or not RESEARCH_FIELD_ID.fullmatch(text):
        raise InputError(f"malformed ORKG research field id {value!r}: expected 'R' followed by digits, the id in "
                         "the field's ORKG address (e.g. R659055 in https://orkg.org/field/R659055)",
                         file=file, field=field)
    return text


def _triple_key(t: Triple) -> tuple[str, str, str]:
    return (t.subject.uid, t.predicate_id or t.predicate, t.object.uid)


def dedupe(triples: Iterable[Triple]) -> list[Triple]:
    seen: set[tuple[str, str, str]] = set()
    out = []
    for t in triples:
        k = _triple_key(t)
        if k not in seen:
            seen.add(k)
            out.append(t)
    return out


def content_hash(triples: Iterable[Triple]) -> str:
    lines = sorted({t.render() for t in triples})
    return hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()


def research_field_papers(triples: Iterable[Triple], research_field: str) -> list[str]:
    """Ids of ``Paper`` nodes with ``(paper, research field, <research_field>)``, in first-seen order."""
    out: dict[str, None] = {}
    for t in triples:
        if (
            t.predicate == RESEARCH_FIELD_PREDICATE
            and t.object.uid == research_field
            and PAPER_TYPE in t.subject.types
        ):
            out.setdefault(t.subject.uid)
    return list(out)


def paper_subgraph(
    out_edges: dict[str, list[Triple]],
    paper_id: str,
    *,
    contribution_pattern: str | None = None,
) -> list[Triple]:
    """Triples reachable from ``paper_id`` (BFS over outgoing edges), stopping at research fields and papers."""
    pattern = re.compile(contribution_pattern) if contribution_pattern else None
    out: list[Triple] = []
    seen = {paper_id}
    frontier = [paper_id]
    while frontier:
        nxt: list[str] = []
        for node in frontier:
            for t in out_edges.get(node, ()):
                if (
                    pattern is not None
                    and node == paper_id
                    and t.predicate == CONTRIBUTION_PREDICATE
                    and not pattern.search(t.object.text)
                ):
                    continue
                out.append(t)
                obj = t.object
                if obj.uid in seen or RESEARCH_FIELD_TYPE in obj.types or PAPER_TYPE in obj.types:
                    continue
                seen.add(obj.uid)
                nxt.append(obj.uid)
        frontier = nxt
    return out


def select_paper_subgraphs(
    triples: list[Triple], research_field: str, *, contribution_pattern: str | None = None
) -> tuple[list[Triple], list[str]]:
    """The union of the research field's paper subgraphs, and the paper ids."""
    out_edges: dict[str, list[Triple]] = defaultdict(list)
    for t in triples:
        out_edges[t.subject.uid].append(t)
    papers = research_field_papers(triples, research_field)
    selected: list[Triple] = []
    for pid in papers:
        selected.extend(paper_subgraph(out_edges, pid, contribution_pattern=contribution_pattern))
    return dedupe(selected), papers


def snapshot_from_export(
    path: str | Path, research_field: str, *, contribution_pattern: str | None = None
) -> tuple[list[Triple], dict[str, Any]]:
    """Paper subgraphs of an ORKG export JSON; malformed records raise InputError (file, record, field)."""
    from hublab.graph.orkg_export import read_export

    path = Path(path)
    triples, _entities = read_export(path)
    triples = dedupe(triples)
    selected, papers = select_paper_subgraphs(triples, research_field, contribution_pattern=contribution_pattern)
    if not papers:
        raise InputError(f"no Paper has 'research field' {research_field}", file=str(path))
    info = {
        "source": "export",
        "file": str(path),
        "papers": len(papers),
        "dropped_triples": len(triples) - len(selected),
    }
    return selected, info


def snapshot_from_api(
    client: Any,
    research_field: str,
    *,
    contribution_pattern: str | None = None,
    on_paper: Callable[[int, int, str], None] | None = None,
) -> tuple[list[Triple], dict[str, Any]]:
    """Paper subgraphs fetched from the ORKG REST API (one bundle per paper of the research field)."""
    from hublab.graph.orkg_api import OrkgApiError, statement_to_triple

    papers = client.research_field_papers(research_field)
    paper_ids: list[str] = []
    for i, p in enumerate(papers):
        if not isinstance(p, dict) or not isinstance(p.get("id"), str):
            raise OrkgApiError(f"paper list entry {i} of research field {research_field} has no 'id'")
        paper_ids.append(p["id"])
    if not paper_ids:
        raise OrkgApiError(f"research field {research_field} has no papers at {client.base_url}")
    selected: list[Triple] = []
    for i, pid in enumerate(paper_ids):
        if on_paper:
            on_paper(i, len(paper_ids), pid)
        statements = client.paper_statements(pid)
        triples = [statement_to_triple(st, where=f"bundle of {pid}, statement") for st in statements]
        out_edges: dict[str, list[Triple]] = defaultdict(list)
        for t in triples:
            out_edges[t.subject.uid].append(t)
        selected.extend(paper_subgraph(out_edges, pid, contribution_pattern=contribution_pattern))
    info = {"source": "api", "base_url": client.base_url, "papers": len(paper_ids)}
    return dedupe(selected), info


def write_provenance(root: str | Path, stage: str, info: dict[str, Any]) -> Path:
    """Where and when a stage ran (timestamp, absolute paths, host) — kept out of the stage's DVC outputs so
    those are byte-identical on every machine and checkout: ``outputs/provenance/<stage>.json``."""
    import platform

    path = Path(root) / "outputs" / "provenance" / f"{stage}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    rec = {"stage": stage, "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
           "root": str(Path(root).resolve()), "host": platform.node(), **info}
    write_text_atomic(path, json.dumps(rec, indent=2, ensure_ascii=False, default=str) + "\n")
    return path


def write_snapshot(
    triples: list[Triple], out_dir: str | Path, name: str, info: dict[str, Any]
) -> dict[str, Any]:
    """Write ``<name>.ttl`` and ``<name>.manifest.json``: both go to temp files first, then are renamed.
    The manifest holds only content-determined fields (no timestamp, no absolute path): the same inputs give
    byte-identical files; the creation time goes to ``write_provenance``."""
    from hublab.graph.rdf import RdfKnowledgeGraph

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    kg = RdfKnowledgeGraph.from_triples(triples, name=name)
    entities = {t.subject.uid for t in triples} | {t.object.uid for t in triples}
    manifest = {
        "name": name,
        **info,
        "triple_count": len(kg),
        "entity_count": len(entities),
        "content_hash": content_hash(triples),
        "hash_algorithm": "sha256 over sorted unique Triple.render() strings joined by '\\n'",
    }
    ttl = out_dir / f"{name}.ttl"
    man = out_dir / f"{name}.manifest.json"
    with atomic_path(ttl) as ttl_tmp, atomic_path(man) as man_tmp:  # both written before either is renamed
        kg.save(ttl_tmp)
        man_tmp.write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def build_snapshot(
    cfg: dict[str, Any],
    *,
    export_path: str | Path,
    out_dir: str | Path,
    client: Any | None = None,
    on_paper: Callable[[int, int, str], None] | None = None,
    root: Path | None = None,
    research_field_from: tuple[str, str | None] = ("snapshot.research_field", None),
) -> dict[str, Any]:
    """Run the snapshot stage from the ``snapshot`` section of params.yaml (paths in the manifest are
    written relative to ``root`` when given, so manifests do not depend on the checkout location).
    ``research_field_from`` (field, file) says where ``research_field`` came from, for the error on a malformed
    id (checked before anything is read or written)."""
    source = cfg.get("source", "export")
    name = str(cfg.get("name", ORKG_GRAPH))
    where, where_file = research_field_from
    field = check_research_field(cfg.get("research_field", "R659055"), field=where, file=where_file)
    pattern = cfg.get("contribution_pattern") or None
    if source == "export":
        triples, info = snapshot_from_export(export_path, field, contribution_pattern=pattern)
    elif source == "api":
        if client is None:
            from hublab.graph.orkg_api import OrkgClient

            client = OrkgClient(
                base_url=str(cfg.get("base_url", "https://sandbox.orkg.org")),
                timeout_s=float(cfg.get("timeout_s", 30)),
                page_size=int(cfg.get("page_size", 100)),
                retries=int(cfg.get("retries", 4)),
            )
        triples, info = snapshot_from_api(client, field, contribution_pattern=pattern, on_paper=on_paper)
    else:
        raise InputError(f"unknown snapshot source {source!r} (expected 'export' or 'api')", field="snapshot.source")
    if root is not None and "file" in info:
        # lexically, not through symlinks: a ../shared that links elsewhere must give the same manifest (and DVC
        # hash) as a ../shared folder, or every clone with a linked ../shared rebuilds every downstream stage
        info["file"] = os.path.relpath(os.path.abspath(info["file"]), os.path.abspath(root))
    abs_file = info.get("file")
    info = {**info, "research_field": field, "contribution_pattern": pattern}
    manifest = write_snapshot(triples, out_dir, name, info)
    if root is not None:
        write_provenance(root, f"snapshot-{name}", {"source_file": abs_file and str(Path(export_path).resolve()),
                                                     "content_hash": manifest["content_hash"]})
    return manifest
