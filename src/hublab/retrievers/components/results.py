"""Building retrieval results: empty-but-valid results, unit rankings → contexts, answer attribution."""

from __future__ import annotations

from typing import Any

from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple
from hublab.retrievers.base import Context, RetrievalResult
from hublab.retrievers.components.fusion import rrf
from hublab.retrievers.components.units import Unit, node_result_contexts


def empty(reason: str, **extra: Any) -> RetrievalResult:
    """An empty-but-valid result that says why (retrievers never raise on bad input)."""
    res = RetrievalResult(reason=reason)
    if extra:
        res.sources = [{k: str(v) for k, v in extra.items()}]
    return res


def join_reasons(*reasons: str | None) -> str | None:
    parts = [r for r in reasons if r]
    return "; ".join(dict.fromkeys(parts)) or None


def dedupe_contexts(contexts: list[Context], limit: int) -> list[Context]:
    """First occurrence of each context text, at most ``limit``."""
    out: list[Context] = []
    seen: set[str] = set()
    for c in contexts:
        if c.text in seen:
            continue
        seen.add(c.text)
        out.append(c)
        if len(out) >= limit:
            break
    return out


def assemble(
    graph: KnowledgeGraph, ranked: dict[str, list[tuple[Unit, float]]], n_results: int, *, nodes_out: bool
) -> list[Context]:
    """Turn per-kind unit rankings into contexts: nodes (SKB) or triples (ORKG, node hits expanded)."""
    if nodes_out:
        merged = sorted(ranked.get("nodes", []), key=lambda x: -x[1])
        return node_result_contexts(graph, merged, n_results, expand_triples=False)
    node_ctx = node_result_contexts(graph, ranked.get("nodes", []), n_results, expand_triples=True)
    triple_ctx = [u.to_context(s) for u, s in ranked.get("triples", [])]
    if node_ctx and triple_ctx:
        # Node and triple similarities are not comparable (and expanded triples share their node's score).
        merged_ctx = [c for c, _ in rrf([triple_ctx, node_ctx], key=lambda c: c.text)]
    else:
        merged_ctx = node_ctx or triple_ctx
    return dedupe_contexts(merged_ctx, n_results)


def sources_of(graph: KnowledgeGraph, triples: list[Triple], limit: int = 20) -> list[dict[str, str]]:
    """Papers the triples belong to (for answer attribution), first-seen order."""
    out: dict[str, dict[str, str]] = {}
    for t in triples:
        for node in (t.subject, t.object):
            if len(out) >= limit:
                break
            paper = graph.paper_of(node.uid, max_hops=4)
            if paper is not None and paper.uid not in out:
                out[paper.uid] = {"id": paper.uid, "title": paper.text}
    return list(out.values())


def far_end_answer(contexts: list[Context], start: str | None = None) -> str | None:
    """LLM-free short answer: the far end of the best-ranked triple (seen from the start node when in it)."""
    for c in contexts:
        t = c.triple
        if t is None:
            continue
        if start is not None and t.object.uid == start:
            return t.subject.text
        return t.object.text
    return None
