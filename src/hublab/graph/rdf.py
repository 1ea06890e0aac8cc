"""rdflib backend for :class:`KnowledgeGraph`.

RDF mapping (documented in docs/graph-model.md): every ORKG node, literals included, is an IRI
``orkg:resource/<id>`` carrying ``rdfs:label`` and ``rdf:type orkg:class/<Type>``. ORKG literals
get IRIs because ORKG gives them ids (``L…``) and the thesis's triple strings show those ids.
Predicates are ``orkg:predicate/<Pid>`` when ORKG gave an id, else ``hublab:predicate/<label>``;
their label is the rendered predicate. The same class works over any rdflib store, e.g.
``rdflib.plugins.stores.sparqlstore.SPARQLStore`` for a remote endpoint (ORKG, Fuseki, Virtuoso):
pass ``index=False`` so lookups go to the store instead of an in-memory index.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator
from pathlib import Path
from urllib.parse import quote

from rdflib import RDF, RDFS, Graph, Literal, Namespace, URIRef

from hublab.atomic import atomic_path, write_text_atomic
from hublab.errors import HubLabError
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple
from hublab.graph.vocabulary import (
    LITERAL_CLASS,
    ORKG_CLASS,
    ORKG_PREDICATE,
    ORKG_RESOURCE,
    Vocabulary,
    class_iri,
    fallback_label,
    local_name,
    node_uid,
    plain_graph,
    skolemise,
    type_name,
)
from hublab.limits import ReadLimits

HUBLAB_PREDICATE = Namespace("https://hublab.dev/predicate/")
__all__ = ["HUBLAB_PREDICATE", "LITERAL_CLASS", "ORKG_CLASS", "ORKG_PREDICATE", "ORKG_RESOURCE", "GraphError",
           "RdfKnowledgeGraph", "node_iri", "predicate_iri"]


class GraphError(HubLabError):
    """A graph that cannot be read as HubLab's model (an id clash)."""


def node_iri(uid: str) -> URIRef:
    return ORKG_RESOURCE[uid]


def predicate_iri(label: str, pid: str | None = None) -> URIRef:
    if pid:
        return ORKG_PREDICATE[pid]
    return HUBLAB_PREDICATE[quote(label, safe="")]


def _pid_of(iri: URIRef) -> str | None:
    s = str(iri)
    if s.startswith(str(ORKG_PREDICATE)):
        return s[len(str(ORKG_PREDICATE)) :]
    return None


def _label_rank(lit: Literal) -> tuple[bool, str]:
    """Of several labels by one predicate: untagged or English first, then the smallest text (a stable choice)."""
    return (lit.language not in (None, "en"), str(lit))


def _term_key(term) -> tuple[bool, str]:
    """Sort key of a node term: IRIs by their text (the ORKG mapping's order), literals after them."""
    return (True, term.n3()) if isinstance(term, Literal) else (False, str(term))


class RdfKnowledgeGraph(KnowledgeGraph):
    """KnowledgeGraph over an rdflib Graph, with an optional in-memory adjacency index for speed."""

    def __init__(self, graph: Graph | None = None, *, name: str = "graph", index: bool = True,
                 vocabulary: Vocabulary | None = None) -> None:
        self.graph = graph if graph is not None else plain_graph()
        self.name = name
        self.vocabulary = vocabulary or Vocabulary()
        self._use_index = index
        self._terms: dict[str, object] = {}  # node id -> its RDF term (IRI or literal)
        self._pred_iris: dict[str, URIRef] = {}  # predicate label -> an IRI carrying it
        self._labelled: set[str] = set()  # node ids labelled by a label predicate
        self._entities: dict[str, Knowledge] = {}
        self._out: dict[str, list[Triple]] = defaultdict(list)
        self._in: dict[str, list[Triple]] = defaultdict(list)
        self._by_type: dict[str, list[Knowledge]] = defaultdict(list)
        self._pred_labels: dict[URIRef, str] = {}
        if index and next(iter(self.graph), None) is not None:  # len() of a SimpleMemory store counts every triple
            self._build_index()

    # ---------------- construction ----------------
    @classmethod
    def from_triples(
        cls,
        triples: Iterable[Triple],
        entities: Iterable[Knowledge] = (),
        *,
        name: str = "graph",
    ) -> RdfKnowledgeGraph:
        kg = cls(name=name)
        for ent in entities:
            kg.add_entity(ent)
        for t in triples:
            kg.add(t)
        return kg

    def add_entity(self, ent: Knowledge) -> None:
        iri = node_iri(ent.uid)
        known = self._entities.get(ent.uid)
        if known is not None and known.text == ent.text and set(ent.types) <= set(known.types):
            return
        self.graph.set((iri, RDFS.label, Literal(ent.text)))
        types = tuple(dict.fromkeys((known.types if known else ()) + ent.types))
        for t in types:
            self.graph.add((iri, RDF.type, ORKG_CLASS[quote(t, safe="")]))
        merged = Knowledge(ent.uid, ent.text, types)
        self._entities[ent.uid] = merged
        self._terms[ent.uid] = iri
        self._labelled.add(ent.uid)
        if known is None:
            for t in types:
                self._by_type[t].append(merged)
        else:
            for t in types:
                if t not in known.types:
                    self._by_type[t].append(merged)

    def add(self, triple: Triple) -> None:
        self.add_entity(triple.subject)
        self.add_entity(triple.object)
        piri = predicate_iri(triple.predicate, triple.predicate_id)
        if piri not in self._pred_labels:
            self.graph.set((piri, RDFS.label, Literal(triple.predicate)))
            self._pred_labels[piri] = triple.predicate
        key = (node_iri(triple.subject.uid), piri, node_iri(triple.object.uid))
        if key in self.graph:
            return
        self.graph.add(key)
        t = Triple(
            self._entities[triple.subject.uid],
            triple.predicate,
            self._entities[triple.object.uid],
            triple.predicate_id,
        )
        self._out[t.subject.uid].append(t)
        self._in[t.object.uid].append(t)

    def _knowledge_from_store(self, iri: URIRef) -> Knowledge:
        label = self._label_from_store(iri)
        return Knowledge(node_uid(iri), label if label is not None else local_name(str(iri)),
                         self._types_from_store(iri))

    def _types_from_store(self, iri: URIRef) -> tuple[str, ...]:
        """The node's types by every type predicate, sorted; a class named by two type predicates is one type
        (with ``rdf:type`` alone the store's answer is taken as it is)."""
        preds = self.vocabulary.type_predicates
        names = [type_name(c) for tp in preds for c in self.graph.objects(iri, tp)]
        return tuple(sorted(set(names) if len(preds) > 1 else names))

    def _label_from_store(self, term: URIRef) -> str | None:
        for lp in self.vocabulary.label_predicates:
            values = [o for o in self.graph.objects(term, lp) if isinstance(o, Literal)]
            if values:
                return str(min(values, key=_label_rank))
        return None

    def _pred_label(self, piri: URIRef) -> str:
        if piri not in self._pred_labels:
            label = self._label_from_store(piri)
            self._pred_labels[piri] = label if label is not None else local_name(str(piri))
        return self._pred_labels[piri]

    def _build_index(self) -> None:
        """Nodes, labels, types and adjacency from the rdflib graph, for HubLab's ORKG mapping and any other
        vocabulary alike (:mod:`hublab.graph.vocabulary`). Orders are sorted on the terms' text: a set of IRIs
        iterates in an order that changes with each process's string hash seed, and the entity order is the order
        of node units (VSS, DiFaR, ...), hence of their ties."""
        g = skolemise(self.graph)
        if g is not self.graph:
            self.graph = g
        attributes = self.vocabulary.attribute_predicates
        labels: dict[URIRef, str] = {}
        for lp in reversed(self.vocabulary.label_predicates):  # the first predicate in the list wins
            found: dict[URIRef, list[Literal]] = defaultdict(list)
            for s, o in g.subject_objects(lp):
                if isinstance(o, Literal):
                    found[s].append(o)  # type: ignore[index]
            labels.update({s: str(min(v, key=_label_rank)) for s, v in found.items()})
        self._labelled = {node_uid(t) for t in labels}
        types: dict[URIRef, set[str]] = defaultdict(set)
        classes: set = set()
        for tp in self.vocabulary.type_predicates:
            for s, c in g.subject_objects(tp):
                types[s].add(type_name(c))  # type: ignore[index]
                classes.add(c)
        content = []
        nodes: set = set()
        predicates: set = set()
        for s, p, o in g:
            predicates.add(p)
            if p in attributes:
                continue
            content.append((s, p, o))
            nodes.add(s)
            nodes.add(o)
        nodes |= (set(labels) | set(types)) - predicates - classes
        uid_of: dict = {}  # term -> its node id, worked out once per node
        for term in sorted(nodes, key=_term_key):
            if isinstance(term, Literal):
                ent = Knowledge(node_uid(term), str(term), (LITERAL_CLASS,))
            else:
                label = labels.get(term)
                kinds = tuple(sorted(types.get(term, ())))
                ent = Knowledge(node_uid(term), label if label is not None else fallback_label(term, kinds), kinds)
            known = self._terms.setdefault(ent.uid, term)
            if known != term:
                raise GraphError(f"two nodes of graph {self.name!r} get the same id {ent.uid}: {known} and {term} "
                                 "(a hash clash: rename one of them)")
            self._entities[ent.uid] = ent
            uid_of[term] = ent.uid
            for t in ent.types:
                self._by_type[t].append(ent)
        said: dict[URIRef, tuple[str, str | None]] = {}  # predicate -> (its label, its ORKG id)
        for s, p, o in sorted(content, key=lambda t: (str(t[0]), str(t[1]), _term_key(t[2]))):
            su, ou = uid_of[s], uid_of[o]
            named = said.get(p)
            if named is None:
                named = said[p] = (self._pred_label(p), _pid_of(p))
                self._pred_iris.setdefault(named[0], p)
            t = Triple(self._entities[su], named[0], self._entities[ou], named[1])
            self._out[su].append(t)
            self._in[ou].append(t)

    def has_label(self, uid: str) -> bool:
        """Whether the node's label comes from a label predicate (not the IRI's local name)."""
        return uid in self._labelled if self._use_index else self.entity(uid) is not None

    def statement(self, t: Triple) -> str:
        """The triple as an N-Triples statement (``<s> <p> <o> .``): the form a dataset may give a golden triple in."""
        piri = ORKG_PREDICATE[t.predicate_id] if t.predicate_id else self._pred_iris.get(t.predicate)
        if piri is None:
            piri = predicate_iri(t.predicate)
        return f"{self.term_of(t.subject.uid).n3()} {piri.n3()} {self.term_of(t.object.uid).n3()} ."

    def term_of(self, uid: str):
        """The RDF term (IRI or literal) behind a node id, or None: what ``hublab graph find`` prints."""
        return self._terms.get(uid) if self._use_index else node_iri(uid)

    def predicate_iri_of(self, label: str) -> URIRef | None:
        """An IRI of a predicate with this label (the first in the graph's order)."""
        return self._pred_iris.get(label)

    def triple_for_statement(self, s, p, o) -> Triple | None:
        """The graph's triple for the RDF statement (s, p, o), or None when the graph lacks it."""
        su, ou = node_uid(s), node_uid(o)
        if self._terms.get(su) != s or self._terms.get(ou) != o:
            return None
        label = self._pred_label(p)
        for t in self._out.get(su, ()):
            if t.object.uid == ou and t.predicate == label and (t.predicate_id or None) == _pid_of(p):
                return t
        return None

    @classmethod
    def from_sparql_endpoint(cls, query_endpoint: str, *, name: str = "remote") -> RdfKnowledgeGraph:
        """A graph behind a SPARQL endpoint (Fuseki, Virtuoso, GraphDB…) holding HubLab's RDF mapping.

        Every lookup becomes a SPARQL query (no in-memory index), so graphs larger than one machine's memory
        work behind the same interface; retrievers do not change (the endpoint backend's live store)."""
        from hublab.graph.backends import SparqlEndpointGraph

        return SparqlEndpointGraph.live(query_endpoint, name=name)

    # ---------------- persistence ----------------
    @classmethod
    def load(cls, path: str | Path, *, name: str | None = None, vocabulary: Vocabulary | None = None,
             progress: bool = False, limits: ReadLimits | None = None) -> RdfKnowledgeGraph:
        """Load an RDF file (Turtle, N-Triples, N-Quads, RDF/XML, JSON-LD by suffix, gzipped too: ``.ttl.gz``) in
        any vocabulary, or an ORKG export (``.json``); ``limits`` bound how far the file may expand (defaults: see
        :class:`~hublab.limits.ReadLimits`)."""
        path = Path(path)
        gname = name or path.name.split(".")[0]
        if path.suffix == ".json" and not path.name.endswith(".jsonld"):
            from hublab.graph.orkg_export import read_export

            triples, entities = read_export(path)
            return cls.from_triples(triples, entities, name=gname)
        from hublab.graph.rdf_files import read_rdf

        return cls(read_rdf(path, progress=progress, limits=limits), name=gname, vocabulary=vocabulary)

    def save(self, path: str | Path) -> None:
        """Write Turtle atomically (temp file + rename) so a crash never leaves half a graph."""
        self.graph.bind("orkgr", ORKG_RESOURCE)
        self.graph.bind("orkgp", ORKG_PREDICATE)
        self.graph.bind("orkgc", ORKG_CLASS)
        self.graph.bind("hlp", HUBLAB_PREDICATE)
        with atomic_path(path) as tmp:
            self.graph.serialize(tmp, format="turtle")

    # ---------------- KnowledgeGraph API ----------------
    def entity(self, uid: str) -> Knowledge | None:
        if self._use_index:
            return self._entities.get(uid)
        iri = node_iri(uid)
        if (iri, RDFS.label, None) not in self.graph:
            return None
        return self._knowledge_from_store(iri)

    def _store_triples(self, s: URIRef | None, o: URIRef | None) -> list[Triple]:
        out = []
        described = (RDFS.label, *self.vocabulary.type_predicates)  # statements about a node, not edges
        for ts, p, to in self.graph.triples((s, None, o)):
            if p in described or not isinstance(to, URIRef):
                continue
            out.append(
                Triple(self._knowledge_from_store(ts), self._pred_label(p), self._knowledge_from_store(to), _pid_of(p))
            )
        return sorted(out, key=lambda t: (t.subject.uid, t.predicate, t.object.uid))

    def outgoing(self, uid: str) -> list[Triple]:
        if self._use_index:
            return list(self._out.get(uid, ()))
        return self._store_triples(node_iri(uid), None)

    def incoming(self, uid: str) -> list[Triple]:
        if self._use_index:
            return list(self._in.get(uid, ()))
        return self._store_triples(None, node_iri(uid))

    def entities_by_type(self, type_name: str) -> list[Knowledge]:
        if self._use_index:
            return list(self._by_type.get(type_name, ()))
        cls_iri = class_iri(type_name)  # an ORKG class by its name, any other by its IRI (as ``type_name`` gives)
        preds = self.vocabulary.type_predicates
        found = [s for tp in preds for s in self.graph.subjects(tp, cls_iri)]
        if len(preds) > 1:  # an instance named by two type predicates is one instance
            found = list(dict.fromkeys(found))
        return [self._knowledge_from_store(s) for s in found]

    def triples(self) -> Iterator[Triple]:
        if self._use_index:
            for lst in self._out.values():
                yield from lst
        else:
            yield from self._store_triples(None, None)

    def entities(self) -> Iterator[Knowledge]:
        if self._use_index:
            yield from self._entities.values()
        else:
            for iri in sorted(set(self.graph.subjects(RDFS.label, None))):  # a stable order (see _build_index)
                if str(iri).startswith(str(ORKG_RESOURCE)):
                    yield self._knowledge_from_store(iri)

    def sparql(self, query: str) -> list[dict[str, str]]:
        result = self.graph.query(query)
        rows = []
        for row in result:
            rows.append({str(v): str(row[v]) for v in result.vars if row[v] is not None})
        return rows

    def __len__(self) -> int:
        if self._use_index:
            return sum(len(v) for v in self._out.values())
        return super().__len__()

    def to_export_json(self) -> list[dict]:
        """The graph in the ORKG export format (triples then bare entities)."""
        rows: list[dict] = []
        for t in self.triples():
            rows.append(
                {
                    "entity_subject": _k_json(t.subject),
                    "predicate": t.predicate,
                    "entity_object": _k_json(t.object),
                }
            )
        rows.extend(_k_json(e) for e in self.entities())
        return rows


def _k_json(k: Knowledge) -> dict:
    return {"uid": k.uid, "text": k.text, "knowledge_types": list(k.types)}


def dump_export_json(kg: RdfKnowledgeGraph, path: str | Path) -> None:
    write_text_atomic(path, json.dumps(kg.to_export_json(), ensure_ascii=False, indent=1))
