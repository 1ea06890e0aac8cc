"""How any RDF graph's terms become HubLab's nodes: ids, labels and types (docs/your-graph.md).

HubLab's model is ORKG's: every node has a short id (``R…`` resource, ``L…`` literal) and a label, and a triple
renders as ``(<id>:<label>, <predicate label>, <id>:<label>)``, the string the thesis's metrics compare. A graph in
HubLab's own ORKG mapping keeps its ORKG ids. Any other graph gets ids derived from content, so the same graph
gives the same ids in every process and on every machine:

* an IRI → ``R`` + a number from the sha256 of the IRI; a literal → ``L`` + a number from the sha256 of its
  N-Triples form (value, datatype, language), so equal literals are one node; a blank node → ``R`` + a number from
  its content (its own statements and those pointing at it), never from the parser's random label;
* a node's label: the first of the label predicates (``params.yaml: user_graphs.label_predicates``) it has, else the
  IRI's local name; a literal's label is its value;
* a node's types: its classes by the type predicates (``params.yaml: user_graphs.type_predicates``; ``rdf:type``
  always among them), an ORKG class by its local name (``Paper``), any other by its IRI.

Label and type statements describe nodes; every other statement is a triple of the graph.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import quote, unquote

from rdflib import RDF, RDFS, BNode, Graph, Literal, Namespace, URIRef
from rdflib.term import Node

from hublab.graph.model import LITERAL_CLASS as LITERAL_CLASS  # where the graph modules look for it

ORKG_RESOURCE = Namespace("http://orkg.org/orkg/resource/")
ORKG_PREDICATE = Namespace("http://orkg.org/orkg/predicate/")
ORKG_CLASS = Namespace("http://orkg.org/orkg/class/")
#: blank nodes are replaced by IRIs under this prefix (content-derived), so they behave like any other node
BNODE_PREFIX = "https://hublab.dev/bnode/"

#: The default label predicates, in order (the issue's list; ``rdfs:label`` first, which is what ORKG uses).
DEFAULT_LABEL_PREDICATES: tuple[str, ...] = (
    str(RDFS.label),
    "http://www.w3.org/2004/02/skos/core#prefLabel",
    "http://schema.org/name",
    "https://schema.org/name",
    "http://purl.org/dc/terms/title",
    "http://xmlns.com/foaf/0.1/name",
)
#: The default type predicates: ``rdf:type`` alone. It stays a type predicate whatever else is given: a graph that
#: states some classes with ``rdf:type`` and others with, say, Wikidata's P31 keeps both.
DEFAULT_TYPE_PREDICATES: tuple[str, ...] = (str(RDF.type),)
#: ids derived from a hash carry this many bits (15 hex digits): the chance that two of a million nodes share one
#: is about 4e-7, and a clash is refused when the graph is read, never merged silently
_ID_HEX = 15


@dataclass(frozen=True)
class Vocabulary:
    """Which predicates give a node its label (in order of preference) and its types (every class any of them
    names)."""

    label_predicates: tuple[URIRef, ...] = tuple(URIRef(p) for p in DEFAULT_LABEL_PREDICATES)
    type_predicates: tuple[URIRef, ...] = tuple(URIRef(p) for p in DEFAULT_TYPE_PREDICATES)

    @classmethod
    def from_iris(cls, iris: Iterable[str] | None, type_iris: Iterable[str] | None = None) -> Vocabulary:
        """A vocabulary from predicate IRIs as ``params.yaml`` gives them.

        Args:
            iris: the label predicates, in order of preference; none or empty: the default list.
            type_iris: the type predicates; none or empty: ``rdf:type`` alone. ``rdf:type`` is added after the
                given ones unless they hold it (a duplicate is dropped), so a list of ``rdf:type`` alone is the
                default vocabulary.

        Returns:
            The vocabulary; equal to ``Vocabulary()`` when neither list changes a default.
        """
        labels = tuple(URIRef(str(i)) for i in (iris or ()))
        types = tuple(dict.fromkeys((*(URIRef(str(i)) for i in (type_iris or ())), RDF.type)))
        return cls(labels or cls.label_predicates, types)

    @property
    def attribute_predicates(self) -> frozenset[URIRef]:
        """Predicates that describe a node instead of linking two: labels and types."""
        return frozenset((*self.label_predicates, *self.type_predicates))


def local_name(iri: str) -> str:
    """The last segment of an IRI (after ``#`` or the last ``/``), percent-decoded: the label of last resort."""
    tail = iri.rstrip("/#")
    for sep in ("#", "/", ":"):
        if sep in tail:
            tail = tail.rsplit(sep, 1)[1]
            break
    return unquote(tail) or iri


def fallback_label(term: Node, types: tuple[str, ...] = ()) -> str:
    """The label of a node no label predicate names: the IRI's local name; for a blank node (which has no name of
    its own) the local name of its first type, else ``blank node``."""
    s = str(term)
    if s.startswith(BNODE_PREFIX):
        return local_name(types[0]) if types else "blank node"
    return local_name(s)


def _digits(text: str) -> str:
    return str(int(hashlib.sha256(text.encode("utf-8")).hexdigest()[:_ID_HEX], 16))


def literal_uid(n3: str) -> str:
    """The HubLab id of the literal whose N-Triples form is ``n3``."""
    return "L" + _digits(n3)


def node_uid(term: Node) -> str:
    """A node's HubLab id: the ORKG id for ORKG resources, else derived from the term's content."""
    if isinstance(term, Literal):
        return literal_uid(term.n3())
    s = str(term)
    if s.startswith(str(ORKG_RESOURCE)):
        return s[len(str(ORKG_RESOURCE)):]
    return "R" + _digits(s)


def class_iri(name: str) -> URIRef:
    """The class a :func:`type_name` names: an IRI as it is, a bare name an ORKG class (``Paper``)."""
    return URIRef(name) if "://" in name else ORKG_CLASS[quote(name, safe="")]


def type_name(term: Node) -> str:
    """A class as HubLab names it: ORKG classes by their local name (``Paper``), any other by its IRI."""
    s = str(term)
    if s.startswith(str(ORKG_CLASS)):
        return unquote(s[len(str(ORKG_CLASS)):])
    return s


def normalise_type(name: str) -> str:
    """What ``--hub-type`` accepts (an IRI, or a name as ``hublab graph check`` prints it) as a node type."""
    return type_name(URIRef(name)) if "://" in name else name


def plain_graph() -> Graph:
    """An empty rdflib graph in rdflib's store without named-graph bookkeeping (``SimpleMemory``): a HubLab graph is
    one graph, and filling this store takes about two thirds of the time of the default one (which keeps named-graph
    bookkeeping per triple), with the same triples and the same answers to every lookup and SPARQL query."""
    return Graph(store="SimpleMemory")


def skolemise(graph: Graph) -> Graph:
    """``graph`` with every blank node replaced by an IRI derived from its content: its own statements and those
    pointing at it, with other blank nodes seen as their own content one level down (two rounds). Blank nodes whose
    content is identical are interchangeable, so which gets which of their ids changes nothing. Returns ``graph``
    itself when it has no blank node."""
    blank: dict[type, bool] = {}  # a term's class -> whether it is a blank node (isinstance on rdflib's ABC is slow)
    bnodes = set()
    for s, _p, o in graph:  # a predicate is never a blank node
        for t in (s, o):
            kind = t.__class__
            is_blank = blank.get(kind)
            if is_blank is None:
                is_blank = blank[kind] = issubclass(kind, BNode)
            if is_blank:
                bnodes.add(t)
    if not bnodes:
        return graph
    out_edges: dict[BNode, list[tuple[Node, Node]]] = defaultdict(list)
    in_edges: dict[BNode, list[tuple[Node, Node]]] = defaultdict(list)
    for s, p, o in graph:
        if isinstance(s, BNode):
            out_edges[s].append((p, o))
        if isinstance(o, BNode):
            in_edges[o].append((s, p))
    sig: dict[BNode, str] = dict.fromkeys(bnodes, "")
    for _ in range(2):
        def show(t: Node, current: dict[BNode, str] = sig) -> str:
            return "_:" + current[t] if isinstance(t, BNode) else t.n3()

        sig = {b: hashlib.sha256("\n".join(sorted(
            [f"> {p.n3()} {show(o)}" for p, o in out_edges[b]]
            + [f"< {show(s)} {p.n3()}" for s, p in in_edges[b]])).encode()).hexdigest() for b in bnodes}
    taken: dict[str, int] = defaultdict(int)
    iri: dict[BNode, URIRef] = {}
    for b in sorted(bnodes, key=lambda b: (sig[b], str(b))):
        n = taken[sig[b]]
        taken[sig[b]] += 1
        iri[b] = URIRef(f"{BNODE_PREFIX}{sig[b][:32]}{'-' + str(n) if n else ''}")
    skolem = plain_graph()
    for s, p, o in graph:
        skolem.add((iri.get(s, s), p, iri.get(o, o)))  # type: ignore[arg-type]
    return skolem
