"""Reader for the annotated ECSA/ICSA bibliography that every graph variant is built from.

On top of the BibTeX reader (:mod:`hublab.graph.bibtex`), a parser for the expert annotation field
``classes = {Meta Data{…}, First Research Object{…}, Validity{…}}`` into :class:`Annotation`.
Errors are :class:`hublab.errors.InputError` naming the file, the entry key and the field.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from hublab.errors import InputError
from hublab.graph.bibtex import BibEntry, latex_to_unicode, read_bib

# ---------------------------------------------------------------- the `classes` annotation syntax


@dataclass(frozen=True)
class Node:
    """One item of the ``classes`` syntax: ``Name`` or ``Name{child, child, …}``."""

    name: str
    children: tuple[Node, ...] = ()

    def child(self, name: str) -> Node | None:
        return next((c for c in self.children if c.name.lower() == name.lower()), None)

    def values(self) -> list[str]:
        return [c.name for c in self.children]


def parse_classes(text: str, *, file: str = "<bib>", key: str = "?") -> list[Node]:
    """Parse the nested ``Name{…}, Name`` list; raises InputError naming the entry and the ``classes`` field."""

    def fail(msg: str, at: int) -> InputError:
        return InputError(f"{msg} at character {at}: …{text[max(0, at - 25):at + 25]}…", file=file, row=key,
                          field="classes")

    pos = 0

    def items(closing: bool) -> list[Node]:
        nonlocal pos
        out: list[Node] = []
        while True:
            start = pos
            while pos < len(text) and text[pos] not in "{},":
                pos += 1
            name = text[start:pos].strip()
            children: tuple[Node, ...] = ()
            if pos < len(text) and text[pos] == "{":
                pos += 1
                children = tuple(items(True))
                if pos >= len(text) or text[pos] != "}":
                    raise fail("missing '}'", pos)
                pos += 1
                while pos < len(text) and text[pos].isspace():
                    pos += 1
            if not name:
                if children or (pos < len(text) and text[pos] == ","):
                    raise fail("empty item name", start)
            else:
                out.append(Node(name, children))
            if pos >= len(text):
                if closing:
                    raise fail("missing '}'", pos)
                return out
            if text[pos] == ",":
                pos += 1
                continue
            if text[pos] == "}":
                if not closing:
                    raise fail("unexpected '}'", pos)
                return out
            raise fail("expected ',' or '}'", pos)

    return items(False)


@dataclass(frozen=True)
class Property:
    """An evaluated property (ISO 25010-style, e.g. Product Quality) and its sub-properties."""

    name: str
    sub_properties: tuple[str, ...] = ()


@dataclass(frozen=True)
class Evaluation:
    """One evaluation of a research object: methods, properties and the guideline flag."""

    ordinal: str  # "First", "Second", …
    methods: tuple[str, ...]
    properties: tuple[Property, ...]
    guideline: bool


@dataclass(frozen=True)
class ResearchObject:
    ordinal: str  # "First" or "Second"
    objects: tuple[str, ...]
    evaluations: tuple[Evaluation, ...]


@dataclass(frozen=True)
class Annotation:
    """The expert annotation of one paper (thesis Table 7.1). Absent items keep their 'none' defaults."""

    paper_classes: tuple[str, ...]
    research_levels: tuple[str, ...]
    kind: tuple[str, ...]
    research_objects: tuple[ResearchObject, ...]
    threats: tuple[str, ...] = ()
    tool_support: str | None = None  # "used" | "available" | None
    input_data: str | None = None  # "used" | "available" | None
    ttv_guideline: bool = False
    replication_package: bool = False


@dataclass(frozen=True)
class Paper:
    """A bibliography paper: metadata plus its annotation (and the evidence-sheet replication link, if any)."""

    key: str
    title: str
    authors: tuple[str, ...]  # as the ORKG stores them (see orkg_author_name)
    full_authors: tuple[str, ...]  # decoded bib names
    year: str
    doi: str
    venue: str  # "ICSA" | "ECSA"
    url: str | None
    annotation: Annotation
    replication_link: str | None = field(default=None)


_ORDINALS = ("First", "Second", "Third", "Fourth", "Fifth")
_EVIDENCE_VALUES = {"used", "available"}


def _ordinal_children(node: Node, suffix: str) -> list[tuple[str, Node]]:
    out = []
    for c in node.children:
        parts = c.name.split(" ", 1)
        if len(parts) == 2 and parts[0] in _ORDINALS and parts[1].lower() == suffix.lower():
            out.append((parts[0], c))
    return sorted(out, key=lambda oc: _ORDINALS.index(oc[0]))


def annotation_from_nodes(nodes: list[Node], *, file: str = "<bib>", key: str = "?") -> Annotation:
    """Turn the parsed ``classes`` tree into an :class:`Annotation`, validating the known item names."""

    def bad(msg: str, sub: str) -> InputError:
        return InputError(msg, file=file, row=key, field=f"classes.{sub}")

    top = {n.name: n for n in nodes}
    allowed_top = {"Meta Data", "Validity"} | {f"{o} Research Object" for o in _ORDINALS}
    for name in top:
        if name not in allowed_top:
            raise bad(f"unknown top-level item {name!r} (expected {sorted(allowed_top)})", name)
    meta = top.get("Meta Data")
    if meta is None:
        raise bad("missing 'Meta Data{…}'", "Meta Data")
    pc = meta.child("Paper class")
    rl = meta.child("Research Level")
    if pc is None or not pc.children:
        raise bad("missing or empty 'Paper class{…}'", "Meta Data.Paper class")
    if rl is None or not rl.children:
        raise bad("missing or empty 'Research Level{…}'", "Meta Data.Research Level")
    kind = meta.child("Kind")

    ros: list[ResearchObject] = []
    for ordinal, ro in _ordinal_children(Node("", tuple(nodes)), "Research Object"):
        where = f"{ordinal} Research Object"
        obj = ro.child("Research Object")
        evals: list[Evaluation] = []
        for ev_ord, ev in _ordinal_children(ro, "Evaluation"):
            ev_where = f"{where}.{ev_ord} Evaluation"
            method = ev.child("Evaluation Method")
            props = ev.child("Properties")
            properties = tuple(Property(p.name, tuple(p.values())) for p in (props.children if props else ()))
            known = {"evaluation method", "properties", "referenced evaluation guideline"}
            for c in ev.children:
                if c.name.lower() not in known:
                    raise bad(f"unknown evaluation item {c.name!r}", f"{ev_where}.{c.name}")
            evals.append(
                Evaluation(ev_ord, tuple(method.values()) if method else (), properties,
                           ev.child("Referenced Evaluation Guideline") is not None)
            )
        for c in ro.children:
            if c.name != "Research Object" and not c.name.endswith(" Evaluation"):
                raise bad(f"unknown research-object item {c.name!r}", f"{where}.{c.name}")
        ros.append(ResearchObject(ordinal, tuple(obj.values()) if obj else (), tuple(evals)))
    if not ros:
        raise bad("missing 'First Research Object{…}'", "First Research Object")

    validity = top.get("Validity") or Node("Validity")
    threats = validity.child("Threats To Validity")
    known_v = {"threats to validity", "tool support", "input data", "referenced threats to validity guideline",
               "replication package"}
    for c in validity.children:
        if c.name.lower() not in known_v:
            raise bad(f"unknown validity item {c.name!r}", f"Validity.{c.name}")

    def evidence(name: str) -> str | None:
        n = validity.child(name)
        if n is None:
            return None
        vals = n.values()
        if len(vals) != 1 or vals[0] not in _EVIDENCE_VALUES:
            raise bad(f"expected {name}{{used}} or {name}{{available}}, got {vals}", f"Validity.{name}")
        return vals[0]

    return Annotation(
        paper_classes=tuple(pc.values()),
        research_levels=tuple(rl.values()),
        kind=tuple(kind.values()) if kind else (),
        research_objects=tuple(ros),
        threats=tuple(threats.values()) if threats else (),
        tool_support=evidence("Tool Support"),
        input_data=evidence("Input Data"),
        ttv_guideline=validity.child("Referenced Threats To Validity Guideline") is not None,
        replication_package=validity.child("Replication Package") is not None,
    )


def _venue(booktitle: str, *, file: str, key: str) -> str:
    found = [v for v in ("ICSA", "ECSA") if re.search(rf"\b{v}\b", booktitle)]
    if len(found) != 1:
        raise InputError(f"cannot tell the venue (ICSA or ECSA) from {booktitle!r}", file=file, row=key,
                         field="booktitle")
    return found[0]


def _split_top(text: str, sep: str | None) -> list[str]:
    """Split at brace depth 0: on whitespace (``sep=None``) or on ``sep``; ``{De Sanctis}`` stays one token."""
    parts, cur, depth = [], [], 0
    for c in text:
        depth += (c == "{") - (c == "}")
        if depth == 0 and ((sep is None and c.isspace()) or c == sep):
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
    parts.append("".join(cur))
    return [p.strip() for p in parts if p.strip()] if sep is None else [p.strip() for p in parts]


def orkg_author_name(raw: str) -> str:
    """The name as the ORKG stored it: first given name + last name, middle names and "von" parts dropped.

    Follows BibTeX's split (``First von Last`` / ``von Last, First``; a braced group is one token):
    "Jan Martijn E. M. van der Werf" → "Jan Werf", "Muhammad Ali Babar" → "Muhammad Babar",
    "Martina {De Sanctis}" and "De Toma, Marco" keep their two-word last names. Checked against the GV3
    export: all 586 author literals match.
    """
    pieces = _split_top(raw, ",")
    if len(pieces) >= 2:
        given = _split_top(pieces[-1], None)
        last = latex_to_unicode(pieces[0])
        return f"{latex_to_unicode(given[0])} {last}" if given else last
    tokens = _split_top(raw, None)
    if len(tokens) <= 1:
        return latex_to_unicode(raw)
    von = [i for i, t in enumerate(tokens[:-1]) if i > 0 and t[:1].islower()]
    last = tokens[von[-1] + 1 :] if von else tokens[-1:]
    return latex_to_unicode(f"{tokens[0]} {' '.join(last)}")


def _authors(raw: str) -> tuple[str, ...]:
    """Decoded full names in bib order; ``Last, First`` becomes ``First Last``."""
    out = []
    for part in re.split(r"\s+and\s+", raw.strip()):
        name = latex_to_unicode(part)
        if "," in name:
            last, first = (s.strip() for s in name.split(",", 1))
            name = f"{first} {last}".strip()
        out.append(name)
    return tuple(out)


def _orkg_authors(raw: str) -> tuple[str, ...]:
    return tuple(orkg_author_name(part) for part in re.split(r"\s+and\s+", raw.strip()))


def paper_from_entry(entry: BibEntry, *, file: str = "<bib>") -> Paper:
    f = entry.fields
    for req in ("title", "author", "year", "doi", "booktitle", "classes"):
        if not f.get(req, "").strip():
            raise InputError("missing or empty field", file=file, row=entry.key, field=req)
    year = f["year"].strip()
    if not re.fullmatch(r"\d{4}", year):
        raise InputError(f"expected a 4-digit year, got {year!r}", file=file, row=entry.key, field="year")
    nodes = parse_classes(f["classes"], file=file, key=entry.key)
    return Paper(
        key=entry.key,
        title=latex_to_unicode(f["title"]),
        authors=_orkg_authors(f["author"]),
        full_authors=_authors(f["author"]),
        year=year,
        doi=latex_to_unicode(f["doi"]),
        venue=_venue(f["booktitle"], file=file, key=entry.key),
        url=latex_to_unicode(f["url"]) if f.get("url") else None,
        annotation=annotation_from_nodes(nodes, file=file, key=entry.key),
    )


def read_papers(path: str | Path) -> list[Paper]:
    """Every paper of the annotated bibliography, in file order."""
    file = str(path)
    return [paper_from_entry(e, file=file) for e in read_bib(path)]
