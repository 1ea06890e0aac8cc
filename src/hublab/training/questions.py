"""Training questions generated from the graph itself (never from the KGQA benchmark files).

Like the thesis's QA generator (§7.x: templates with placeholders filled from graph data), every question is a
natural-language template filled with labels from one hub path of a paper: a lookup *by title* ("What is the
evaluation method of 'T'?"), *by value* ("Which papers use the evaluation method Case Study?"), by year, venue,
author, DOI, a boolean classification, or a value constrained by the paper's year. The positive text is the text
HubLink embeds for that path (``path_to_text``) or for its last triple (``triple_text``), produced by HubLink's
own functions, so the fine-tuned model learns exactly the question → index-text mapping retrieval needs.

Deterministic: one ``random.Random`` per (seed, graph, paper) picks the phrasings, so the output depends only on
the graph and the seed (not on iteration order elsewhere). ``split_by_paper`` holds out whole papers, keyed by
their normalised title, so the same paper in two graph variants lands on the same side.
"""

from __future__ import annotations

import random
from collections.abc import Iterable

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple
from hublab.retrievers.methods.hublink.hubs import HubDetector, hub_paths
from hublab.retrievers.methods.hublink.text import path_to_text, triple_text
from hublab.training.pairs import TrainPair, paper_key

#: Predicates that carry no meaning of their own (list/entity plumbing); the attribute a question names is the
#: nearest informative predicate above them on the path.
GENERIC_PREDICATES = frozenset({"name", "has list element", "entity", "object", "none", "label"})
#: Container predicates that do not qualify a boolean classification below them.
CONTAINER_PREDICATES = frozenset({"contribution", "evaluation", "properties"})
BOOLEAN_VALUES = frozenset({"true", "false"})


def attribute(triples: tuple[Triple, ...]) -> str:
    """The attribute a question about this path names: the nearest informative predicate to the leaf; for a
    boolean leaf under a qualifying node (``Uses Input Data …; available True``) both predicates."""
    leaf = triples[-1]
    if leaf.object.text.strip().lower() in BOOLEAN_VALUES and len(triples) >= 2:
        parent = triples[-2].predicate
        if parent.lower() not in CONTAINER_PREDICATES | GENERIC_PREDICATES:
            return f"{parent} {leaf.predicate}"
        return leaf.predicate
    for t in reversed(triples):
        if t.predicate.strip().lower() not in GENERIC_PREDICATES:
            return t.predicate
    return leaf.predicate


def _q(title: str, rng: random.Random) -> str:
    return rng.choice([f"'{title}'", f'"{title}"', title, f"the paper '{title}'", f"the publication {title}"])


# Templates: (kind, direction, format). ``{t}`` title (quoted by _q), ``{a}`` attribute, ``{v}`` value, ``{y}`` year.
Template = tuple[str, str, str]
YEAR: list[Template] = [
    ("year", "by_title", "In which year was {t} published?"),
    ("year", "by_title", "What is the publication year of {t}?"),
    ("year", "by_value", "Which papers were published in {v}?"),
    ("year", "by_value", "List the publications from the year {v}."),
]
VENUE: list[Template] = [
    ("venue", "by_title", "At which venue was {t} published?"),
    ("venue", "by_title", "Where did {t} appear?"),
    ("venue", "by_value", "Which papers were published at {v}?"),
    ("venue", "by_value", "Find publications that appeared in the venue {v}."),
]
AUTHOR: list[Template] = [
    ("author", "by_title", "List the authors of {t}."),
    ("author", "by_title", "Who wrote {t}?"),
    ("author", "by_value", "Which papers did {v} write?"),
    ("author", "by_value", "List the publications authored by {v}."),
]
DOI: list[Template] = [
    ("doi", "by_title", "What is the DOI of {t}?"),
    ("doi", "by_value", "Which paper has the DOI {v}?"),
]
FIELD: list[Template] = [
    ("research_field", "by_title", "Which research field does {t} belong to?"),
]
BOOLEAN: list[Template] = [
    ("boolean", "by_title", "Is {t} classified as {a}?"),
    ("boolean", "by_title", "What does {t} state about {a}?"),
    ("boolean", "by_value_true", "Which papers are marked as {a}?"),
    ("boolean", "by_value_true", "Find publications where {a} is true."),
]
PROPERTY: list[Template] = [
    ("property", "by_title", "What {a} does {t} report?"),
    ("property", "by_title", "Which {a} is described in {t}?"),
    ("property", "by_value", "Which papers have the {a} {v}?"),
    ("property", "by_value", "Find publications whose {a} is {v}."),
    ("property", "by_value", "List papers that use {v} as {a}."),
    ("property", "by_value_year", "Which papers from {y} have the {a} {v}?"),
]
_BY_PREDICATE: dict[str, list[Template]] = {
    "publication year": YEAR, "year": YEAR, "venue": VENUE, "authors": AUTHOR, "author": AUTHOR,
    "doi": DOI, "research field": FIELD,
}


def _templates(triples: tuple[Triple, ...]) -> list[Template]:
    first = triples[0].predicate.strip().lower()
    if first in _BY_PREDICATE:
        return _BY_PREDICATE[first]
    if triples[-1].object.text.strip().lower() in BOOLEAN_VALUES:
        return BOOLEAN
    return PROPERTY


def _paper_year(graph: KnowledgeGraph, paper: str) -> str | None:
    for t in graph.outgoing(paper):
        if t.predicate.strip().lower() in ("publication year", "year"):
            return t.object.text
    return None


def generate_pairs(graph: KnowledgeGraph, *, seed: int = 0, hub_types: Iterable[str] = ("Paper",),
                   phrasings_per_path: int = 2, triple_share: float = 0.25, false_drop: float = 0.5,
                   max_hub_path_length: int = -1) -> list[TrainPair]:
    """(question, positive) pairs for every hub path of every hub of ``graph`` (sorted, deduplicated).

    Per path, ``phrasings_per_path`` different templates of its kind are filled; with probability
    ``triple_share`` a question that does not name the paper gets the path's last triple as positive (as HubLink's
    triple level embeds it), else the path text. A boolean ``False`` leaf (GV1/GV2's unchecked choices) is skipped
    with probability ``false_drop`` and gets one phrasing.
    """
    detector = HubDetector(graph, list(hub_types))
    roots = sorted({e.uid for t in detector.hub_types for e in graph.entities_by_type(t)})
    out: set[TrainPair] = set()
    for root in roots:
        title = graph.label(root) or root
        key = paper_key(title)
        rng = random.Random(f"{seed}\0{graph.name}\0{root}")
        year = _paper_year(graph, root)
        for hp in hub_paths(graph, detector, root, max_hub_path_length):
            triples = hp.triples
            value = triples[-1].object.text.strip()
            if not value:
                continue
            temps = [t for t in _templates(triples) if t[1] != "by_value_true" or value.lower() == "true"]
            if year is None:
                temps = [t for t in temps if t[1] != "by_value_year"]
            n = phrasings_per_path
            if value.lower() == "false":  # GV1/GV2 store every unchecked choice: keep them from dominating
                if rng.random() < false_drop:
                    continue
                n = 1
            attr = attribute(triples)
            for kind, direction, fmt in rng.sample(temps, min(n, len(temps))):
                question = fmt.format(t=_q(title, rng), a=attr, v=value, y=year)
                # the triple level holds no title: a triple positive only for questions that do not name the paper
                use_triple = (direction != "by_title" or len(triples) == 1) and rng.random() < triple_share
                positive = triple_text(triples[-1]) if use_triple else path_to_text(triples)
                out.add(TrainPair(question, positive, key, f"{kind}:{direction}", graph.name))
    return sorted(out, key=lambda p: (p.graph, p.paper, p.question, p.positive))
