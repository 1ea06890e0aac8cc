"""The KnowledgeGraph interface every retriever depends on (never on a concrete backend)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from hublab.graph.model import LITERAL_CLASS, Knowledge, Triple

if TYPE_CHECKING:
    from hublab.graph.edges import EdgeTable

PAPER_TYPE = "Paper"


class KnowledgeGraph(ABC):
    """Read access to an ORKG-style graph: entities with ids/labels/types and directed triples.

    Backends: :class:`hublab.graph.rdf.RdfKnowledgeGraph` (in-memory rdflib, or any rdflib store such
    as a remote SPARQL endpoint).
    """

    name: str = "graph"
    #: Optional capabilities, declared here so retrievers never probe backends with ``getattr``.
    #: ``answers_with_nodes``: a STaRK-style SKB whose answers are node ids, not triples.
    answers_with_nodes: bool = False
    #: Node types a node-level retriever ranks (STaRK's candidate set); None = every node.
    candidate_types: list[str] | None = None
    #: ``random_access``: :meth:`triples_at` answers without walking the graph (a backend that keeps the graph on
    #: disk); a corpus over its triples then holds their positions, not the triples.
    random_access: bool = False

    @abstractmethod
    def entity(self, uid: str) -> Knowledge | None:
        """The node with this ORKG id, or None."""

    @abstractmethod
    def outgoing(self, uid: str) -> list[Triple]:
        """Triples whose subject is ``uid`` (in stable order)."""

    @abstractmethod
    def incoming(self, uid: str) -> list[Triple]:
        """Triples whose object is ``uid`` (in stable order)."""

    @abstractmethod
    def entities_by_type(self, type_name: str) -> list[Knowledge]:
        """All nodes carrying this ORKG class name (e.g. ``Paper``)."""

    @abstractmethod
    def triples(self) -> Iterator[Triple]:
        """Every triple of the graph."""

    @abstractmethod
    def entities(self) -> Iterator[Knowledge]:
        """Every node of the graph (subjects, objects and isolated entities)."""

    @abstractmethod
    def sparql(self, query: str) -> list[dict[str, str]]:
        """Run a SPARQL SELECT and return rows as {variable: value} dicts."""

    def document(self, uid: str) -> str | None:
        """A node's own text document when the backend has one (STaRK SKBs); None = use its label."""
        return None

    # ---- derived helpers (backends may override for speed) ----
    def types(self, uid: str) -> tuple[str, ...]:
        ent = self.entity(uid)
        return ent.types if ent else ()

    def label(self, uid: str) -> str | None:
        ent = self.entity(uid)
        return ent.text if ent else None

    def neighbours(self, uid: str) -> list[Triple]:
        """Outgoing then incoming triples: the bidirectional view the baselines use."""
        return self.outgoing(uid) + self.incoming(uid)

    def paper_of(self, uid: str, max_hops: int = 10) -> Knowledge | None:
        """The Paper a node belongs to, found by walking incoming edges backwards (BFS)."""
        seen = {uid}
        frontier = [uid]
        for _ in range(max_hops + 1):
            nxt: list[str] = []
            for node in frontier:
                ent = self.entity(node)
                if ent is not None and PAPER_TYPE in ent.types:
                    return ent
                for t in self.incoming(node):
                    if t.subject.uid not in seen:
                        seen.add(t.subject.uid)
                        nxt.append(t.subject.uid)
            frontier = nxt
            if not frontier:
                break
        return None

    def subgraph(self, root: str, max_depth: int = 20) -> list[Triple]:
        """All triples reachable from ``root`` following edge direction (acyclic, BFS order)."""
        out: list[Triple] = []
        seen = {root}
        frontier = [root]
        depth = 0
        while frontier and depth < max_depth:
            nxt: list[str] = []
            for node in frontier:
                for t in self.outgoing(node):
                    out.append(t)
                    if t.object.uid not in seen:
                        seen.add(t.object.uid)
                        nxt.append(t.object.uid)
            frontier = nxt
            depth += 1
        return out

    def type_counts(self) -> dict[str, tuple[int, int]]:
        """Per node type (literals' excepted): its instances and their outgoing triples (what ``hublab graph check``
        ranks hub types by; a backend may count them where the graph is kept)."""
        counts: dict[str, list[int]] = {}
        for ent in self.entities():
            for ty in ent.types:
                if ty != LITERAL_CLASS:
                    c = counts.setdefault(ty, [0, 0])
                    c[0] += 1
                    c[1] += len(self.outgoing(ent.uid))
        return {t: (n, out) for t, (n, out) in counts.items()}

    def triples_at(self, positions: Sequence[int]) -> list[Triple]:
        """The triples at these 0-based positions of :meth:`triples`'s order, in the order asked (a position
        repeated, repeated). Raises ``IndexError`` for a position outside the graph. This default walks the graph."""
        wanted = set(positions)
        found: dict[int, Triple] = {}
        for i, t in enumerate(self.triples()):
            if i in wanted:
                found[i] = t
        try:
            return [found[p] for p in positions]
        except KeyError as exc:
            raise IndexError(f"no triple at position {exc.args[0]}") from None

    def edge_table(self) -> EdgeTable:
        """The graph as integer arrays (:mod:`hublab.graph.edges`): what a measure over every triple reads. This
        default walks the entities, then the triples; a backend that keeps the graph elsewhere reads its tables."""
        from hublab.graph.edges import edge_table_of

        return edge_table_of(self.entities(), self.triples(), getattr(self, "has_label", None))

    def node_counts(self) -> tuple[int, int, int]:
        """(nodes, literal nodes, other nodes labelled by a label predicate), in one pass: what ``hublab graph
        check`` reports label coverage from (a backend may count them where the graph is kept). A graph that cannot
        tell labelled nodes apart (no ``has_label``) counts every other node as labelled."""
        has_label = getattr(self, "has_label", None)
        nodes = literals = labelled = 0
        for ent in self.entities():
            nodes += 1
            if ent.is_literal:
                literals += 1
            elif has_label is None or has_label(ent.uid):
                labelled += 1
        return nodes, literals, labelled

    def __len__(self) -> int:
        return sum(1 for _ in self.triples())
