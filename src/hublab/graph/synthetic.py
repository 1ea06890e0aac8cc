"""ORKG-shaped graphs at any size, for scale benchmarks: every paper subgraph of a real graph (GV1–GV4 or the
ORKG export) is replicated ``factor`` times with fresh ids, so the schema, the per-paper shape and the value
distributions are exactly the real graph's; shared nodes (research field, venues, classes) stay shared, and
each copy's title gets a copy number so hub texts stay distinct (as distinct papers' are)."""

from __future__ import annotations

from hublab.graph.base import PAPER_TYPE, KnowledgeGraph
from hublab.graph.model import Knowledge, Triple
from hublab.graph.rdf import RdfKnowledgeGraph


def paper_owned_nodes(graph: KnowledgeGraph, paper: str) -> set[str]:
    """Nodes reachable from the paper along edge direction without passing another paper or a node that other
    papers also reach (venues, the research field): what a copy of the paper must duplicate."""
    owned = {paper}
    stack = [paper]
    while stack:
        node = stack.pop()
        for t in graph.outgoing(node):
            o = t.object
            if o.uid in owned or PAPER_TYPE in o.types:
                continue
            if len({s.subject.uid for s in graph.incoming(o.uid)}) > 1:
                continue  # shared with other nodes (venue, research field, a class): keep shared
            owned.add(o.uid)
            stack.append(o.uid)
    return owned


def replicate(graph: KnowledgeGraph, factor: int, *, name: str | None = None) -> RdfKnowledgeGraph:
    """``factor`` × the papers of ``graph`` (factor 1 returns an equal copy)."""
    if factor < 1:
        raise ValueError("factor must be >= 1")
    papers = sorted(e.uid for e in graph.entities_by_type(PAPER_TYPE))
    owned = {p: paper_owned_nodes(graph, p) for p in papers}
    owner = {n: p for p, nodes in owned.items() for n in nodes}
    triples = list(graph.triples())
    out: list[Triple] = []
    for c in range(factor):

        def node(k: Knowledge, c: int = c) -> Knowledge:
            if c == 0 or k.uid not in owner:
                return k
            text = f"{k.text} (copy {c})" if k.uid == owner[k.uid] else k.text
            return Knowledge(f"{k.uid}x{c}", text, k.types)

        for t in triples:
            if c > 0 and t.subject.uid not in owner and t.object.uid not in owner:
                continue  # triples between shared nodes exist once
            out.append(Triple(node(t.subject), t.predicate, node(t.object)))
    return RdfKnowledgeGraph.from_triples(out, name=name or f"{graph.name}_x{factor}")
