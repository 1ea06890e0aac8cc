"""Which of the LLM-free methods' defaults assume ORKG's shape, measured on a graph (``hublab graph check``).

The defaults are the thesis's, chosen on ORKG: a paper is a hub whose subgraph is a small tree owned by that paper,
its answers are the literal or leaf values at the ends of that tree, the research field sits a hop or two from the
papers, no node has thousands of edges, node ids are short ORKG ids. On another graph some of these do not hold, and
a default that relies on one quietly holds a method back (docs/your-graph.md, "Defaults that assume ORKG's shape").
Each check here measures one assumption from the graph's structure alone (never from questions) and, where it fails,
names the parameter, its default and the evidence. Everything is a few passes over the triples (hub walks sampled and
capped), about a tenth of a second on GV3.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from hublab.graph.base import PAPER_TYPE, KnowledgeGraph
from hublab.graph.edges import EdgeTable, csr, gather, literal_predicates
from hublab.graph.profile import suggested_hub_types, type_counts


@dataclass(frozen=True)
class ShapeDefaults:
    """The ORKG-shaped defaults of the LLM-free pipelines (``pipelines/*_local.yaml``, ``bm25.yaml`` …) that a check
    here tests; a test keeps them equal to the pipeline files."""

    hub_types: tuple[str, ...] = (PAPER_TYPE,)  #: HubLink
    output_value_boost: float = 1.0  #: HubLink
    max_retrieval_level: int = 2  #: HubLink
    max_hub_path_length: int = -1  #: HubLink
    output_expand_hubs: int = 3  #: HubLink
    max_neighbours: int = 500  #: FiDeLiS, MindMap, ToG, StructGPT (the parameter's declared default)
    triple_text: str = "ids"  #: BM25, VSS, hybrid, DiFaR, 4StepFocus


#: at most this many hubs are walked one by one (evenly spread over the sorted hub ids) to measure how much their
#: subgraphs overlap; the other measures take every hub
SAMPLE_HUBS = 50
#: a walk from one hub stops after this many triples (a hub reaching more is counted as reaching this many)
WALK_CAP = 1000

# When a default looks wrong: thresholds chosen so that the thesis's own graphs (GV1-GV4, the GV3 export) raise none.
#: share of the hub triples ending in a shared node with triples of its own (a concept, an organisation)
SHARED_OBJECT_SHARE = 0.15
#: share of the graph's triples that no hub path reaches
UNREACHED_SHARE = 0.25
#: nodes several subjects point at (likely topic entities) farther than max_retrieval_level hops from every hub: at
#: least this many, and this share of them
FAR_NODES = 3
FAR_NODE_SHARE = 0.05
#: average number of hubs whose paths hold one triple
OVERLAP = 3.0
#: share of the non-literal nodes whose label is their IRI's local name
UNLABELLED_SHARE = 0.5
#: share of the non-literal nodes with an id derived from the IRI (R + a long number), not an ORKG id
DERIVED_ID_SHARE = 0.5
_ORKG_ID_DIGITS = 12

_HUBLINK = "HubLink"
_REASONING = "FiDeLiS, MindMap, ToG, StructGPT"
_UNIT_METHODS = "BM25, VSS, hybrid, DiFaR, 4StepFocus"
_COMPARE = "hublab compare tunes it on your graph (shape_space)"


@dataclass(frozen=True)
class ShapeFinding:
    """One default that looks wrong for the graph: the parameter, the methods that have it, its default, what was
    measured, what the default then does, and what to do about it."""

    parameter: str
    methods: str
    default: str
    evidence: str
    effect: str
    remedy: str

    def line(self) -> str:
        return f"{self.parameter} = {self.default} ({self.methods}): {self.evidence}: {self.effect}; {self.remedy}"


@dataclass
class ShapeReport:
    """The measures and the findings; ``hub_types`` are the types measured (``measured_with``: a suggested type
    stood in for hub types without instances)."""

    hub_types: list[str]
    measured_with: list[str]
    hubs: int
    measures: dict[str, Any] = field(default_factory=dict)
    findings: list[ShapeFinding] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"hub_types": self.hub_types, "measured_with": self.measured_with, "hubs": self.hubs,
                "measures": self.measures, "findings": [asdict(f) for f in self.findings]}


def _pct(x: float) -> str:
    return f"{x:.0%}"


def _top(counter: Counter[str], n: int = 3) -> str:
    return ", ".join(f"{k} {v:,}" for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], kv[0]))[:n])


class _Graph:
    """The graph's structure as integers (:class:`~hublab.graph.edges.EdgeTable`) with out- and in-adjacency, and
    what every measure asks of a triple's object: it is a leaf (a literal, or no triples of its own), or shared (more
    than one subject points at it)."""

    def __init__(self, kg: KnowledgeGraph, table: EdgeTable | None = None) -> None:
        t = self.t = table if table is not None else kg.edge_table()
        n = t.n_nodes
        self.out_start, self.out_edges = csr(t.s, n)
        self.in_start, self.in_edges = csr(t.o, n)
        has_out = np.diff(self.out_start) > 0
        self.leaf_edge = t.literal[t.o] | ~has_out[t.o]
        pairs = np.unique(t.o.astype(np.int64) * max(n, 1) + t.s)  # each (object, subject) once
        self.shared = np.bincount(pairs // max(n, 1), minlength=n) > 1
        self.nodes = t.present & ~t.literal  #: the graph's non-literal nodes

    def labels(self, edges: np.ndarray) -> Counter[str]:
        """How many of ``edges`` carry each predicate label."""
        counts: Counter[str] = Counter()
        for p, k in enumerate(np.bincount(self.t.p[edges], minlength=len(self.t.predicates)).tolist()):
            if k:
                counts[self.t.predicates[p]] += k
        return counts


def _walk(g: _Graph, starts: np.ndarray, hubs: np.ndarray, cap: int | None = None) -> tuple[np.ndarray, int]:
    """Along edge direction from ``starts`` as hub paths go (stopping at a leaf and at another hub): each node's
    depth (-1: not reached; the start's own triples are at depth 1) and the number of triples walked (at most
    ``cap``). Level by level: a node's depth is its breadth-first level, whatever the order within a level."""
    depth = np.full(g.t.n_nodes, -1, dtype=np.int64)
    frontier = np.unique(starts)
    depth[frontier] = 0
    walked = level = 0
    while frontier.size:
        expand = frontier if level == 0 else frontier[~hubs[frontier]]  # another hub: its own triples are not on it
        edges = gather(g.out_start, g.out_edges, expand)
        walked += len(edges)
        if cap is not None and walked >= cap:
            return depth, cap
        objects = g.t.o[edges]
        frontier = np.unique(objects[depth[objects] < 0])
        level += 1
        depth[frontier] = level
    return depth, walked


def _undirected_distances(g: _Graph, starts: np.ndarray) -> np.ndarray:
    """Hops from the nearest hub, edges walked either way (a lower bound of HubLink's levels from a topic entity);
    -1 for a node no hub reaches."""
    dist = np.full(g.t.n_nodes, -1, dtype=np.int64)
    frontier = np.unique(starts)
    dist[frontier] = 0
    level = 0
    while frontier.size:
        near = np.concatenate((g.t.o[gather(g.out_start, g.out_edges, frontier)],
                               g.t.s[gather(g.in_start, g.in_edges, frontier)]))
        frontier = np.unique(near[dist[near] < 0])
        level += 1
        dist[frontier] = level
    return dist


def shape_report(kg: KnowledgeGraph, hub_types: list[str] | None = None, *,
                 defaults: ShapeDefaults | None = None, table: EdgeTable | None = None) -> ShapeReport:
    """Measure the graph against every ORKG-shaped default in ``defaults`` and list the ones that look wrong;
    ``table``: ``kg.edge_table()`` when the caller already has it."""
    d = defaults or ShapeDefaults()
    wanted = list(hub_types or d.hub_types)
    g = _Graph(kg, table)
    counts = type_counts(kg)
    findings: list[ShapeFinding] = []

    hubs = {e.uid for t in wanted for e in kg.entities_by_type(t)}
    measured_with = list(wanted)
    empty = [t for t in wanted if not kg.entities_by_type(t)]
    if empty:
        cands = suggested_hub_types(counts)
        listed = ", ".join(f"{c.name} ({c.instances:,})" for c in cands) or (
            "none: the graph has no type with two or more instances carrying triples" if counts else
            "none: the graph has no rdf:type statement (types by another predicate: --type-predicate IRI), and hub "
            "roots are chosen by type")
        findings.append(ShapeFinding(
            "hub_types", _HUBLINK, ", ".join(wanted),
            f"no node of type {', '.join(empty)}", "HubLink would index nothing",
            f"pass --hub-type IRI (candidates: {listed})"))
        if not hubs and cands:
            measured_with = [cands[0].name]
            hubs = {e.uid for e in kg.entities_by_type(cands[0].name)}
    report = ShapeReport(wanted, measured_with, len(hubs))
    m = report.measures
    m["triples"] = g.t.n_triples
    m["nodes"] = int(g.nodes.sum())
    if hubs and g.t.n_triples:
        hub_numbers = g.t.numbers_of(sorted(hubs))  # by id: the sample of hubs walked one by one is spread over them
        findings += _hub_findings(g, hub_numbers[hub_numbers >= 0], measured_with, d, m,
                                  measured_with[0] if measured_with != wanted else None)
    findings += _graph_findings(kg, g, d, m)
    report.findings = findings
    return report


def _hub_findings(g: _Graph, ordered: np.ndarray, hub_names: list[str], d: ShapeDefaults, m: dict[str, Any],
                  stand_in: str | None) -> list[ShapeFinding]:
    """``ordered``: the hubs' node numbers, by id."""
    out: list[ShapeFinding] = []
    note = f" (measured with the candidate hub type {stand_in})" if stand_in else ""
    hubs = np.zeros(g.t.n_nodes, dtype=bool)
    hubs[ordered] = True
    reached, _ = _walk(g, ordered, hubs)
    covered = np.flatnonzero(reached[g.t.s] >= 0)  # every hub is a start: reached at depth 0
    n, total = len(covered), g.t.n_triples
    m["hub_triples"] = n
    m["hub_triples_share"] = round(n / total, 4)
    m["deepest_hub_triple"] = int(reached[g.t.s[covered]].max()) + 1 if n else 0
    unreached = 1 - n / total
    if unreached >= UNREACHED_SHARE:
        out.append(ShapeFinding(
            "hub_types", _HUBLINK, ", ".join(sorted(hub_names)),
            f"{_pct(unreached)} of the graph's triples ({total - n:,} of {total:,}) lie on no path "
            f"from a hub{note}", "HubLink never returns them",
            "choose hub types whose instances lead to them (--hub-type; hublab graph check lists candidates)"))

    # output_value_boost: the answers are the leaves of a paper's tree in ORKG; shared inner nodes are answers too
    leaf = g.leaf_edge[covered]
    leaves = int(leaf.sum())
    inner = covered[~leaf]
    shared_inner = g.labels(inner[~hubs[g.t.o[inner]] & g.shared[g.t.o[inner]]])
    n_shared = sum(shared_inner.values())
    m["leaf_share"] = round(leaves / n, 4) if n else 0.0
    m["shared_inner_share"] = round(n_shared / n, 4) if n else 0.0
    if d.output_value_boost and n and n_shared / n >= SHARED_OBJECT_SHARE:
        out.append(ShapeFinding(
            "output_value_boost", _HUBLINK, str(d.output_value_boost),
            f"hub triples often end in a shared node with triples of its own (a concept, a category, an "
            f"organisation), not in a leaf: {_pct(n_shared / n)} of them ({n_shared:,} of {n:,}; "
            f"{_top(shared_inner)}), and {_pct(leaves / n)} end in a literal or leaf{note}",
            f"the boost multiplies every leaf-valued triple's score by {1 + d.output_value_boost:g}, so these rank "
            "below it", _COMPARE))

    # max_retrieval_level: in ORKG a topic entity (a research field, a venue) is a hop from the papers. Likely topic
    # entities are the nodes several subjects point at (categories, concepts, organisations); a node only its own
    # hub reaches, or none (an export's templates), is no entry point
    dist = _undirected_distances(g, ordered)
    entry_hops = dist[g.nodes & ~hubs & g.shared]
    n_entries = len(entry_hops)
    far = entry_hops[entry_hops > d.max_retrieval_level]
    m["shared_nodes"] = n_entries
    m["farthest_shared_node_hops"] = int(entry_hops.max()) if n_entries and entry_hops.max() >= 0 else 0
    m["shared_nodes_beyond_max_retrieval_level"] = len(far)
    m["nodes_without_hub"] = int((g.nodes & (dist < 0)).sum())
    if len(far) >= FAR_NODES and len(far) / n_entries >= FAR_NODE_SHARE:
        out.append(ShapeFinding(
            "max_retrieval_level", _HUBLINK, str(d.max_retrieval_level),
            f"{_pct(len(far) / n_entries)} of the nodes several subjects point at ({len(far):,} of "
            f"{n_entries:,}: categories, concepts, organisations, the likely topic entities) lie more than "
            f"{d.max_retrieval_level} hops from every hub (up to {int(far.max())}){note}",
            "from such a topic entity the graph-traversal strategy finds no hub", _COMPARE))

    # max_hub_path_length / output_expand_hubs: in ORKG each paper owns its subgraph; shared subgraphs repeat
    step = max(1, len(ordered) // SAMPLE_HUBS)
    sample = ordered[::step][:SAMPLE_HUBS]
    sizes = sorted(_walk(g, sample[i : i + 1], hubs, WALK_CAP)[1] for i in range(len(sample)))
    per_hub = sizes[len(sizes) // 2] if sizes else 0
    overlap = (sum(sizes) / len(sizes)) * len(ordered) / n if n and sizes else 0.0
    m["median_hub_triples"] = per_hub
    m["hubs_per_triple"] = round(overlap, 2)
    if d.max_hub_path_length < 1 and overlap >= OVERLAP:
        out.append(ShapeFinding(
            "max_hub_path_length", _HUBLINK, str(d.max_hub_path_length),
            f"hubs share their subgraphs: a hub's paths reach {'at least ' if per_hub >= WALK_CAP else ''}"
            f"{per_hub:,} triples on median, and each hub triple "
            f"lies on the paths of {'at least ' if sizes[-1] >= WALK_CAP else ''}{overlap:.1f} hubs on average{note}",
            "unbounded paths run through the shared nodes, so every hub indexes (and output_expand_hubs "
            f"{d.output_expand_hubs} offers) the same shared triples", _COMPARE))
    return out


def _graph_findings(kg: KnowledgeGraph, g: _Graph, d: ShapeDefaults, m: dict[str, Any]) -> list[ShapeFinding]:
    out: list[ShapeFinding] = []
    t = g.t
    # max_neighbours: ORKG's busiest nodes (a research field, a venue) have a few hundred edges
    degree = np.bincount(t.s, minlength=t.n_nodes) + np.bincount(t.o, minlength=t.n_nodes)
    busy = np.flatnonzero(degree > d.max_neighbours) if d.max_neighbours > 0 else np.empty(0, dtype=np.int64)
    m["max_degree"] = int(degree.max()) if t.n_triples else 0
    m["nodes_over_max_neighbours"] = len(busy)
    if len(busy):
        k = int(degree[busy].max())
        uid = max(t.uids_of(busy[degree[busy] == k].tolist()))  # the busiest, ties by the greatest id
        ent = kg.entity(uid)
        out.append(ShapeFinding(
            "max_neighbours", _REASONING, str(d.max_neighbours),
            f"{len(busy):,} node(s) have more than {d.max_neighbours} edges (most: {ent.text if ent else uid}, "
            f"{k:,})", f"the walks read only the first {d.max_neighbours} edges around them", _COMPARE))

    # label predicates: ORKG labels every node with rdfs:label
    nodes = int(g.nodes.sum())
    bare = g.nodes & ~t.labelled if t.labelled is not None else np.zeros(t.n_nodes, dtype=bool)
    n_bare = int(bare.sum())
    m["unlabelled_share"] = round(n_bare / nodes, 4) if nodes else 0.0
    if nodes and n_bare / nodes >= UNLABELLED_SHARE:
        hint = _label_candidate(kg, g, bare, n_bare)
        out.append(ShapeFinding(
            "user_graphs.label_predicates (params.yaml)", "every method", "rdfs:label, skos:prefLabel, schema:name, "
            "dcterms:title, foaf:name",
            f"{_pct(n_bare / nodes)} of the nodes ({n_bare:,} of {nodes:,}) have no label from a "
            "label predicate", "they show their IRI's local name to every method",
            f"add their label predicate{hint}"))

    # triple_text: ids: ORKG ids are short; a derived id is a long number, noise in every unit's text
    derived = int((g.nodes & (t.uid_len - 1 > _ORKG_ID_DIGITS)).sum())
    m["derived_id_share"] = round(derived / nodes, 4) if nodes else 0.0
    if d.triple_text == "ids" and nodes and derived / nodes >= DERIVED_ID_SHARE:
        out.append(ShapeFinding(
            "triple_text", _UNIT_METHODS, d.triple_text,
            f"{_pct(derived / nodes)} of the nodes have an id derived from their IRI (R + a number of up to 18 "
            "digits), not an ORKG id", "every triple unit's text carries two such numbers the question never holds",
            "the methods' search_space offers triple_text: labels (hublab compare and tune-all tune it)"))

    # context: paper: the title of the owning Paper, which only ORKG graphs have
    if not kg.entities_by_type(PAPER_TYPE):
        out.append(ShapeFinding(
            "context", _UNIT_METHODS, "none (search_space offers paper)", f"no node of type {PAPER_TYPE}",
            "context: paper appends nothing here, so its trials repeat context: none",
            "nothing to do: the tuner finds them equal"))
    return out


def _label_candidate(kg: KnowledgeGraph, g: _Graph, bare: np.ndarray, n_bare: int) -> str:
    """`` (e.g. <IRI>, on N% of them)``: the literal-valued predicate (by label) that most unlabelled nodes have
    exactly once."""
    names, _carrying, once = literal_predicates(g.t, bare)
    if not once.any():
        return ""
    k = int(once.max())
    pred = max(names[i] for i in np.flatnonzero(once == k))
    iri_of = getattr(kg, "predicate_iri_of", None)
    iri = iri_of(pred) if iri_of is not None else None
    return f" (e.g. {iri or pred}, once on {_pct(k / n_bare)} of them)"
