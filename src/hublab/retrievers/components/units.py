"""Retrieval units (the corpus) shared by the dense and lexical methods (DiFaR, VSS, BM25, hybrid, 4StepFocus).

A *unit* is what gets embedded or tokenised: a triple (its canonical string) or a node document
(STaRK's ``get_doc_info``: the node's label plus, optionally, its relations). Units are rebuilt
deterministically from the graph, so an index only needs to store the unit position and a content hash.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, overload

import numpy as np

from hublab.graph.base import PAPER_TYPE, KnowledgeGraph
from hublab.graph.model import Knowledge, Triple
from hublab.retrievers.base import Context
from hublab.retrievers.components.unit_text import (
    DEFAULT_CONTEXT,
    DEFAULT_TRIPLE_TEXT,
    PaperOf,
    unit_text,
    with_context,
)


@dataclass
class Unit:
    key: str  # unique within a corpus (triple text + paper, or node id)
    text: str  # embedded / tokenised text
    triple: Triple | None = None
    node_id: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    def to_context(self, score: float | None = None) -> Context:
        if self.triple is not None:
            return Context(self.triple.render(), self.triple, score, dict(self.meta))
        return Context(self.text, None, score, {"node_id": self.node_id, **self.meta})


def content_hash(texts: Iterable[str], *parts: str) -> str:
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode("utf-8"))
        h.update(b"\x00")
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x01")
    return h.hexdigest()


def answer_types(graph: KnowledgeGraph, explicit: list[str] | None) -> list[str] | None:
    """The node types a node-level method ranks: the pipeline's list, else the graph's own candidate set."""
    return list(explicit) if explicit else (list(graph.candidate_types or []) or None)


# ---------------------------------------------------------------- triples
def triple_units(triples: Iterable[Triple], *, graph: KnowledgeGraph | None = None,
                 triple_text: str = DEFAULT_TRIPLE_TEXT, context: str = DEFAULT_CONTEXT) -> list[Unit]:
    """One unit per distinct triple string (graph order); its text is the representation asked for
    (:mod:`~hublab.retrievers.components.unit_text`; ``graph`` finds a triple's paper for ``context: paper``)."""
    papers = PaperOf(graph) if graph is not None and context != "none" else None
    seen: set[str] = set()
    out: list[Unit] = []
    for t in triples:
        key = t.render()
        if key in seen:
            continue
        seen.add(key)
        out.append(Unit(key, unit_text(t, triple_text, context, papers), t))
    return out


def graph_triple_units(graph: KnowledgeGraph, *, triple_text: str = DEFAULT_TRIPLE_TEXT,
                       context: str = DEFAULT_CONTEXT) -> Sequence[Unit]:
    """The graph's triple corpus (:func:`triple_units` over every triple): a list, or, on a graph kept on disk
    (``random_access``), :class:`StoredTripleUnits`, the same units made when read, so that a corpus of millions
    of triples is held as one integer each."""
    if graph.random_access:
        return StoredTripleUnits(graph, triple_text=triple_text, context=context)
    return triple_units(graph.triples(), graph=graph, triple_text=triple_text, context=context)


#: triples read at a time when a stored corpus is iterated or sliced
_PAGE = 4096


class _UnitsMadeWhenRead(Sequence[Unit]):
    """A corpus that holds one key a unit (``keys``: triple positions, node ids) and makes units when they are read;
    iteration and slices make a page of :data:`_PAGE` at a time."""

    keys: Sequence[Any]

    def _units(self, keys: Sequence[Any]) -> list[Unit]:
        raise NotImplementedError

    def __len__(self) -> int:
        return len(self.keys)

    @overload
    def __getitem__(self, i: int) -> Unit: ...

    @overload
    def __getitem__(self, i: slice) -> list[Unit]: ...

    def __getitem__(self, i: int | slice) -> Unit | list[Unit]:
        if isinstance(i, slice):
            return self._units(self.keys[i])
        j = range(len(self))[i]  # IndexError past either end
        return self._units(self.keys[j : j + 1])[0]

    def __iter__(self) -> Iterator[Unit]:
        for start in range(0, len(self), _PAGE):
            yield from self._units(self.keys[start : start + _PAGE])


class StoredTripleUnits(_UnitsMadeWhenRead):
    """:func:`triple_units` of a ``random_access`` graph, equal unit for unit, holding only each unit's triple
    position: one pass finds the first occurrence of each triple string (by a 64-bit hash; strings whose hashes
    meet are compared whole), and a unit is made from its triple when read."""

    def __init__(self, graph: KnowledgeGraph, *, triple_text: str = DEFAULT_TRIPLE_TEXT,
                 context: str = DEFAULT_CONTEXT) -> None:
        self.graph, self.triple_text, self.context = graph, triple_text, context
        self._papers = PaperOf(graph) if context != "none" else None
        self.keys = _first_occurrences(graph)

    def _units(self, keys: Sequence[Any]) -> list[Unit]:
        triples = self.graph.triples_at(np.asarray(keys).tolist())
        return [Unit(t.render(), unit_text(t, self.triple_text, self.context, self._papers), t) for t in triples]


def _first_occurrences(graph: KnowledgeGraph) -> np.ndarray:
    """Positions of the triples whose rendered string has not occurred before, ascending."""
    hashes = np.fromiter((_hash64(t.render()) for t in graph.triples()), dtype=np.int64)
    order = np.argsort(hashes, kind="stable")
    ranked = hashes[order]
    shared = np.zeros(len(ranked), dtype=bool)  # a hash that occurs more than once: compare the strings
    same = ranked[1:] == ranked[:-1]
    shared[1:] |= same
    shared[:-1] |= same
    keep = np.ones(len(hashes), dtype=bool)
    if shared.any():
        suspects = np.sort(order[shared])
        seen: set[str] = set()
        for pos, t in zip(suspects.tolist(), graph.triples_at(suspects.tolist()), strict=True):
            key = t.render()
            keep[pos] = key not in seen
            seen.add(key)
    return np.flatnonzero(keep)


def _hash64(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little", signed=True)


def paper_subgraph(
    graph: KnowledgeGraph,
    paper: Knowledge,
    *,
    stop_ids: set[str],
    max_depth: int = 10,
    max_in_degree: int = 25,
    paper_type: str = PAPER_TYPE,
) -> list[Triple]:
    """Triples around one paper, following edges in both directions (DiFaR indexing, framework spec §11.2).

    Traversal never continues through the root entities, through other papers, or against the
    direction out of a shared hub (in-degree above ``max_in_degree``: venues, research fields), so one
    paper's subgraph does not swallow its neighbours'. Triples touching another paper are kept only when
    they hang directly off this paper (e.g. ``cites``).
    """
    out: list[Triple] = []
    seen_triples: set[tuple[str, str, str]] = set()
    seen = {paper.uid}
    frontier = [paper.uid]
    for _ in range(max_depth):
        nxt: list[str] = []
        for node in frontier:
            incoming = graph.incoming(node)
            hub = node != paper.uid and len(incoming) > max_in_degree
            pairs = [(t, t.object) for t in graph.outgoing(node)]
            if not hub:
                pairs += [(t, t.subject) for t in incoming]
            for t, other in pairs:
                other_is_paper = paper_type in other.types and other.uid != paper.uid
                if other_is_paper and node != paper.uid:
                    continue
                key = (t.subject.uid, t.predicate, t.object.uid)
                if key not in seen_triples:
                    seen_triples.add(key)
                    out.append(t)
                if other.uid in seen or other.uid in stop_ids or other_is_paper:
                    continue
                seen.add(other.uid)
                nxt.append(other.uid)
        frontier = nxt
        if not frontier:
            break
    return out


def papers_under(graph: KnowledgeGraph, root_ids: list[str], paper_type: str = PAPER_TYPE) -> list[Knowledge]:
    """The papers adjacent to the indexing roots (both directions), in stable order."""
    papers: dict[str, Knowledge] = {}
    for root in root_ids:
        for t in graph.neighbours(root):
            other = t.subject if t.object.uid == root else t.object
            if paper_type in other.types:
                papers.setdefault(other.uid, other)
    return list(papers.values())


def paper_triple_units(
    graph: KnowledgeGraph,
    root_ids: list[str],
    *,
    max_depth: int = 10,
    max_in_degree: int = 25,
    triple_text: str = DEFAULT_TRIPLE_TEXT,
    context: str = DEFAULT_CONTEXT,
) -> list[Unit]:
    """DiFaR's corpus: every triple of every paper subgraph, deduplicated by (triple string, paper); a unit's text
    is the representation asked for, its context the paper whose subgraph holds it."""
    stop = set(root_ids)
    units: list[Unit] = []
    seen: set[str] = set()
    for paper in papers_under(graph, root_ids):
        for t in paper_subgraph(graph, paper, stop_ids=stop, max_depth=max_depth, max_in_degree=max_in_degree):
            text = t.render()
            key = f"{text}\x00{paper.uid}"
            if key in seen:
                continue
            seen.add(key)
            units.append(Unit(key, unit_text(t, triple_text, context, None, paper), t,
                              meta={"paper_id": paper.uid, "paper_title": paper.text}))
    return units


# ---------------------------------------------------------------- nodes
def node_document(graph: KnowledgeGraph, ent: Knowledge, *, add_rel: bool = True, max_rel: int = 30) -> str:
    """A node's text (its document if the graph has one, else its label) plus its relations."""
    base = graph.document(ent.uid)
    types = ", ".join(ent.types)
    text = base or (f"{ent.text} ({types})" if types else ent.text)
    if not add_rel:
        return text
    rels: list[str] = []
    for t in graph.outgoing(ent.uid)[:max_rel]:
        rels.append(f"{t.predicate}: {t.object.text}")
    for t in graph.incoming(ent.uid)[: max(0, max_rel - len(rels))]:
        rels.append(f"{t.predicate} of: {t.subject.text}")
    return text + ("\nrelations: " + "; ".join(rels) if rels else "")


def _node_pool(graph: KnowledgeGraph, types: list[str] | None, skip_literals: bool) -> Iterator[Knowledge]:
    """The candidate nodes in corpus order: those of ``types`` (each node once, at its first type), else every node;
    literals left out unless the graph answers with nodes."""
    if types:
        ents: dict[str, Knowledge] = {}
        for ty in types:
            for e in graph.entities_by_type(ty):
                ents.setdefault(e.uid, e)
        pool: Iterable[Knowledge] = ents.values()
    else:
        pool = graph.entities()
    for e in pool:
        if not (skip_literals and e.is_literal and not graph.answers_with_nodes):
            yield e


def _node_unit(graph: KnowledgeGraph, e: Knowledge, add_rel: bool, context: str, papers: PaperOf | None) -> Unit:
    text = node_document(graph, e, add_rel=add_rel)
    if papers is not None:
        text = with_context(text, context, papers.node(e.uid))
    return Unit(e.uid, text, node_id=e.uid, meta={"label": e.text})


def node_units(
    graph: KnowledgeGraph,
    *,
    types: list[str] | None = None,
    add_rel: bool = True,
    skip_literals: bool = True,
    context: str = DEFAULT_CONTEXT,
) -> list[Unit]:
    """One unit per candidate node (optionally restricted to node types, STaRK's candidate set); ``context:
    paper`` appends the title of the paper the node belongs to."""
    papers = PaperOf(graph) if context != "none" else None
    return [_node_unit(graph, e, add_rel, context, papers) for e in _node_pool(graph, types, skip_literals)]


def graph_node_units(graph: KnowledgeGraph, *, types: list[str] | None = None, add_rel: bool = True,
                     context: str = DEFAULT_CONTEXT) -> Sequence[Unit]:
    """The graph's node corpus (:func:`node_units`): a list, or, on a graph kept on disk (``random_access``),
    :class:`StoredNodeUnits`, the same units made when read, so that a million node documents are not held as
    text while they are embedded."""
    if graph.random_access:
        return StoredNodeUnits(graph, types=types, add_rel=add_rel, context=context)
    return node_units(graph, types=types, add_rel=add_rel, context=context)


class StoredNodeUnits(_UnitsMadeWhenRead):
    """:func:`node_units` of a ``random_access`` graph, equal unit for unit, holding only each unit's node id: a
    unit's document is written from the graph when the unit is read."""

    def __init__(self, graph: KnowledgeGraph, *, types: list[str] | None = None, add_rel: bool = True,
                 context: str = DEFAULT_CONTEXT) -> None:
        self.graph, self.add_rel, self.context = graph, add_rel, context
        self._papers = PaperOf(graph) if context != "none" else None
        self.keys = [e.uid for e in _node_pool(graph, types, skip_literals=True)]

    def _units(self, keys: Sequence[Any]) -> list[Unit]:
        out = []
        for uid in keys:
            e = self.graph.entity(uid)
            if e is None:  # the store changed under the corpus: never a unit made up
                raise LookupError(f"node {uid} is no longer in graph {self.graph.name}")
            out.append(_node_unit(self.graph, e, self.add_rel, self.context, self._papers))
        return out


def node_result_contexts(
    graph: KnowledgeGraph, ranked: list[tuple[Unit, float]], n_results: int, *, expand_triples: bool
) -> list[Context]:
    """Node hits as contexts: as nodes (STaRK) or expanded to each node's triples (ORKG metrics)."""
    if not expand_triples:
        return [u.to_context(s) for u, s in ranked[:n_results]]
    out: list[Context] = []
    seen: set[str] = set()
    for u, s in ranked:
        for t in graph.outgoing(u.node_id or u.key) + graph.incoming(u.node_id or u.key):
            text = t.render()
            if text in seen:
                continue
            seen.add(text)
            out.append(Context(text, t, s, {"node_id": u.node_id}))
            if len(out) >= n_results:
                return out
    return out
