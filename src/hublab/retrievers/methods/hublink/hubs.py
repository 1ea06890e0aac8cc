"""Hubs (thesis §4.2-4.4): hub roots chosen by type, and hub paths from a root along edge direction.

A hub path starts at its root, never revisits a node, and stops at a leaf, at another hub root (the
edge into it is kept) or at the maximum path length.

Two hub-root searches live here: ``HubRootFinder`` is the thesis's FINDHUBROOTS (Alg. 1) with
``EntityWithDirection`` walkers, used by the graph-traversal strategy (Alg. 14/15); ``find_hub_roots``
is the undirected level-by-level search used only to decide which hubs the index covers (a superset of
what any directed walk reaches, so the index is unchanged by the traversal's direction rules).
"""

from __future__ import annotations

import hashlib
from collections import deque
from dataclasses import dataclass

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple


@dataclass(frozen=True)
class HubPath:
    root: str
    triples: tuple[Triple, ...]

    @property
    def hash(self) -> str:
        return path_hash(self.triples)

    def rendered(self) -> list[str]:
        return [t.render() for t in self.triples]


def path_hash(triples: tuple[Triple, ...] | list[Triple]) -> str:
    return hashlib.sha256("\n".join(t.render() for t in triples).encode()).hexdigest()[:24]


class HubDetector:
    """``isHubRoot``: type-based (the thesis's choice, ORKG type *Paper*)."""

    def __init__(self, graph: KnowledgeGraph, hub_types: list[str]) -> None:
        self.graph = graph
        self.hub_types = set(hub_types)

    def is_hub_root(self, uid: str) -> bool:
        ent = self.graph.entity(uid)
        return ent is not None and bool(self.hub_types & set(ent.types))


@dataclass(frozen=True)
class EntityWithDirection:
    """Thesis data model (Fig. 4.4): an entity, the direction a walk takes from it (``left`` = against edge
    direction, to subjects; right = along it, to objects) and the directed triple path from the topic entity
    to it (``PathToEntity``)."""

    uid: str
    left: bool
    path: tuple[Triple, ...] = ()


class HubRootFinder:
    """FINDHUBROOTS (Alg. 1). ``visited`` holds (entity, direction) pairs and persists across calls, so one
    finder is created per retrieval (the thesis: "initializing the class for each new retrieval").

    A walker keeps its direction: a right walker follows outgoing edges to objects, a left walker incoming
    edges to subjects. A hub root reached by a right walker ends that walk (its content is its hub paths,
    built along edge direction); a left walker records it and walks on. ``uniform_hop_count``: neighbours go
    to ``next_entities`` (one hop per retrieval level; thesis pseudocode and the original default) instead of
    being queued within the same call.
    """

    def __init__(self, graph: KnowledgeGraph, detector: HubDetector) -> None:
        self.graph = graph
        self.detector = detector
        self.visited: set[tuple[str, bool]] = set()

    def _adjacent(self, e: EntityWithDirection) -> list[EntityWithDirection]:
        if e.left:
            return [EntityWithDirection(t.subject.uid, True, e.path + (t,))
                    for t in self.graph.incoming(e.uid) if t.subject.uid != e.uid]
        return [EntityWithDirection(t.object.uid, False, e.path + (t,))
                for t in self.graph.outgoing(e.uid) if t.object.uid != e.uid]

    def find(self, entities: list[EntityWithDirection], *, uniform_hop_count: bool = True,
             ) -> tuple[list[EntityWithDirection], list[EntityWithDirection]]:
        queue = deque(e for e in entities if self.graph.entity(e.uid) is not None)
        hub_roots: list[EntityWithDirection] = []
        found: set[str] = set()
        next_entities: list[EntityWithDirection] = []
        while queue:
            e = queue.popleft()
            key = (e.uid, e.left)
            if key in self.visited:
                continue
            self.visited.add(key)
            is_root = self.detector.is_hub_root(e.uid)
            if is_root and e.uid not in found:  # one hub per entity, whichever walker reached it first
                found.add(e.uid)
                hub_roots.append(e)
            if is_root and not e.left:
                continue
            adjacent = self._adjacent(e)
            if uniform_hop_count:
                next_entities.extend(adjacent)
            else:
                queue.extend(adjacent)
        return hub_roots, next_entities


def find_hub_roots(graph: KnowledgeGraph, detector: HubDetector, start: list[str], *,
                   max_levels: int = 1) -> list[list[str]]:
    """Hub roots reachable from ``start`` level by level, undirected (used for the index's hub set only).

    A start entity that is itself a hub root is level 1. Otherwise BFS over incoming and outgoing edges;
    the search does not pass *through* a hub root (its content is its hub paths). Returns one list of
    hub roots per level (level = how many hub layers away), stopping after ``max_levels`` levels.
    """
    levels: list[list[str]] = []
    visited: set[str] = set()
    frontier = [s for s in start if graph.entity(s) is not None]
    for _ in range(max_levels):
        roots: list[str] = []
        next_frontier: list[str] = []
        queue = deque(frontier)
        seen_here = set(frontier)
        while queue:
            node = queue.popleft()
            if node in visited:
                continue
            visited.add(node)
            if detector.is_hub_root(node):
                roots.append(node)
                next_frontier.append(node)
                continue
            for t in graph.neighbours(node):
                other = t.object.uid if t.subject.uid == node else t.subject.uid
                if other not in visited and other not in seen_here:
                    seen_here.add(other)
                    queue.append(other)
        if not roots:
            break
        levels.append(roots)
        # next level: neighbours of this level's hubs that are not inside them
        frontier = []
        for r in next_frontier:
            for t in graph.neighbours(r):
                other = t.object.uid if t.subject.uid == r else t.subject.uid
                if other not in visited:
                    frontier.append(other)
        if not frontier:
            break
    return levels


def all_hub_roots(graph: KnowledgeGraph, detector: HubDetector, start: list[str]) -> list[str]:
    """Every hub root reachable from the start entities (indexing), in a stable order."""
    roots: list[str] = []
    seen: set[str] = set()
    for level in find_hub_roots(graph, detector, start, max_levels=10_000):
        for r in level:
            if r not in seen:
                seen.add(r)
                roots.append(r)
    if not roots:  # start entities unknown: fall back to every node of a hub type
        roots = sorted({e.uid for t in detector.hub_types for e in graph.entities_by_type(t)})
    return roots


def hub_paths(graph: KnowledgeGraph, detector: HubDetector, root: str, max_length: int = -1) -> list[HubPath]:
    """All maximal acyclic paths from ``root`` following edge direction (FINDPATHSINHUB)."""
    limit = max_length if max_length and max_length > 0 else 64
    out: list[HubPath] = []
    stack: list[tuple[str, tuple[Triple, ...], frozenset[str]]] = [(root, (), frozenset({root}))]
    while stack:
        node, path, on_path = stack.pop()
        nxt = [t for t in graph.outgoing(node) if t.object.uid not in on_path] if (
            node == root or not detector.is_hub_root(node)) else []
        if not nxt or len(path) >= limit:
            if path:
                out.append(HubPath(root, path))
            continue
        for t in reversed(nxt):
            stack.append((t.object.uid, path + (t,), on_path | {t.object.uid}))
    return out
