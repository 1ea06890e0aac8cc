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

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hublab.errors import InputError
from hublab.graph.bib import Annotation, Evaluation, Paper, ResearchObject, read_papers
from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph

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
_RANGE = 100_000

# ---- vocabularies: annotation value → predicate label (deep Boolean lists) / literal (flat) ----
PAPER_CLASSES = {  # GV1/GV2 predicate order is the Boolean list's order
    "Evaluation Research": "evaluation research",
    "Validation Research": "validation research",
    "Proposal of Solution": "proposal of solution",
    "Philosophical Papers": "philosophical paper",
    "Opinion Paper": "opinion paper",
    "Personal Experience Papers": "personal experience paper",
}
RESEARCH_LEVELS = {"Primary Research": "Primary Research", "Secondary Research": "secondary research"}
THREATS = {
    "Construct Validity": "construct validity",
    "External Validity": "external validity",
    "Internal Validity": "internal validity",
    "Confirmability": "confirmability",
    "Repeatability": "repeatability",
}
EVIDENCE_CHOICES = {"used": "used", "available": "available", None: "None"}
TOOL_TEXT = {"used": "Tool was used but is not available", "available": "Tool is available", None: "No tool used"}
INPUT_TEXT = {"used": "Input data was used but is not available", "available": "Input data is available",
              None: "No input data used"}

TRUE, FALSE = "True", "False"


def _bool(b: bool) -> str:
    return TRUE if b else FALSE


# ---------------------------------------------------------------- id minting and triple collection


class _Ids:
    def __init__(self, r0: int, l0: int) -> None:
        self.r0, self.l0 = r0, l0
        self.r, self.l = r0, l0

    def resource(self) -> str:
        if self.r - self.r0 >= _RANGE:
            raise OverflowError("resource id range exhausted")
        self.r += 1
        return f"R{self.r}"

    def literal(self) -> str:
        if self.l - self.l0 >= _RANGE:
            raise OverflowError("literal id range exhausted")
        self.l += 1
        return f"L{self.l}"


@dataclass
class _Sink:
    """Collects triples in build order and mints ids."""

    ids: _Ids
    triples: list[Triple] = field(default_factory=list)

    def node(self, label: str, types: tuple[str, ...] = ()) -> Knowledge:
        return Knowledge(self.ids.resource(), label, types)

    def lit(self, subject: Knowledge, predicate: str, value: str) -> None:
        self.triples.append(Triple(subject, predicate, Knowledge(self.ids.literal(), value)))

    def link(self, subject: Knowledge, predicate: str, obj: Knowledge) -> None:
        self.triples.append(Triple(subject, predicate, obj))


# ---------------------------------------------------------------- blocks
#
# A deep block is (predicate, wrapper label, fill) where fill(sink, node) writes the block's content under
# `node`; several wrappers for one block are possible (GV2's research objects). A flat block is a list of
# (predicate, literal) pairs, already de-duplicated.

DeepBlock = tuple[str, str, Callable[[_Sink, Knowledge], None]]
FlatBlock = list[tuple[str, str]]


def _need(values: Iterable[str], vocab: dict, paper: Paper, item: str) -> None:
    for v in values:
        if v not in vocab:
            raise InputError(f"unknown value {v!r} (expected one of {sorted(k for k in vocab if k)})",
                             row=paper.key, field=f"classes.{item}")


def _bool_list(choices: dict, chosen: Iterable[str]) -> Callable[[_Sink, Knowledge], None]:
    chosen = set(chosen)

    def fill(s: _Sink, node: Knowledge) -> None:
        for value, pred in choices.items():
            s.lit(node, pred, _bool(value in chosen))

    return fill


def _deep_research_object(ro: ResearchObject) -> Callable[[_Sink, Knowledge], None]:
    def fill(s: _Sink, node: Knowledge) -> None:
        evaluations: tuple[Evaluation | None, ...] = ro.evaluations or (None,)
        for ev in evaluations:
            ev_node = s.node("Evaluation")
            s.link(node, "evaluation", ev_node)
            if ev is None or not ev.methods:
                s.lit(ev_node, "Evaluation method", FALSE)
            else:
                for m in ev.methods:  # one list node per value, as in the ORKG sandbox
                    lst = s.node("Evaluation Method List")
                    s.link(ev_node, "Evaluation method", lst)
                    ent = s.node("Evaluation Method Entity")
                    s.link(lst, "Entity", ent)
                    s.lit(ent, "Name", m)
            s.lit(ev_node, "Has Guideline", _bool(ev is not None and ev.guideline))
            if ev is None or not ev.properties:
                s.lit(ev_node, "properties", FALSE)
            else:
                for prop in ev.properties:
                    p_node = s.node("Property")
                    s.link(ev_node, "properties", p_node)
                    s.lit(p_node, "Name", prop.name)
                    for sub in prop.sub_properties:
                        sub_node = s.node("Property")
                        s.link(p_node, "Sub-Property", sub_node)
                        s.lit(sub_node, "Name", sub)
        if ro.objects:
            for obj in ro.objects:
                lst = s.node("Research Object List")
                s.link(node, "Object", lst)
                ent = s.node("Research Object Entity")
                s.link(lst, "Entity", ent)
                s.lit(ent, "Name", obj)
        else:
            s.lit(node, "Object", FALSE)

    return fill


def _deep_validity(a: Annotation) -> Callable[[_Sink, Knowledge], None]:
    def fill(s: _Sink, node: Knowledge) -> None:
        ttv = s.node("Threat to Validity")
        s.link(node, "Threats To Validity", ttv)
        _bool_list(THREATS, a.threats)(s, ttv)
        s.lit(node, "Referenced Threats to Validity Guideline", _bool(a.ttv_guideline))

    return fill


def _deep_evidence(a: Annotation, link: str | None) -> Callable[[_Sink, Knowledge], None]:
    def fill(s: _Sink, node: Knowledge) -> None:
        for pred, label, value in (("Uses Input Data", "Input Data", a.input_data),
                                   ("Uses Tool Support", "Tool Support", a.tool_support)):
            n = s.node(label)
            s.link(node, pred, n)
            for choice, cpred in EVIDENCE_CHOICES.items():
                s.lit(n, cpred, _bool(value == choice))
        s.lit(node, "Provides Replication Package", _bool(a.replication_package))
        if link:
            s.lit(node, "Replication Package Link", link)

    return fill


def deep_blocks(paper: Paper) -> dict[str, list[DeepBlock]]:
    a = paper.annotation
    _need(a.paper_classes, PAPER_CLASSES, paper, "Meta Data.Paper class")
    _need(a.research_levels, RESEARCH_LEVELS, paper, "Meta Data.Research Level")
    _need(a.threats, THREATS, paper, "Validity.Threats To Validity")
    ros = {ro.ordinal: ro for ro in a.research_objects}
    blocks: dict[str, list[DeepBlock]] = {
        "paper_class": [("paper class", "Paper Class", _bool_list(PAPER_CLASSES, a.paper_classes))],
        "research_level": [("research level", "Research Level", _bool_list(RESEARCH_LEVELS, a.research_levels))],
        "all_research_objects": [("Research Object", "Research Object", _deep_research_object(ro))
                                 for ro in a.research_objects],
        "validity": [("Validity", "Validity", _deep_validity(a))],
        "evidence": [("Evidence", "Evidence", _deep_evidence(a, paper.replication_link))],
    }
    for ordinal in ("First", "Second"):
        ro = ros.get(ordinal)
        blocks[f"{ordinal.lower()}_research_object"] = (
            [("Research Object", "Research Object", _deep_research_object(ro))] if ro else []
        )
    return blocks


def _dedup(pairs: Iterable[tuple[str, str]]) -> FlatBlock:
    return list(dict.fromkeys(pairs))


def _flat_research_object(ro: ResearchObject) -> FlatBlock:
    def values(pred: str, vals: Iterable[str]) -> list[tuple[str, str]]:
        vals = list(dict.fromkeys(vals))
        return [(pred, v) for v in vals] or [(pred, FALSE)]

    evs = ro.evaluations
    return _dedup(
        values("Research Object", ro.objects)
        + values("Evaluation method", (m for ev in evs for m in ev.methods))
        + values("Evaluation Property", (p.name for ev in evs for p in ev.properties))
        + values("Evaluation Sub-Property", (sp for ev in evs for p in ev.properties for sp in p.sub_properties))
        + [("Has Evaluation Guideline", _bool(any(ev.guideline for ev in evs)))]
    )


def flat_blocks(paper: Paper) -> dict[str, list[FlatBlock]]:
    a = paper.annotation
    _need(a.paper_classes, PAPER_CLASSES, paper, "Meta Data.Paper class")
    _need(a.research_levels, RESEARCH_LEVELS, paper, "Meta Data.Research Level")
    _need(a.threats, THREATS, paper, "Validity.Threats To Validity")
    ros = {ro.ordinal: ro for ro in a.research_objects}
    evidence = [("Uses Tool Support", TOOL_TEXT[a.tool_support]), ("Uses Input Data", INPUT_TEXT[a.input_data]),
                ("Provides Replication Package", _bool(a.replication_package))]
    if paper.replication_link:
        evidence.append(("Replication Package Link", paper.replication_link))
    blocks: dict[str, list[FlatBlock]] = {
        "paper_class_flattened": [_dedup(("paper class", c) for c in a.paper_classes)],
        "research_level_flattened": [_dedup(("research level", r) for r in a.research_levels)],
        "validity_flattened": [_dedup([("threat to validity", t) for t in a.threats] or [("threat to validity", FALSE)])
                               + [("Referenced Threats to Validity Guideline", _bool(a.ttv_guideline))]],
        "evidence_flattened": [evidence],
    }
    for ordinal in ("First", "Second"):
        ro = ros.get(ordinal)
        blocks[f"{ordinal.lower()}_research_object_flattened"] = [_flat_research_object(ro)] if ro else []
    return blocks


# contribution label → blocks (spec §5.4 "contribution_building_blocks")
CONTRIBUTIONS: dict[str, dict[str, list[str]]] = {
    "gv1": {
        "Paper Class 2": ["paper_class"],
        "Research Level 2": ["research_level"],
        "First Research Object 2": ["first_research_object"],
        "Second Research Object 2": ["second_research_object"],
        "Validity 2": ["validity"],
        "Evidence 2": ["evidence"],
    },
    "gv2": {"Classifications_2": ["paper_class", "research_level", "all_research_objects", "validity", "evidence"]},
    "gv3": {
        "Paper Class 1": ["paper_class_flattened"],
        "Research Level 1": ["research_level_flattened"],
        "First Research Object 1": ["first_research_object_flattened"],
        "Second Research Object 1": ["second_research_object_flattened"],
        "Validity 1": ["validity_flattened"],
        "Evidence 1": ["evidence_flattened"],
    },
    "gv4": {
        "Classifications_1": ["paper_class_flattened", "research_level_flattened",
                              "first_research_object_flattened", "second_research_object_flattened",
                              "validity_flattened", "evidence_flattened"],
    },
}
DEEP = {"gv1", "gv2"}


# ---------------------------------------------------------------- builder


def _metadata(paper: Paper, s: _Sink) -> tuple[Knowledge, list[Triple]]:
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


def _contributions(paper: Paper, paper_node: Knowledge, variant: str, s: _Sink) -> int:
    """Write the variant's contributions of one paper; returns how many were made."""
    made = 0
    if variant in DEEP:
        deep = deep_blocks(paper)
        for label, names in CONTRIBUTIONS[variant].items():
            blocks = [b for n in names for b in deep[n]]
            if not blocks:
                continue
            contrib = s.node(label, ("Contribution",))
            s.link(paper_node, "contribution", contrib)
            made += 1
            if len(names) == 1 and len(blocks) == 1:  # single block: its wrapper node is dropped
                blocks[0][2](s, contrib)
                continue
            for pred, wrapper, fill in blocks:
                w = s.node(wrapper)
                s.link(contrib, pred, w)
                fill(s, w)
    else:
        flat = flat_blocks(paper)
        for label, names in CONTRIBUTIONS[variant].items():
            blocks = [b for n in names for b in flat[n]]
            if not blocks:
                continue
            contrib = s.node(label, ("Contribution",))
            s.link(paper_node, "contribution", contrib)
            made += 1
            for block in blocks:  # de-duplicated within a block, not across (GV4 keeps both ROs' values)
                for pred, value in block:
                    s.lit(contrib, pred, value)
    return made


def build_variant(papers: list[Paper], variant: str) -> RdfKnowledgeGraph:
    """The graph of one variant (``gv1``…``gv4``) for these papers, with deterministic ids."""
    kg, _ = _build(papers, variant)
    return kg


def _build(papers: list[Paper], variant: str) -> tuple[RdfKnowledgeGraph, dict]:
    if variant not in CONTRIBUTIONS:
        raise InputError(f"unknown graph variant {variant!r} (expected one of {list(VARIANTS)})", field="variant")
    meta = _Sink(_Ids(META_RESOURCE_BASE, META_LITERAL_BASE))
    body = _Sink(_Ids(VARIANT_RESOURCE_BASE[variant], VARIANT_LITERAL_BASE[variant]))
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
