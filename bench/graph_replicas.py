"""The replica N-Triples files ``bench/bench_graph_scale.py`` reads: a base graph's hubs (papers, software
applications) copied, each with the subgraph it owns, under fresh IRIs until the file has the triples asked for.
Written line by line, never held in memory, and reused when they exist (the file name carries the size)."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".cache" / "bench_graph_scale"

#: per graph: the base file, its hub type (whose instances' subgraphs are copied) and its questions
GRAPHS = {
    "gv1": (ROOT / "data/graphs/gv1.ttl", "Paper", "data/kgqa/gv1.jsonl"),
    "catalogue": (ROOT / "examples/graphs/catalogue/graph.ttl", "https://schema.org/SoftwareApplication",
                  "examples/graphs/catalogue/questions.csv"),
}


# ---------------------------------------------------------------- the replica file
def _owned(kg, hubs: list[str]) -> tuple[set[str], set[str]]:
    """The nodes some hub owns (reachable from it without passing another hub or a node several subjects point
    to), and the hubs: what a copy duplicates (``hublab.graph.synthetic.paper_owned_nodes`` for any hub type)."""
    hub_set = set(hubs)
    owned: set[str] = set()
    for hub in hubs:
        mine, stack = {hub}, [hub]
        while stack:
            for t in kg.outgoing(stack.pop()):
                o = t.object.uid
                if o in mine or o in hub_set or len({s.subject.uid for s in kg.incoming(o)}) > 1:
                    continue
                mine.add(o)
                stack.append(o)
        owned |= mine
    return owned, hub_set


def write_replica(name: str, triples: int) -> dict:
    """``name``'s base graph copied until the file has at least ``triples`` lines (N-Triples), written copy by copy.
    Reused when it exists (the file name carries the size)."""
    from rdflib import RDFS, BNode, Graph, Literal, URIRef

    from hublab.graph.rdf import RdfKnowledgeGraph

    base, hub_type, _ = GRAPHS[name]
    out = WORK / f"{name}_{triples}.nt"
    meta = out.with_suffix(".json")
    if out.exists() and meta.exists():
        return json.loads(meta.read_text())
    kg = RdfKnowledgeGraph.load(base, name=name)
    hubs = sorted(e.uid for e in kg.entities_by_type(hub_type))
    owned_uids, hub_uids = _owned(kg, hubs)
    owned = {str(kg.term_of(u)) for u in owned_uids if isinstance(kg.term_of(u), URIRef)}
    hub_iris = {str(kg.term_of(u)) for u in hub_uids}
    g = Graph()
    g.parse(base)
    copied, once = [], []
    for s, p, o in sorted(g, key=lambda t: (str(t[0]), str(t[1]), t[2].n3())):
        own_s = isinstance(s, BNode) or str(s) in owned
        own_o = isinstance(o, BNode) or (isinstance(o, URIRef) and str(o) in owned)
        (copied if own_s or own_o else once).append((s, p, o, own_s, own_o))

    def term(t, own: bool, c: int) -> str:
        if not own or c == 0:
            return t.n3()
        return f"_:{t}x{c}" if isinstance(t, BNode) else f"<{t}x{c}>"

    WORK.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".part")
    lines = 0
    copies = 0
    with tmp.open("w", encoding="utf-8") as f:
        for s, p, o, *_ in once:
            f.write(f"{s.n3()} {p.n3()} {o.n3()} .\n")
        lines += len(once)
        while lines < triples:
            c = copies
            for s, p, o, own_s, own_o in copied:
                obj = term(o, own_o, c)
                if c and p == RDFS.label and str(s) in hub_iris and isinstance(o, Literal):
                    obj = Literal(f"{o} (copy {c})", lang=o.language, datatype=o.datatype).n3()
                f.write(f"{term(s, own_s, c)} {p.n3()} {obj} .\n")
            lines += len(copied)
            copies += 1
    tmp.replace(out)
    info = {"file": str(out.relative_to(ROOT)), "triples": lines, "copies": copies, "hubs_per_copy": len(hubs),
            "mb": round(out.stat().st_size / 1e6, 1)}
    meta.write_text(json.dumps(info))
    return info
