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
from urllib.parse import quote, unquote

from rdflib import RDF, RDFS, Graph, Literal, Namespace, URIRef

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple

ORKG_RESOURCE = Namespace("http://orkg.org/orkg/resource/")
ORKG_PREDICATE = Namespace("http://orkg.org/orkg/predicate/")
ORKG_CLASS = Namespace("http://orkg.org/orkg/class/")
HUBLAB_PREDICATE = Namespace("https://hublab.dev/predicate/")
LITERAL_CLASS = "Literal"


def node_iri(uid: str) -> URIRef:
    return ORKG_RESOURCE[uid]


def predicate_iri(label: str, pid: str | None = None) -> URIRef:
    if pid:
        return ORKG_PREDICATE[pid]
    return HUBLAB_PREDICATE[quote(label, safe="")]


def _uid_of(iri: URIRef) -> str:
    s = str(iri)
    if s.startswith(str(ORKG_RESOURCE)):
        return s[len(str(ORKG_RESOURCE)) :]
    return s


def _pid_of(iri: URIRef) -> str | None:
    s = str(iri)
    if s.startswith(str(ORKG_PREDICATE)):
        return s[len(str(ORKG_PREDICATE)) :]
    return None


class RdfKnowledgeGraph(KnowledgeGraph):
    """KnowledgeGraph over an rdflib Graph, with an optional in-memory adjacency index for speed."""

    def __init__(self, graph: Graph | None = None, *, name: str = "graph", index: bool = True) -> None:
        self.graph = graph if graph is not None else Graph()
        self.name = name
        self._use_index = index
        self._entities: dict[str, Knowledge] = {}
        self._out: dict[str, list[Triple]] = defaultdict(list)
        self._in: dict[str, list[Triple]] = defaultdict(list)
        self._by_type: dict[str, list[Knowledge]] = defaultdict(list)
        self._pred_labels: dict[URIRef, str] = {}
        if index and len(self.graph):
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
        label = self.graph.value(iri, RDFS.label)
        types = tuple(
            sorted(unquote(str(c)[len(str(ORKG_CLASS)) :]) for c in self.graph.objects(iri, RDF.type))
        )
        return Knowledge(_uid_of(iri), str(label) if label is not None else _uid_of(iri), types)

    def _pred_label(self, piri: URIRef) -> str:
        if piri not in self._pred_labels:
            label = self.graph.value(piri, RDFS.label)
            self._pred_labels[piri] = str(label) if label is not None else unquote(str(piri).rsplit("/", 1)[-1])
        return self._pred_labels[piri]

    def _build_index(self) -> None:
        # sorted: a set of IRIs iterates in an order that changes with each process's string hash seed, and the
        # entity order is the order of node units (VSS, DiFaR, ...), hence of their ties: results moved run to run
        for iri in sorted(set(self.graph.subjects(RDFS.label, None))):
            if str(iri).startswith(str(ORKG_RESOURCE)):
                ent = self._knowledge_from_store(iri)
                self._entities[ent.uid] = ent
                for t in ent.types:
                    self._by_type[t].append(ent)
        for s, p, o in sorted(self.graph.triples((None, None, None))):
            if p in (RDFS.label, RDF.type) or not isinstance(o, URIRef):
                continue
            if not str(s).startswith(str(ORKG_RESOURCE)):
                continue
            su, ou = _uid_of(s), _uid_of(o)
            t = Triple(self._entities[su], self._pred_label(p), self._entities[ou], _pid_of(p))
            self._out[su].append(t)
            self._in[ou].append(t)

    @classmethod
    def from_sparql_endpoint(cls, query_endpoint: str, *, name: str = "remote") -> RdfKnowledgeGraph:
        """A graph behind a SPARQL endpoint (Fuseki, Virtuoso, GraphDB…) holding HubLab's RDF mapping.

        Every lookup becomes a SPARQL query (no in-memory index), so graphs larger than one machine's memory
        work behind the same interface; retrievers do not change."""
        from rdflib.plugins.stores.sparqlstore import SPARQLStore

        return cls(Graph(store=SPARQLStore(query_endpoint)), name=name, index=False)

    # ---------------- persistence ----------------
    @classmethod
    def load(cls, path: str | Path, *, name: str | None = None) -> RdfKnowledgeGraph:
        """Load Turtle (``.ttl``) or an ORKG export (``.json``)."""
        path = Path(path)
        gname = name or path.stem
        if path.suffix == ".json":
            from hublab.graph.orkg_export import read_export

            triples, entities = read_export(path)
            return cls.from_triples(triples, entities, name=gname)
        g = Graph()
        g.parse(path, format="turtle")
        return cls(g, name=gname)

    def save(self, path: str | Path) -> None:
        """Write Turtle atomically (temp file + rename) so a crash never leaves half a graph."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(path.suffix + ".tmp")
        self.graph.bind("orkgr", ORKG_RESOURCE)
        self.graph.bind("orkgp", ORKG_PREDICATE)
        self.graph.bind("orkgc", ORKG_CLASS)
        self.graph.bind("hlp", HUBLAB_PREDICATE)
        self.graph.serialize(tmp, format="turtle")
        tmp.replace(path)

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
        for ts, p, to in self.graph.triples((s, None, o)):
            if p in (RDFS.label, RDF.type) or not isinstance(to, URIRef):
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
        cls_iri = ORKG_CLASS[quote(type_name, safe="")]
        return [self._knowledge_from_store(s) for s in self.graph.subjects(RDF.type, cls_iri)]

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
    Path(path).write_text(json.dumps(kg.to_export_json(), ensure_ascii=False, indent=1))
