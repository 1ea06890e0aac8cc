"""Answers and output triples (§4.8): partial answers per hub, the final answer with [i] citations and
a source list, and output-triple filtering. Each step has an LLM and an LLM-free implementation."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.text import triple_text

INSUFFICIENT = "insufficient information"


@dataclass
class HubContext:
    root: str
    title: str
    doi: str | None
    score: float
    path_texts: list[str]
    triples: list[str]  # canonical triple strings, best path first


@dataclass
class Partial:
    hub: HubContext
    text: str


def paper_meta(graph: KnowledgeGraph, root: str) -> tuple[str, str | None]:
    ent = graph.entity(root)
    doi = next((t.object.text for t in graph.outgoing(root) if t.predicate.lower() == "doi"), None)
    return (ent.text if ent else root), doi


def partial_answers(question: str, hubs: list[HubContext], llm: LLM | None, common: str, *,
                    max_workers: int = 8) -> list[Partial]:
    def extractive(h: HubContext) -> Partial | None:
        # LLM-free: a hub contributes when it has matched paths; its best facts are the partial answer
        return Partial(h, "; ".join(h.path_texts[:3])) if h.path_texts else None

    if llm_free(llm):
        return [p for p in map(extractive, hubs) if p is not None]

    def one(h: HubContext) -> Partial | None:
        texts = "\n".join(f"- {pt}\n  triples: {', '.join(h.triples[:6])}" for pt in h.path_texts)
        r = llm.complete(prompts.PARTIAL.format(question=question, common_information=common or "-", texts=texts),
                         json_schema=prompts.PARTIAL_SCHEMA, max_tokens=300)
        data = r.data if r.error is None else None
        text = data.get("partial_answer") if isinstance(data, dict) else None
        if not isinstance(text, str):  # failed call or malformed JSON: degrade to the LLM-free step
            return extractive(h)
        relevant = data.get("relevant", True)
        if relevant is False or str(relevant).strip().lower() == "false":
            return None
        text = text.strip()
        if not text or INSUFFICIENT in text.lower():
            return None
        return Partial(h, text)

    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        return [p for p in pool.map(one, hubs) if p is not None]


def final_answer(question: str, partials: list[Partial], llm: LLM | None) -> str:
    sources = "\n".join(f"[{i}] {p.hub.title}" + (f", {p.hub.doi}" if p.hub.doi else "")
                        for i, p in enumerate(partials, start=1))
    body = ""
    if not llm_free(llm):
        listing = "\n".join(f"[{i}] {p.text}" for i, p in enumerate(partials, start=1))
        r = llm.complete(prompts.FINAL.format(question=question, partials=listing), max_tokens=600)
        if r.error is None and r.text.strip():
            body = r.text.strip()
    if not body:
        body = "Relevant information found in the knowledge graph:\n" + "\n".join(
            f"- {p.text} [{i}]" for i, p in enumerate(partials, start=1))
    return f"{body}\n\n{sources}"


def filter_triples(question: str, answer: str, triples: list[str], parsed: dict[str, object], qvecs: np.ndarray,
                   embedder: Embedder, llm: LLM | None, *, llm_filter: bool, min_similarity: float,
                   min_keep: int) -> list[tuple[str, float]]:
    """PREPAREOUTPUTTRIPLES. Returns (triple, score) best first.

    LLM-free: every triple is scored by its best cosine similarity to the question or a component and
    re-ranked by it; triples below ``min_similarity`` are dropped, but at least ``min_keep`` remain.
    With an LLM, the triple-filtering prompt selects ids; the similarity order is kept for those ids."""
    if not triples:
        return []
    texts = [triple_text(parsed[t]) if t in parsed else t for t in triples]  # type: ignore[arg-type]
    sims = (embedder.embed(texts) @ qvecs.T).max(axis=1)
    order = sorted(range(len(triples)), key=lambda i: -float(sims[i]))
    if llm_filter and not llm_free(llm):
        listing = "\n".join(f"{i}: {triples[i]}" for i in order[:200])
        r = llm.complete(prompts.FILTER.format(question=question, answer=answer, triples=listing),
                         json_schema=prompts.FILTER_SCHEMA, max_tokens=400)
        if r.error is None and isinstance(r.data, dict):
            keep = {i for i in r.data.get("ids", []) if isinstance(i, int) and 0 <= i < len(triples)}
            if keep:
                return [(triples[i], float(sims[i])) for i in order if i in keep]
    kept = [i for i in order if sims[i] >= min_similarity]
    if len(kept) < min_keep:
        kept = order[:min_keep]
    return [(triples[i], float(sims[i])) for i in kept]
