"""Build the graph variants GV1–GV4 (thesis §7.3.3, spec framework.md §5) from the annotated bibliography.

Every variant shares the paper metadata part (title label, research field, venue, year, DOI, authors list)
and differs in how the annotation is stored under the paper's contributions:

- *deep* variants (GV1, GV2) use typed intermediate resources and "list of Booleans" encodings;
- *flat* variants (GV3, GV4) store each value as a literal directly under its contribution;
- *distributed* variants (GV1, GV3) split the annotation over several contributions, *centralized* ones
  (GV2, GV4) put it in one. A contribution holding a single block drops that block's wrapper node.

Conventions the spec leaves open were read off the real GV3 export (docs/graph-variants.md): flattened
values are de-duplicated per contribution and predicate, an empty multi-valued item becomes the literal
"False", "Has Evaluation Guideline" is one Boolean per research object (True if any evaluation names one),
and author names are stored as ORKG does (first given name + last name).

Ids are minted deterministically (fixed offsets, fixed build order), so rebuilding gives identical files.
The paper metadata part has the same ids in every variant, as in the ORKG where all variants hang off the
same paper resources.
"""

from __future__ import annotations

from pathlib import Path

from hublab.errors import InputError
from hublab.graph.bib import Paper, read_papers
from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph
from hublab.graph.variant_blocks import (
    CONTRIBUTIONS,
    DEEP,
    Ids,
    Sink,
    deep_blocks,
    flat_blocks,
)

VARIANTS = ("gv1", "gv2", "gv3", "gv4")
VARIANT_NAMES = {"gv1": "deep_distributed", "gv2": "deep_centralized", "gv3": "flat_distributed",
                 "gv4": "flat_centralized"}

RESEARCH_FIELD = Knowledge("R659055", "Software Architecture and Design", ("ResearchField",))
# The venue resources of the ORKG sandbox (ids and labels as in the GV3 export).
VENUES = {
    "ICSA": Knowledge("R820814", "International Conference on Software Architecture (ICSA)", ("Venue",)),
    "ECSA": Knowledge("R821053", "European Conference on Software Architecture (ECSA)", ("Venue",)),
}
# Titles the ORKG stores differently from the bibliography (it took them from the DOI metadata). The KGQA
# datasets' questions and golden triples use the ORKG spelling, so the graphs do too.
ORKG_TITLES = {
    "10.1007/978-3-030-00761-4_19": "Understanding Architecture Decisions in Context",
    "10.1007/978-3-319-65831-5_14": "Architectural Assumptions and Their Management in Industry – An Exploratory Study",
}

# Id offsets: shared metadata, then one resource/literal range per variant (ranges never overlap).
META_RESOURCE_BASE = 1_000_000
META_LITERAL_BASE = 3_000_000
VARIANT_RESOURCE_BASE = {"gv1": 1_100_000, "gv2": 1_200_000, "gv3": 1_300_000, "gv4": 1_400_000}
VARIANT_LITERAL_BASE = {"gv1": 3_100_000, "gv2": 3_200_000, "gv3": 3_300_000, "gv4": 3_400_000}


# ---------------------------------------------------------------- builder


def _metadata(paper: Paper, s: Sink) -> tuple[Knowledge, list[Triple]]:
    """The shared metadata part; returns the paper node and its triples."""
    start = len(s.triples)
    title = ORKG_TITLES.get(paper.doi, paper.title)
    node = s.node(title, ("Paper",))
    authors = s.node("authors list", ("List",))
    s.link(node, "research field", RESEARCH_FIELD)
    s.link(node, "venue", VENUES[paper.venue])
    s.lit(node, "doi", paper.doi)
    s.link(node, "authors", authors)
    for name in paper.authors:
        s.lit(authors, "has list element", name)
    s.lit(node, "publication year", paper.year)
    return node, s.triples[start:]


def _contributions(paper: Paper, paper_node: Knowledge, variant: str, s: Sink) -> int:
    """Write the variant's contributions of one paper; returns how many were made."""
    deep = variant in DEEP
    by_name = deep_blocks(paper) if deep else flat_blocks(paper)
    made = 0
    for label, names in CONTRIBUTIONS[variant].items():
        blocks = [b for n in names for b in by_name[n]]
        if not blocks:
            continue
        contrib = s.node(label, ("Contribution",))
        s.link(paper_node, "contribution", contrib)
        made += 1
        if not deep:
            for block in blocks:  # de-duplicated within a block, not across (GV4 keeps both ROs' values)
                for pred, value in block:
                    s.lit(contrib, pred, value)
        elif len(names) == 1 and len(blocks) == 1:  # single deep block: its wrapper node is dropped
            blocks[0][2](s, contrib)
        else:
            for pred, wrapper, fill in blocks:
                w = s.node(wrapper)
                s.link(contrib, pred, w)
                fill(s, w)
    return made


def build_variant(papers: list[Paper], variant: str) -> RdfKnowledgeGraph:
    """The graph of one variant (``gv1``…``gv4``) for these papers, with deterministic ids."""
    kg, _ = _build(papers, variant)
    return kg


def _build(papers: list[Paper], variant: str) -> tuple[RdfKnowledgeGraph, dict]:
    if variant not in CONTRIBUTIONS:
        raise InputError(f"unknown graph variant {variant!r} (expected one of {list(VARIANTS)})", field="variant")
    meta = Sink(Ids(META_RESOURCE_BASE, META_LITERAL_BASE))
    body = Sink(Ids(VARIANT_RESOURCE_BASE[variant], VARIANT_LITERAL_BASE[variant]))
    triples: list[Triple] = []
    contributions = 0
    for paper in papers:
        node, meta_triples = _metadata(paper, meta)
        start = len(body.triples)
        contributions += _contributions(paper, node, variant, body)
        triples.extend(meta_triples)
        triples.extend(body.triples[start:])
    kg = RdfKnowledgeGraph.from_triples(triples, name=variant)
    stats = {"variant": variant, "name": VARIANT_NAMES[variant], "triples": len(kg), "papers": len(papers),
             "contributions": contributions, "entities": sum(1 for _ in kg.entities())}
    return kg, stats


# ---------------------------------------------------------------- evidence sheet


def read_replication_links(path: str | Path) -> dict[str, str]:
    """Citekey → replication package link from the evidence sheet (evidence-values.xlsx)."""
    import openpyxl

    path = Path(path)
    file = str(path)
    if not path.exists():
        raise InputError("file not found", file=file)
    try:
        wb = openpyxl.load_workbook(path, read_only=True, data_only=True)
    except Exception as exc:  # openpyxl raises several types for non-xlsx input
        raise InputError(f"cannot read as .xlsx: {exc}", file=file) from exc
    ws = wb.worksheets[0]
    rows = ws.iter_rows(values_only=True)
    header = [str(h).strip() if h is not None else "" for h in next(rows, ())]
    for col in ("Citekey", "Replication Package Link"):
        if col not in header:
            raise InputError(f"missing column {col!r} (header: {header})", file=file, row=1, field=col)
    ki, li = header.index("Citekey"), header.index("Replication Package Link")
    links: dict[str, str] = {}
    for n, row in enumerate(rows, start=2):
        key = row[ki] if ki < len(row) else None
        link = row[li] if li < len(row) else None
        if not key or link is None or not str(link).strip():
            continue
        link = str(link).strip()
        if not link.startswith(("http://", "https://")):
            raise InputError(f"expected a URL, got {link!r}", file=file, row=n, field="Replication Package Link")
        links[str(key).strip()] = link
    wb.close()
    return links


def attach_links(papers: list[Paper], links: dict[str, str], *, file: str = "<evidence>") -> list[Paper]:
    """Papers with their replication links; a link for an unknown citekey is an input error."""
    from dataclasses import replace

    keys = {p.key for p in papers}
    unknown = sorted(set(links) - keys)
    if unknown:
        raise InputError(f"replication links for citekeys not in the bibliography: {unknown}", file=file,
                         field="Citekey")
    return [replace(p, replication_link=links.get(p.key)) for p in papers]


# ---------------------------------------------------------------- all variants to disk


def build_variants(
    bib_path: Path, out_dir: Path, variants: list[str], evidence_path: Path | None = None
) -> dict[str, dict]:
    """Build the named variants and write ``out_dir/<variant>.ttl`` atomically; returns per-variant stats.

    All inputs are read and all graphs built before anything is written, so bad input leaves the previous
    outputs untouched.
    """
    for v in variants:
        if v not in CONTRIBUTIONS:
            raise InputError(f"unknown graph variant {v!r} (expected one of {list(VARIANTS)})",
                             field="graphs.variants")
    papers = read_papers(bib_path)
    if evidence_path is not None:
        papers = attach_links(papers, read_replication_links(evidence_path), file=str(evidence_path))
    try:
        built = {v: _build(papers, v) for v in variants}
    except InputError as exc:  # vocabulary errors name the entry; add the file
        if exc.file is not None:
            raise
        raise InputError(exc.detail, file=str(bib_path), row=exc.row, field=exc.field) from exc
    out: dict[str, dict] = {}
    for v, (kg, stats) in built.items():
        path = Path(out_dir) / f"{v}.ttl"
        kg.save(path)
        out[v] = {**stats, "path": str(path)}
    return out
