"""Label-level graph comparison: how close a rebuilt graph is to a reference (e.g. GV3 vs the ORKG export).

Ids differ between any two builds of the same data (the ORKG mints its own), so triples are compared as
multisets of ``(subject label, predicate, object label)``. An optional scope restricts a graph to the
subgraphs of its papers (what hangs off ``Paper`` nodes), which drops export noise such as templates
(NodeShape/PropertyShape), comparisons and paper versions.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from hublab.graph.backends import open_file
from hublab.graph.base import PAPER_TYPE, KnowledgeGraph
from hublab.graph.model import Triple


def paper_triples(kg: KnowledgeGraph, research_field: str | None = None) -> list[Triple]:
    """Triples reachable from the graph's papers (optionally only papers of one research field)."""
    papers = [e.uid for e in kg.entities_by_type(PAPER_TYPE)]
    if research_field is not None:
        papers = [p for p in papers if any(t.predicate == "research field" and t.object.uid == research_field
                                           for t in kg.outgoing(p))]
    seen: set[str] = set()
    out: list[Triple] = []
    stack = sorted(papers, reverse=True)
    while stack:
        uid = stack.pop()
        if uid in seen:
            continue
        seen.add(uid)
        for t in kg.outgoing(uid):
            out.append(t)
            if t.object.uid not in seen:
                stack.append(t.object.uid)
    return out


def _keys(triples: list[Triple]) -> Counter[tuple[str, str, str]]:
    return Counter(t.label_key() for t in triples)


def compare_triples(candidate: list[Triple], reference: list[Triple], *, sample: int = 20) -> dict:
    """Multiset precision/recall/Jaccard of candidate vs reference label triples."""
    a, b = _keys(candidate), _keys(reference)
    inter = sum((a & b).values())
    union = sum((a | b).values())
    na, nb = sum(a.values()), sum(b.values())
    missing = b - a  # in the reference, not in the candidate
    extra = a - b
    by_pred_missing: Counter[str] = Counter()
    for (_, p, _), n in missing.items():
        by_pred_missing[p] += n
    by_pred_extra: Counter[str] = Counter()
    for (_, p, _), n in extra.items():
        by_pred_extra[p] += n
    return {
        "precision": inter / na if na else 0.0,
        "recall": inter / nb if nb else 0.0,
        "jaccard": inter / union if union else 1.0,
        "candidate_triples": na,
        "reference_triples": nb,
        "common_triples": inter,
        "missing_count": sum(missing.values()),
        "extra_count": sum(extra.values()),
        "missing_by_predicate": dict(by_pred_missing.most_common()),
        "extra_by_predicate": dict(by_pred_extra.most_common()),
        "missing_sample": [list(k) for k in sorted(missing)[:sample]],
        "extra_sample": [list(k) for k in sorted(extra)[:sample]],
    }


def compare_graphs(a: KnowledgeGraph | str | Path, b: KnowledgeGraph | str | Path, *, scope: str = "papers",
                   research_field: str | None = None, sample: int = 20) -> dict:
    """Compare candidate ``a`` with reference ``b`` at label level.

    ``scope="papers"`` (default) compares only what hangs off Paper nodes on both sides; ``"all"`` compares
    every triple. precision = |A∩B|/|A|, recall = |A∩B|/|B|, jaccard = |A∩B|/|A∪B| (multisets). A path is read
    with the default settings (:func:`~hublab.graph.backends.open_file`).
    """
    ga = a if isinstance(a, KnowledgeGraph) else open_file(a)
    gb = b if isinstance(b, KnowledgeGraph) else open_file(b)
    if scope == "papers":
        ta, tb = paper_triples(ga, research_field), paper_triples(gb, research_field)
    elif scope == "all":
        ta, tb = list(ga.triples()), list(gb.triples())
    else:
        raise ValueError(f"scope must be 'papers' or 'all', got {scope!r}")
    result = compare_triples(ta, tb, sample=sample)
    result.update({"scope": scope, "candidate_papers": len(ga.entities_by_type(PAPER_TYPE)),
                   "reference_papers": len(gb.entities_by_type(PAPER_TYPE)),
                   "candidate_all_triples": len(ga), "reference_all_triples": len(gb)})
    return result


def graph_stats(kg: KnowledgeGraph) -> dict:
    """Counts a researcher checks first: triples, entities, papers, contributions, predicates, depth."""
    preds = Counter(t.predicate for t in kg.triples())
    types: Counter[str] = Counter()
    literals = 0
    n_entities = 0
    for e in kg.entities():
        n_entities += 1
        literals += e.is_literal
        for t in e.types:
            types[t] += 1
    papers = kg.entities_by_type(PAPER_TYPE)
    depth = 0
    for p in papers:  # longest path from a paper (graphs are trees under each paper)
        frontier, d, seen = [p.uid], 0, {p.uid}
        while frontier:
            nxt = [t.object.uid for u in frontier for t in kg.outgoing(u) if t.object.uid not in seen]
            seen.update(nxt)
            if nxt:
                d += 1
            frontier = nxt
        depth = max(depth, d)
    return {
        "triples": len(kg),
        "paper_subgraph_triples": len(paper_triples(kg)),
        "entities": n_entities,
        "literals": literals,
        "papers": len(papers),
        "contributions": types.get("Contribution", 0),
        "max_depth_from_paper": depth,
        "types": dict(types.most_common()),
        "predicates": dict(preds.most_common()),
    }
