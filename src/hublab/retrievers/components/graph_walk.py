"""Walking a KnowledgeGraph for the reasoning baselines: a cached bidirectional neighbourhood view, a
per-question work budget, an entity-label index, and the collector of triples a walk used.

All four LLM-reasoning baselines (FiDeLiS, MindMap, ToG, StructGPT) walk the graph *bidirectionally* (the
thesis's SQA adaptation: ORKG stores papers as subjects, so many answers are only reachable against edge
direction) and cache graph queries (the thesis added a graph-query cache to FiDeLiS).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple
from hublab.retrievers.base import Context
from hublab.retrievers.components.scoring import TextScorer
from hublab.scores import dot_scores

INVERSE_SUFFIX = " (inverse)"


@dataclass
class Budget:
    """Caps one question's work: wall-clock seconds and node expansions (neighbour fetches)."""

    max_seconds: float = 120.0
    max_expansions: int = 5000
    started: float = field(default_factory=time.monotonic)
    expansions: int = 0

    def spend(self, n: int = 1) -> None:
        self.expansions += n

    @property
    def exhausted(self) -> bool:
        return self.expansions >= self.max_expansions or (time.monotonic() - self.started) >= self.max_seconds

    def why(self) -> str:
        if self.expansions >= self.max_expansions:
            return f"expansion budget ({self.max_expansions}) exhausted"
        return f"time budget ({self.max_seconds:.0f}s) exhausted"


@dataclass(frozen=True)
class Edge:
    """A triple seen from one node: ``forward`` when that node is the subject."""

    triple: Triple
    forward: bool

    @property
    def other(self) -> Knowledge:
        return self.triple.object if self.forward else self.triple.subject

    @property
    def relation(self) -> str:
        """Relation name shown to the LLM; incoming edges get an explicit inverse marker."""
        return self.triple.predicate if self.forward else self.triple.predicate + INVERSE_SUFFIX


class GraphView:
    """Cached, optionally bidirectional, capped neighbourhood access to a KnowledgeGraph."""

    def __init__(self, graph: KnowledgeGraph, *, bidirectional: bool = True, max_neighbours: int = 500) -> None:
        self.graph = graph
        self.bidirectional = bidirectional
        self.max_neighbours = max_neighbours
        self._cache: dict[str, list[Edge]] = {}

    def edges(self, uid: str, budget: Budget | None = None) -> list[Edge]:
        cached = self._cache.get(uid)
        if cached is None:
            out = [Edge(t, True) for t in self.graph.outgoing(uid)]
            if self.bidirectional:
                out += [Edge(t, False) for t in self.graph.incoming(uid) if t.subject.uid != uid]
            cached = out[: self.max_neighbours] if self.max_neighbours > 0 else out
            self._cache[uid] = cached
        if budget is not None:
            budget.spend()
        return cached

    def relations(self, uid: str, budget: Budget | None = None) -> list[str]:
        """Unique relation names around ``uid`` in first-seen order."""
        return list(dict.fromkeys(e.relation for e in self.edges(uid, budget)))


@dataclass
class WalkPath:
    """A relation path from the start node: its nodes, the triples between them and its score so far."""

    nodes: list[str]
    triples: list[Triple] = field(default_factory=list)
    score: float = 0.0

    @property
    def tail(self) -> str:
        return self.nodes[-1]


class ContextCollector:
    """Triples a retriever used, each with its best score; rendered as ranked contexts."""

    def __init__(self) -> None:
        self._best: dict[str, tuple[float, int, Triple, dict[str, Any]]] = {}

    def add(self, triple: Triple, score: float, **metadata: Any) -> None:
        key = triple.render()
        old = self._best.get(key)
        order = old[1] if old else len(self._best)
        if old is None or score > old[0]:
            self._best[key] = (float(score), order, triple, metadata or (old[3] if old else {}))

    def __len__(self) -> int:
        return len(self._best)

    def __contains__(self, triple: Triple) -> bool:
        return triple.render() in self._best

    def contexts(self, limit: int | None = None) -> list[Context]:
        ranked = sorted(self._best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        if limit is not None:
            ranked = ranked[:limit]
        return [Context(text=k, triple=v[2], score=v[0], metadata=dict(v[3])) for k, v in ranked]


def render_path(triples: list[Triple]) -> str:
    """A reasoning path as one line of triples (for prompts and LLM-free answers)."""
    return " -> ".join(t.render() for t in triples)


class EntityIndex:
    """Nearest-neighbour lookup over the graph's entity labels (in-memory; unique labels embedded once)."""

    def __init__(self, graph: KnowledgeGraph, scorer: TextScorer) -> None:
        by_label: dict[str, list[str]] = {}
        for ent in graph.entities():
            if ent.text:
                by_label.setdefault(ent.text, []).append(ent.uid)
        # Resources before literals: a label shared by a resource and many literals should link to the resource.
        self.uids = {k: sorted(v, key=lambda u: (not u.startswith("R"), u)) for k, v in by_label.items()}
        self.labels = sorted(by_label)
        self.matrix = scorer.vectors(self.labels) if self.labels else np.zeros((0, 1), dtype=np.float32)
        self.scorer = scorer

    def __len__(self) -> int:
        return len(self.labels)

    def search(self, texts: list[str], k: int = 1) -> list[list[tuple[str, float]]]:
        """For each text, the ``k`` most similar labels with their cosine similarity."""
        if not texts or not self.labels:
            return [[] for _ in texts]
        sims = dot_scores(self.scorer.query(texts), self.matrix)  # portable: rounded float64 (hublab.scores)
        out: list[list[tuple[str, float]]] = []
        for row in sims:
            top = np.argsort(-row, kind="stable")[:k]
            out.append([(self.labels[i], float(row[i])) for i in top])
        return out


def triple_line(t: Triple) -> str:
    """A triple for prompts and embedding: labels only, readable."""
    return f"{t.subject.text} | {t.predicate} | {t.object.text}"
