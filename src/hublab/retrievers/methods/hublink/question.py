"""Question processing (PROCESSQUESTION): the question plus its components, all embedded.

Components come from the LLM (component-extraction prompt) or, LLM-free, from rules: quoted strings,
years and numbers, and every label of the graph's short vocabulary (literal values, types, predicates)
that occurs in the question — the deterministic stand-in for the LLM's decomposition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hublab import observability
from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.components.llm_json import response_list
from hublab.retrievers.components.question_text import STOPWORDS, quoted_spans, unique_ci
from hublab.retrievers.methods.hublink import prompts
from hublab.retrievers.methods.hublink.text import ask

_YEAR = re.compile(r"\b(19|20)\d{2}\b")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class ProcessedQuestion:
    question: str
    components: list[str]
    vectors: np.ndarray  # row 0 = question, then one row per component
    fallbacks: list[str] = field(default_factory=list)  # "components: <reason>" when the LLM step fell back
    # graph labels named in the question but left out of the search by the label filter (``split_components``)
    frequent_labels: list[str] = field(default_factory=list)


def _norm(s: str) -> str:
    return " ".join(_WORD.findall(s.lower()))


class Vocabulary:
    """Short labels of the graph (≤ 6 words): values, types and predicates a question may mention, with how
    often each occurs (as a predicate or an object) and the number of hub roots, so that a label every hub
    carries ("publication year", "venue") can be told from one that singles out a few ("Technical Debt")."""

    def __init__(self, graph: KnowledgeGraph, max_words: int = 6, hub_types: list[str] | None = None) -> None:
        labels: dict[str, str] = {}
        counts: dict[str, int] = {}
        for t in graph.triples():
            for text in (t.predicate, t.object.text):
                n = _norm(text)
                if n and len(n.split()) <= max_words and n not in STOPWORDS and len(n) > 2:
                    labels.setdefault(n, text)
                    counts[n] = counts.get(n, 0) + 1
        self.labels = labels
        self.counts = counts
        self.n_hubs = max(1, sum(len(graph.entities_by_type(h)) for h in (hub_types or [])))

    def share(self, label: str) -> float:
        """Occurrences of ``label`` per hub root (0 for text that is no graph label: quoted titles)."""
        return self.counts.get(_norm(label), 0) / self.n_hubs

    def find(self, question: str) -> list[str]:
        q = f" {_norm(question)} "
        hits = [(n, text) for n, text in self.labels.items() if f" {n} " in q]
        # prefer the longest matches; drop ones contained in a longer match
        hits.sort(key=lambda h: -len(h[0]))
        kept: list[tuple[str, str]] = []
        for n, text in hits:
            if not any(f" {n} " in f" {k} " for k, _ in kept):
                kept.append((n, text))
        return [text for _, text in kept]


def split_components(question: str, vocab: Vocabulary, max_share: float | None) -> tuple[list[str], list[str]]:
    """(components, frequent labels). Components: quoted spans, years and graph labels found in the question. With
    ``max_share``, a label that occurs more often than ``max_share`` times per hub root is left out: embedded alone it
    scores every hub alike (each paper has a "publication year"), so it only crowds the search; the full question
    still carries it. Those left-out labels are returned apart: they pick no paper, but they say which attribute is
    asked for ("evaluation method"), so the LLM-free output ranking still scores triples against them."""
    labels = vocab.find(question)
    years = [m.group(0) for m in _YEAR.finditer(question)]
    comps = unique_ci([*quoted_spans(question), *years, *labels])
    if max_share is None:
        return comps, []
    return ([c for c in comps if vocab.share(c) <= max_share],
            [c for c in unique_ci(labels) if vocab.share(c) > max_share])


def parse_components(r: Any) -> list[str] | None:
    """Components from the LLM: the bare list (its schema), ``{"components": [...]}``, or the python list Listing A.3
    asks for in the text. None when there is no list of strings (malformed)."""
    raw = response_list(r, "components")
    if not isinstance(raw, list) or not all(isinstance(c, (str, int, float)) for c in raw):
        return None
    return unique_ci([str(c).strip() for c in raw if str(c).strip()])[:12]


def process_question(question: str, embedder: Embedder, *, llm: LLM | None, vocab: Vocabulary | None,
                     extract_components: bool, max_component_share: float | None = None) -> ProcessedQuestion:
    """PROCESSQUESTION (Alg. 11). EXTRACTCOMPONENTS by the LLM (Listing A.3); LLM-free, or when the call fails or
    its output is malformed, by the rules (``split_components``), and the fallback is recorded. Traced as the
    ``question analysis`` span (components, how they were found, fall-backs)."""
    comps: list[str] = []
    frequent: list[str] = []
    fallbacks: list[str] = []
    source = "off"
    with observability.span("question analysis (hublink)", observability.PARSER,
                            inputs={"question": question, "extract_components": extract_components}) as sp:
        if extract_components:
            llm_done = False
            if not llm_free(llm):
                r = ask(llm, prompts.COMPONENTS.format(question=question), json_schema=prompts.COMPONENTS_SCHEMA,
                        max_tokens=256)
                parsed = parse_components(r) if r.error is None else None
                if parsed is None:
                    fallbacks.append(f"components: {r.error or 'malformed output'}")
                else:
                    comps, llm_done, source = parsed, True, "llm"
            if not llm_done and vocab is not None:
                # the label filter is part of the LLM-free question analysis; an LLM's failed call keeps the
                # earlier rules, so a configured LLM's path does not change
                comps, frequent = split_components(question, vocab, max_component_share if llm_free(llm) else None)
                source = "rules"
        vectors = embedder.embed([question, *comps])
        sp.set_outputs({"components": comps, "fallbacks": fallbacks})
        sp.set_attributes({"components_from": source, "n_vectors": int(len(vectors))})
    return ProcessedQuestion(question, comps, vectors, fallbacks, frequent)
