"""Answers and output triples (§4.8, Alg. 17-20): partial answers per hub, the final answer with [i] citations
and a source list, and PREPAREOUTPUTTRIPLES. Each step has an LLM and an LLM-free implementation; when the
LLM step fails (error, empty or malformed output) the step falls back to its LLM-free form and says so in
the ``fallbacks`` list it returns (one entry per fallback, ``"<step>: <reason>"``)."""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import TripleParseError, parse_triple_string
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.components.llm_json import response_list
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.text import ask, triple_text
from hublab.scores import dot_scores

INSUFFICIENT = prompts.INSUFFICIENT


@dataclass
class PathEvidence:
    """One kept HubPath of a hub: its text, its own triples (canonical strings, path order) and its score."""

    text: str
    triples: list[str]
    score: float


@dataclass
class HubContext:
    root: str
    title: str
    doi: str | None
    score: float
    paths: list[PathEvidence]  # best first
    path_to_topic: str = ""  # PATHTOTEXT of the hub root's PathToEntity (traversal strategy), else ""
    linked: list[str] = field(default_factory=list)  # GETLINKKNOWLEDGE texts

    @property
    def path_texts(self) -> list[str]:
        return [p.text for p in self.paths] + self.linked

    @property
    def triples(self) -> list[str]:
        """The hub's triples, deduplicated, best path first."""
        out: list[str] = []
        seen: set[str] = set()
        for p in self.paths:
            for t in p.triples:
                if t not in seen:
                    seen.add(t)
                    out.append(t)
        return out


@dataclass
class Partial:
    hub: HubContext
    text: str


def paper_meta(graph: KnowledgeGraph, root: str) -> tuple[str, str | None]:
    ent = graph.entity(root)
    doi = next((t.object.text for t in graph.outgoing(root) if t.predicate.lower() == "doi"), None)
    return (ent.text if ent else root), doi


def readable_triple(t: str) -> str:
    """``(subject, predicate, object)`` with labels: the format Listing A.4 names; ids carry no meaning."""
    try:
        p = parse_triple_string(t)
    except TripleParseError:
        return t
    return f"({p.subject_label}, {p.predicate}, {p.object_label})"


def _reason(r: Any, what: str) -> str:
    return str(r.error) if getattr(r, "error", None) else what


# ---------------------------------------------------------------- partial answers (Alg. 17, Listing A.1)


def common_information(h: HubContext) -> str:
    """What all texts of a hub share (Listing A.1's ``{common_information}``): the hub root, the text of the
    path from the topic entity to it (Alg. 17 lines 4-7) and any linked knowledge (lines 8-9)."""
    lines = [f"- All texts describe the publication (hub root) '{h.title}'" + (f", DOI {h.doi}" if h.doi else "") + "."]
    if h.path_to_topic:
        lines.append(f"- Path from the topic entity to this publication: {h.path_to_topic}")
    lines.extend(f"- Linked knowledge: {k}" for k in h.linked)
    return "\n".join(lines)


def hub_texts(h: HubContext) -> str:
    """Listing A.1's ``{texts}``: every kept path with its own description and its own triples (§4.8.1.1:
    "both the text description and the triples are included")."""
    return "\n".join(
        f"({i}) Description: {p.text}\n    Triples: {'; '.join(readable_triple(t) for t in p.triples)}"
        for i, p in enumerate(h.paths, start=1))


def partial_prompt(question: str, h: HubContext) -> str:
    return prompts.PARTIAL.format(question=question, common_information=common_information(h), texts=hub_texts(h))


def partial_answers(question: str, hubs: list[HubContext], llm: LLM | None, *, max_workers: int = 8,
                    ) -> tuple[list[Partial], list[str]]:
    """GETPARTIALANSWERFORHUB for every hub. Returns the partial answers (hub order kept) and the fallbacks.

    A hub is dropped only when its partial answer says "Insufficient Information" (as in the thesis).
    LLM-free, or when the call fails / returns nothing: the hub's best three path texts (extractive)."""

    def extractive(h: HubContext) -> Partial | None:
        return Partial(h, "; ".join(h.path_texts[:3])) if h.path_texts else None

    if llm_free(llm):
        return [p for p in map(extractive, hubs) if p is not None], []

    def one(h: HubContext) -> tuple[Partial | None, str | None]:
        r = ask(llm, partial_prompt(question, h), max_tokens=512)
        text = (r.text or "").strip() if r.error is None else ""
        if not text:
            return extractive(h), f"partial_answer: {_reason(r, 'empty response')}"
        if INSUFFICIENT in text.lower():
            return None, None
        return Partial(h, text), None

    with ThreadPoolExecutor(max_workers=max_workers) as pool:
        results = list(pool.map(one, hubs))
    return [p for p, _ in results if p is not None], [f for _, f in results if f]


# ---------------------------------------------------------------- final answer (Alg. 19, Listing A.2)

_CITE = re.compile(r"\[(\d+)\]")


def final_answer(question: str, partials: list[Partial], llm: LLM | None) -> tuple[str, list[str]]:
    """The answer with ``[i]`` citations, followed by the list of the sources it cites (``[i] title, DOI``)."""
    fallbacks: list[str] = []
    body = ""
    if not llm_free(llm):
        listing = "\n".join(f"[{i}] {p.text}" for i, p in enumerate(partials, start=1))
        r = ask(llm, prompts.FINAL.format(question=question, partial_answers=listing), max_tokens=1024)
        body = (r.text or "").strip() if r.error is None else ""
        if not body:
            fallbacks.append(f"final_answer: {_reason(r, 'empty response')}")
    if not body:  # LLM-free synthesis: every partial answer, each cited
        body = "Relevant information found in the knowledge graph:\n" + "\n".join(
            f"- {p.text} [{i}]" for i, p in enumerate(partials, start=1))
    cited = {int(m) for m in _CITE.findall(body)}
    sources = "\n".join(f"[{i}] {p.hub.title}" + (f", {p.hub.doi}" if p.hub.doi else "")
                        for i, p in enumerate(partials, start=1) if i in cited)
    return (f"{body}\n\n{sources}" if sources else body), fallbacks


# ---------------------------------------------------------------- output triples (Alg. 20, Listing A.4)


def thesis_triple_order(partials: list[Partial]) -> list[tuple[str, float]]:
    """Alg. 20 lines 2-5: all kept paths of the contributing hubs sorted by score (best first; ties keep hub
    order), their triples collected in path order, each triple once (with the score of its best path)."""
    paths = [p for part in partials for p in part.hub.paths]
    paths = sorted(paths, key=lambda p: -p.score)  # stable
    out: list[tuple[str, float]] = []
    seen: set[str] = set()
    for p in paths:
        for t in p.triples:
            if t not in seen:
                seen.add(t)
                out.append((t, p.score))
    return out


def parse_ids(r: Any) -> list[int] | None:
    """IDs from the filter call: the bare list Listing A.4 asks for (its schema), a one-key ``{"ids": [...]}`` or a
    list in the text. None when the output holds no list of integers (malformed)."""
    raw = response_list(r, "ids")
    if not isinstance(raw, list):
        return None
    ids: list[int] = []
    for x in raw:
        if isinstance(x, bool):
            return None
        if isinstance(x, int):
            ids.append(x)
        elif isinstance(x, str) and x.strip().isdigit():
            ids.append(int(x.strip()))
        else:
            return None
    return ids


def similarity_filter(triples: list[str], parsed: dict[str, object], qvecs: np.ndarray, embedder: Embedder, *,
                      min_similarity: float, min_keep: int) -> list[tuple[str, float]]:
    """LLM-free PREPAREOUTPUTTRIPLES: every triple is scored by its best cosine similarity to the question or a
    component and re-ranked by it; triples below ``min_similarity`` are dropped, but ``min_keep`` remain."""
    if not triples:
        return []
    texts = [triple_text(parsed[t]) if t in parsed else t for t in triples]  # type: ignore[arg-type]
    sims = dot_scores(embedder.embed(texts), qvecs).max(axis=1)  # portable: rounded float64 (hublab.scores)
    order = sorted(range(len(triples)), key=lambda i: (-float(sims[i]), triples[i]))
    kept = [i for i in order if sims[i] >= min_similarity]
    if len(kept) < min_keep:
        kept = order[:min_keep]
    return [(triples[i], float(sims[i])) for i in kept]


def llm_filter(question: str, answer: str, ordered: list[tuple[str, float]], llm: LLM,
               ) -> tuple[list[tuple[str, float]] | None, str | None]:
    """FILTERWITHLLM (Listing A.4) over the thesis-ordered triples; keeps the selected ones in that order.
    Returns (kept, None), or (None, reason) when the call failed or its output was malformed."""
    listing = "\n".join(f"{i}: {readable_triple(t)}" for i, (t, _) in enumerate(ordered))
    r = ask(llm, prompts.FILTER.format(question=question, answer=answer, contexts=listing),
                     json_schema=prompts.FILTER_SCHEMA, max_tokens=512)
    if r.error is not None:
        return None, str(r.error)
    ids = parse_ids(r)
    if ids is None:
        return None, "malformed output"
    keep = {i for i in ids if 0 <= i < len(ordered)}
    if ids and not keep:
        return None, "no valid triple id"
    return [ordered[i] for i in range(len(ordered)) if i in keep], None
