"""What a graph holds, on one screen (``hublab graph check``), and the checks that use it: a hub type with no
instances, and the triples matching a text (``hublab graph find``) in both forms a dataset may use."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from hublab.graph.base import KnowledgeGraph
from hublab.graph.edges import EdgeTable, literal_predicates
from hublab.graph.model import Triple
from hublab.graph.vocabulary import local_name

#: local names of predicates that state a class in common vocabularies: Wikidata's P31 ("instance of"),
#: ``dcterms:type``, ``schema:additionalType``, and ``instanceOf`` as ontologies spell it (compared case-folded)
TYPE_LIKE_NAMES = frozenset({"p31", "type", "additionaltype", "instanceof"})


@dataclass(frozen=True)
class TypeCount:
    name: str
    instances: int
    out_triples: int  #: triples whose subject is an instance


def type_counts(kg: KnowledgeGraph) -> list[TypeCount]:
    """Every node type with its number of instances and of their outgoing triples, most instances first (ties by
    name, so the list is the same on every machine)."""
    return sorted((TypeCount(t, n, out) for t, (n, out) in kg.type_counts().items()),
                  key=lambda c: (-c.instances, c.name))


def suggested_hub_types(counts: list[TypeCount], n: int = 3) -> list[TypeCount]:
    """Types whose instances carry the most structure: at least two instances, ranked by the triples hanging off
    them (a paper, a dataset, a software project: the roots of the subgraphs a question is about)."""
    rich = [c for c in counts if c.instances >= 2 and c.out_triples >= 2 * c.instances]
    return sorted(rich, key=lambda c: (-c.out_triples, c.name))[:n]


def hub_type_problem(kg: KnowledgeGraph, hub_types: list[str], graph_shown: str) -> str | None:
    """Why these hub types cannot work on ``kg`` (a type with no instances), naming the graph's ten most frequent
    types with their counts; None when every type has instances."""
    empty = [t for t in hub_types if not kg.entities_by_type(t)]
    if not empty:
        return None
    top = type_counts(kg)[:10]
    untyped = "none: the graph has no rdf:type statements (types by another predicate: --type-predicate IRI)"
    listed = "; ".join(f"{c.name} ({c.instances})" for c in top) or untyped
    return (f"hub type {', '.join(map(repr, empty))} has no instances in graph {graph_shown}; its most frequent "
            f"types: {listed}. Give one with --hub-type IRI (hublab graph check suggests some)")


@dataclass(frozen=True)
class GraphProfile:
    triples: int
    entities: int
    literals: int
    labelled: int  #: non-literal nodes with a label from a label predicate
    types: list[TypeCount]
    suggested: list[TypeCount]

    @property
    def label_coverage(self) -> float:
        nodes = self.entities - self.literals
        return self.labelled / nodes if nodes else 1.0


def profile(kg: KnowledgeGraph) -> GraphProfile:
    nodes, literals, labelled = kg.node_counts()
    counts = type_counts(kg)
    return GraphProfile(len(kg), nodes, literals, labelled, counts, suggested_hub_types(counts))


def label_candidates(kg: KnowledgeGraph, top: int = 3, *, table: EdgeTable | None = None) -> list[tuple[str, int]]:
    """The predicates whose literal objects could label the nodes that have no label from a label predicate:
    ``(predicate IRI, unlabelled nodes that carry it)``, most nodes first, ties by IRI; [] for a graph that cannot
    tell labelled nodes apart. ``table``: ``kg.edge_table()`` when the caller already has it."""
    t = table if table is not None else kg.edge_table()
    if t.labelled is None:
        return []
    names, carrying, _once = literal_predicates(t, ~t.literal & ~t.labelled)
    iri_of = getattr(kg, "predicate_iri_of", None)
    named = [(str((iri_of(p) if iri_of else None) or p), int(n)) for p, n in zip(names, carrying, strict=True) if n]
    return sorted(named, key=lambda x: (-x[1], x[0]))[:top]


@dataclass(frozen=True)
class TypeCandidate:
    """A predicate whose IRI objects may be its subjects' classes (``hublab graph check`` on an untyped graph)."""

    predicate: str  #: the predicate's IRI (or its label, on a graph that cannot tell the IRI)
    typed_nodes: int  #: distinct subjects the predicate would type
    classes: int  #: distinct IRI objects: the classes it would name
    named: bool  #: its local name is a type predicate's in a common vocabulary (:data:`TYPE_LIKE_NAMES`)


def type_candidates(kg: KnowledgeGraph, top: int = 3, *, table: EdgeTable | None = None) -> list[TypeCandidate]:
    """The predicates that could be a graph's type predicates (``--type-predicate``) when it has no typed node: those
    linking a node to an IRI whose local name is a type predicate's (P31, type, additionalType, instanceOf), and those
    whose few objects are shared by many subjects (at least two subjects per distinct object, as classes are).
    Counted on the graph's integer edge table (:mod:`hublab.graph.edges`), never its Python objects: a graph kept on
    disk is typed in one pass over its arrays whatever its size.

    Args:
        kg: the graph as read with its current type predicates (a type predicate's statements are no triples).
        top: at most this many candidates.
        table: ``kg.edge_table()`` when the caller already has it.

    Returns:
        The candidates, named ones first, then by the nodes they would type (most first), ties by IRI: the same
        list on every machine.
    """
    t = table if table is not None else kg.edge_table()
    names, label_of = t.predicate_labels()
    edges = np.flatnonzero(~(t.literal[t.s] | t.literal[t.o]))
    labels = label_of[t.p[edges]] if len(t.predicates) else np.empty(0, dtype=np.int64)
    n = max(t.n_nodes, 1)

    def distinct(ends: np.ndarray) -> np.ndarray:  # per label: its distinct subjects (or objects)
        return np.bincount(np.unique(labels * n + ends[edges]) // n, minlength=len(names))

    subjects, objects = distinct(t.s), distinct(t.o)
    iri_of = getattr(kg, "predicate_iri_of", None)
    found = []
    for i in np.flatnonzero(subjects).tolist():
        subs, objs = int(subjects[i]), int(objects[i])
        iri = str((iri_of(names[i]) if iri_of else None) or names[i])
        named = local_name(iri).casefold() in TYPE_LIKE_NAMES
        if named or (subs >= 2 and 2 * objs <= subs):
            found.append(TypeCandidate(iri, subs, objs, named))
    return sorted(found, key=lambda c: (not c.named, -c.typed_nodes, c.predicate))[:top]


def find_triples(kg: KnowledgeGraph, text: str, limit: int = 20) -> list[Triple]:
    """Triples whose subject, predicate or object label contains ``text`` (case-insensitive), in the graph's order."""
    needle = text.casefold()
    out: list[Triple] = []
    for t in kg.triples():
        if needle in t.subject.text.casefold() or needle in t.predicate.casefold() or \
                needle in t.object.text.casefold():
            out.append(t)
            if len(out) >= limit:
                break
    return out
