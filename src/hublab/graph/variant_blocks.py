"""The annotation blocks of the graph variants: vocabularies (annotation value → predicate label or literal),
deterministic id minting, and the deep (typed intermediate nodes, Boolean lists) and flat (literals under the
contribution) encodings of each annotation part, plus which blocks each variant's contributions hold."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from hublab.errors import InputError
from hublab.graph.bib import Annotation, Evaluation, Paper, ResearchObject
from hublab.graph.model import Knowledge, Triple

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


_RANGE = 100_000  # ids minted per block of the id space (resources and literals)


class Ids:
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
class Sink:
    """Collects triples in build order and mints ids."""

    ids: Ids
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

DeepBlock = tuple[str, str, Callable[[Sink, Knowledge], None]]
FlatBlock = list[tuple[str, str]]


def _need(values: Iterable[str], vocab: dict, paper: Paper, item: str) -> None:
    for v in values:
        if v not in vocab:
            raise InputError(f"unknown value {v!r} (expected one of {sorted(k for k in vocab if k)})",
                             row=paper.key, field=f"classes.{item}")


def _bool_list(choices: dict, chosen: Iterable[str]) -> Callable[[Sink, Knowledge], None]:
    chosen = set(chosen)

    def fill(s: Sink, node: Knowledge) -> None:
        for value, pred in choices.items():
            s.lit(node, pred, _bool(value in chosen))

    return fill


def _deep_research_object(ro: ResearchObject) -> Callable[[Sink, Knowledge], None]:
    def fill(s: Sink, node: Knowledge) -> None:
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


def _deep_validity(a: Annotation) -> Callable[[Sink, Knowledge], None]:
    def fill(s: Sink, node: Knowledge) -> None:
        ttv = s.node("Threat to Validity")
        s.link(node, "Threats To Validity", ttv)
        _bool_list(THREATS, a.threats)(s, ttv)
        s.lit(node, "Referenced Threats to Validity Guideline", _bool(a.ttv_guideline))

    return fill


def _deep_evidence(a: Annotation, link: str | None) -> Callable[[Sink, Knowledge], None]:
    def fill(s: Sink, node: Knowledge) -> None:
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


def _checked(paper: Paper) -> tuple[Annotation, dict[str, ResearchObject]]:
    """The paper's annotation (its classes, levels and threats checked against the known values) and its research
    objects by ordinal."""
    a = paper.annotation
    _need(a.paper_classes, PAPER_CLASSES, paper, "Meta Data.Paper class")
    _need(a.research_levels, RESEARCH_LEVELS, paper, "Meta Data.Research Level")
    _need(a.threats, THREATS, paper, "Validity.Threats To Validity")
    return a, {ro.ordinal: ro for ro in a.research_objects}


def deep_blocks(paper: Paper) -> dict[str, list[DeepBlock]]:
    a, ros = _checked(paper)
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
    a, ros = _checked(paper)
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
