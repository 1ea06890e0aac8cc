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

from collections import Counter, defaultdict, deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from hublab.graph.base import PAPER_TYPE, KnowledgeGraph
from hublab.graph.model import Knowledge, Triple
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
    """The graph's triples once, with out-adjacency and in-degrees: every measure reads these."""

    def __init__(self, kg: KnowledgeGraph) -> None:
        self.triples: list[Triple] = list(kg.triples())
        self.out: dict[str, list[Triple]] = defaultdict(list)
        self.inc: dict[str, list[Triple]] = defaultdict(list)
        pointing: dict[str, set[str]] = defaultdict(set)
        for t in self.triples:
            self.out[t.subject.uid].append(t)
            self.inc[t.object.uid].append(t)
            pointing[t.object.uid].add(t.subject.uid)
        self._shared = {uid for uid, subjects in pointing.items() if len(subjects) > 1}

    def is_leaf(self, t: Triple) -> bool:
        return t.object.is_literal or not self.out.get(t.object.uid)

    def shared(self, uid: str) -> bool:
        """More than one subject points at the node."""
        return uid in self._shared


def _walk(g: _Graph, starts: Iterable[str], hubs: set[str], cap: int | None = None) -> tuple[dict[str, int], int]:
    """Along edge direction from ``starts`` as hub paths go (stopping at a leaf and at another hub): each reached
    node's depth (the start's own triples are at depth 1) and the number of triples walked (at most ``cap``)."""
    depth: dict[str, int] = {}
    queue: deque[str] = deque()
    for s in starts:
        depth[s] = 0
        queue.append(s)
    walked = 0
    while queue:
        node = queue.popleft()
        if node in hubs and depth[node] > 0:
            continue  # another hub: the edge into it is on the path, its own triples are not
        for t in g.out.get(node, ()):
            walked += 1
            if cap is not None and walked >= cap:
                return depth, walked
            o = t.object.uid
            if o not in depth:
                depth[o] = depth[node] + 1
                queue.append(o)
    return depth, walked


def _undirected_distances(g: _Graph, hubs: set[str]) -> dict[str, int]:
    """Hops from the nearest hub, edges walked either way (a lower bound of HubLink's levels from a topic entity)."""
    dist = dict.fromkeys(hubs, 0)
    queue = deque(sorted(hubs))
    while queue:
        node = queue.popleft()
        for t in (*g.out.get(node, ()), *g.inc.get(node, ())):
            other = t.object.uid if t.subject.uid == node else t.subject.uid
            if other not in dist:
                dist[other] = dist[node] + 1
                queue.append(other)
    return dist


def shape_report(kg: KnowledgeGraph, hub_types: list[str] | None = None, *,
                 defaults: ShapeDefaults | None = None) -> ShapeReport:
    """Measure the graph against every ORKG-shaped default in ``defaults`` and list the ones that look wrong."""
    d = defaults or ShapeDefaults()
    wanted = list(hub_types or d.hub_types)
    g = _Graph(kg)
    nodes = [e for e in kg.entities() if not e.is_literal]
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
    m["triples"] = len(g.triples)
    m["nodes"] = len(nodes)
    if hubs and g.triples:
        findings += _hub_findings(g, hubs, measured_with, nodes, d, m,
                                  measured_with[0] if measured_with != wanted else None)
    findings += _graph_findings(kg, g, nodes, d, m)
    report.findings = findings
    return report


def _hub_findings(g: _Graph, hubs: set[str], hub_names: list[str], nodes: list[Knowledge], d: ShapeDefaults,
                  m: dict[str, Any], stand_in: str | None) -> list[ShapeFinding]:
    out: list[ShapeFinding] = []
    note = f" (measured with the candidate hub type {stand_in})" if stand_in else ""
    reached, _ = _walk(g, sorted(hubs), hubs)
    covered = [t for t in g.triples if t.subject.uid in reached]  # every hub is a start: reached at depth 0
    n = len(covered)
    m["hub_triples"] = n
    m["hub_triples_share"] = round(n / len(g.triples), 4)
    m["deepest_hub_triple"] = max((reached[t.subject.uid] + 1 for t in covered), default=0)
    unreached = 1 - n / len(g.triples)
    if unreached >= UNREACHED_SHARE:
        out.append(ShapeFinding(
            "hub_types", _HUBLINK, ", ".join(sorted(hub_names)),
            f"{_pct(unreached)} of the graph's triples ({len(g.triples) - n:,} of {len(g.triples):,}) lie on no path "
            f"from a hub{note}", "HubLink never returns them",
            "choose hub types whose instances lead to them (--hub-type; hublab graph check lists candidates)"))

    # output_value_boost: the answers are the leaves of a paper's tree in ORKG; shared inner nodes are answers too
    leaves = sum(1 for t in covered if g.is_leaf(t))
    shared_inner = Counter(t.predicate for t in covered if not g.is_leaf(t) and t.object.uid not in hubs
                           and g.shared(t.object.uid))
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
    dist = _undirected_distances(g, hubs)
    entries = [e.uid for e in nodes if e.uid not in hubs and g.shared(e.uid)]
    far = [dist[u] for u in entries if u in dist and dist[u] > d.max_retrieval_level]
    m["shared_nodes"] = len(entries)
    m["farthest_shared_node_hops"] = max((dist[u] for u in entries if u in dist), default=0)
    m["shared_nodes_beyond_max_retrieval_level"] = len(far)
    m["nodes_without_hub"] = sum(1 for e in nodes if e.uid not in dist)
    if len(far) >= FAR_NODES and len(far) / len(entries) >= FAR_NODE_SHARE:
        out.append(ShapeFinding(
            "max_retrieval_level", _HUBLINK, str(d.max_retrieval_level),
            f"{_pct(len(far) / len(entries))} of the nodes several subjects point at ({len(far):,} of "
            f"{len(entries):,}: categories, concepts, organisations, the likely topic entities) lie more than "
            f"{d.max_retrieval_level} hops from every hub (up to {max(far)}){note}",
            "from such a topic entity the graph-traversal strategy finds no hub", _COMPARE))

    # max_hub_path_length / output_expand_hubs: in ORKG each paper owns its subgraph; shared subgraphs repeat
    ordered = sorted(hubs)
    step = max(1, len(ordered) // SAMPLE_HUBS)
    sample = ordered[::step][:SAMPLE_HUBS]
    sizes = sorted(_walk(g, [h], hubs, WALK_CAP)[1] for h in sample)
    per_hub = sizes[len(sizes) // 2] if sizes else 0
    overlap = (sum(sizes) / len(sizes)) * len(hubs) / n if n and sizes else 0.0
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


def _graph_findings(kg: KnowledgeGraph, g: _Graph, nodes: list[Knowledge], d: ShapeDefaults,
                    m: dict[str, Any]) -> list[ShapeFinding]:
    out: list[ShapeFinding] = []
    # max_neighbours: ORKG's busiest nodes (a research field, a venue) have a few hundred edges
    degree: Counter[str] = Counter()
    for t in g.triples:
        degree[t.subject.uid] += 1
        degree[t.object.uid] += 1
    busy = [(u, k) for u, k in degree.items() if k > d.max_neighbours] if d.max_neighbours > 0 else []
    m["max_degree"] = max(degree.values(), default=0)
    m["nodes_over_max_neighbours"] = len(busy)
    if busy:
        uid, k = max(busy, key=lambda x: (x[1], x[0]))
        ent = kg.entity(uid)
        out.append(ShapeFinding(
            "max_neighbours", _REASONING, str(d.max_neighbours),
            f"{len(busy):,} node(s) have more than {d.max_neighbours} edges (most: {ent.text if ent else uid}, "
            f"{k:,})", f"the walks read only the first {d.max_neighbours} edges around them", _COMPARE))

    # label predicates: ORKG labels every node with rdfs:label
    labelled = getattr(kg, "has_label", None)
    bare = [e for e in nodes if labelled is not None and not labelled(e.uid)]
    m["unlabelled_share"] = round(len(bare) / len(nodes), 4) if nodes else 0.0
    if nodes and len(bare) / len(nodes) >= UNLABELLED_SHARE:
        hint = _label_candidate(kg, g, {e.uid for e in bare})
        out.append(ShapeFinding(
            "user_graphs.label_predicates (params.yaml)", "every method", "rdfs:label, skos:prefLabel, schema:name, "
            "dcterms:title, foaf:name",
            f"{_pct(len(bare) / len(nodes))} of the nodes ({len(bare):,} of {len(nodes):,}) have no label from a "
            "label predicate", "they show their IRI's local name to every method",
            f"add their label predicate{hint}"))

    # triple_text: ids: ORKG ids are short; a derived id is a long number, noise in every unit's text
    derived = sum(1 for e in nodes if len(e.uid) - 1 > _ORKG_ID_DIGITS)
    m["derived_id_share"] = round(derived / len(nodes), 4) if nodes else 0.0
    if d.triple_text == "ids" and nodes and derived / len(nodes) >= DERIVED_ID_SHARE:
        out.append(ShapeFinding(
            "triple_text", _UNIT_METHODS, d.triple_text,
            f"{_pct(derived / len(nodes))} of the nodes have an id derived from their IRI (R + a number of up to 18 "
            "digits), not an ORKG id", "every triple unit's text carries two such numbers the question never holds",
            "the methods' search_space offers triple_text: labels (hublab compare and tune-all tune it)"))

    # context: paper: the title of the owning Paper, which only ORKG graphs have
    if not kg.entities_by_type(PAPER_TYPE):
        out.append(ShapeFinding(
            "context", _UNIT_METHODS, "none (search_space offers paper)", f"no node of type {PAPER_TYPE}",
            "context: paper appends nothing here, so its trials repeat context: none",
            "nothing to do: the tuner finds them equal"))
    return out


def _label_candidate(kg: KnowledgeGraph, g: _Graph, bare: set[str]) -> str:
    """`` (e.g. <IRI>, on N% of them)``: the literal-valued predicate that most unlabelled nodes have exactly once."""
    per_pred: Counter[str] = Counter()
    for uid in bare:
        seen = Counter(t.predicate for t in g.out.get(uid, ()) if t.object.is_literal)
        per_pred.update(p for p, k in seen.items() if k == 1)
    if not per_pred:
        return ""
    pred, k = max(per_pred.items(), key=lambda kv: (kv[1], kv[0]))
    iri_of = getattr(kg, "predicate_iri_of", None)
    iri = iri_of(pred) if iri_of is not None else None
    return f" (e.g. {iri or pred}, once on {_pct(k / len(bare))} of them)"
