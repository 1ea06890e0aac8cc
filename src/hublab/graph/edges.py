"""The graph as integer arrays: what a whole-graph measure (``hublab graph check``'s shape report) reads.

A measure over every triple needs the graph's structure, not its Python objects: a Triple with two Knowledge
objects is a few hundred bytes, ten million of them do not fit a laptop, and walking them is slow. An
:class:`EdgeTable` holds one small integer per node property and three per triple, in
:meth:`~hublab.graph.base.KnowledgeGraph.triples` order; a backend that keeps the graph on disk fills it straight
from its tables (``StoreKnowledgeGraph.edge_table``), and any other from its entities and triples
(:func:`edge_table_of`). Node ids are fetched only for the few nodes a report names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from hublab.graph.model import Knowledge


@dataclass
class EdgeTable:
    """Nodes ``0 … n_nodes - 1`` and the triples between them.

    Attributes:
        s, p, o: per triple, in ``triples()`` order: subject node, predicate, object node (int32).
        predicates: a predicate number's label (``Triple.predicate``).
        present: the node is one of the graph's entities (a backend's numbering may leave gaps).
        literal: the node is a literal (``Knowledge.is_literal``).
        labelled: the node's label comes from a label predicate; None when the graph cannot tell.
        uid_len: the length of the node's id.
        uids_of: node numbers -> their ids, in the order given.
        numbers_of: ids -> node numbers (-1 for an id not in the graph).
    """

    s: np.ndarray
    p: np.ndarray
    o: np.ndarray
    predicates: list[str]
    present: np.ndarray
    literal: np.ndarray
    labelled: np.ndarray | None
    uid_len: np.ndarray
    uids_of: Callable[[Sequence[int]], list[str]]
    numbers_of: Callable[[Sequence[str]], np.ndarray]

    @property
    def n_nodes(self) -> int:
        return len(self.present)

    @property
    def n_triples(self) -> int:
        return len(self.s)

    def predicate_labels(self) -> tuple[list[str], np.ndarray]:
        """The predicate labels, sorted (several predicate numbers may share one, as a triple names its predicate),
        and each predicate number's position among them (int64)."""
        names = sorted(set(self.predicates))
        index = {name: i for i, name in enumerate(names)}
        return names, np.asarray([index[p] for p in self.predicates], dtype=np.int64)


def edge_table_of(entities: Iterable[Knowledge], triples: Iterable, has_label: Callable[[str], bool] | None
                  ) -> EdgeTable:
    """An :class:`EdgeTable` built by walking a graph's entities, then its triples (an end that is no entity is
    numbered after them)."""
    number: dict[str, int] = {}
    uids: list[str] = []
    literal: list[bool] = []
    labelled: list[bool] = []

    def add(ent: Knowledge) -> int:
        n = number.get(ent.uid)
        if n is None:
            n = number[ent.uid] = len(uids)
            uids.append(ent.uid)
            literal.append(ent.is_literal)
            labelled.append(bool(has_label(ent.uid)) if has_label is not None else True)
        return n

    for ent in entities:
        add(ent)
    n_entities = len(uids)
    pred_number: dict[str, int] = {}
    s: list[int] = []
    p: list[int] = []
    o: list[int] = []
    for t in triples:
        s.append(add(t.subject))
        p.append(pred_number.setdefault(t.predicate, len(pred_number)))
        o.append(add(t.object))
    present = np.zeros(len(uids), dtype=bool)
    present[:n_entities] = True
    return EdgeTable(
        np.asarray(s, dtype=np.int32), np.asarray(p, dtype=np.int32), np.asarray(o, dtype=np.int32),
        list(pred_number), present, np.asarray(literal, dtype=bool),
        np.asarray(labelled, dtype=bool) if has_label is not None else None,
        np.fromiter((len(u) for u in uids), dtype=np.int32, count=len(uids)),
        lambda ns: [uids[int(n)] for n in ns],
        lambda ids: np.asarray([number.get(u, -1) for u in ids], dtype=np.int64))


def csr(keys: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, edges): the triples of each key, in triple order, as ``edges[start[k]:start[k + 1]]``."""
    edges = np.argsort(keys, kind="stable")
    start = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=start[1:])
    return start, edges


def gather(start: np.ndarray, edges: np.ndarray, nodes: np.ndarray) -> np.ndarray:
    """Every edge of ``nodes`` (their CSR ranges, concatenated)."""
    lo, hi = start[nodes], start[nodes + 1]
    sizes = hi - lo
    total = int(sizes.sum())
    if not total:
        return np.empty(0, dtype=edges.dtype)
    offsets = np.repeat(lo - np.concatenate(([0], np.cumsum(sizes)[:-1])), sizes)
    return edges[np.arange(total) + offsets]


def literal_predicates(t: EdgeTable, subjects: np.ndarray) -> tuple[list[str], np.ndarray, np.ndarray]:
    """Where a label predicate for unlabelled nodes is looked for: per predicate label, sorted, how many of
    ``subjects`` (a node mask) have it with a literal object at least once, and how many exactly once.

    Returns:
        (labels, carrying, once): the two counts as arrays aligned with ``labels``.
    """
    names, label_of = t.predicate_labels()
    width = max(len(names), 1)
    edges = np.flatnonzero(subjects[t.s] & t.literal[t.o])
    pairs, times = np.unique(t.s[edges].astype(np.int64) * width + label_of[t.p[edges]], return_counts=True)
    return names, np.bincount(pairs % width, minlength=len(names)), np.bincount(pairs[times == 1] % width,
                                                                                minlength=len(names))
