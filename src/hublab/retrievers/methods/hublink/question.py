"""Question processing (PROCESSQUESTION): the question plus its components, all embedded.

Components come from the LLM (component-extraction prompt) or, LLM-free, from rules: quoted strings,
years and numbers, and every label of the graph's short vocabulary (literal values, types, predicates)
that occurs in the question — the deterministic stand-in for the LLM's decomposition.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.llm.base import LLM, llm_free
from hublab.retrievers.components.question_text import STOPWORDS, quoted_spans, unique_ci
from hublab.retrievers.methods.hublink import prompts

_YEAR = re.compile(r"\b(19|20)\d{2}\b")
_WORD = re.compile(r"[a-z0-9]+")


@dataclass
class ProcessedQuestion:
    question: str
    components: list[str]
    vectors: np.ndarray  # row 0 = question, then one row per component


def _norm(s: str) -> str:
    return " ".join(_WORD.findall(s.lower()))


class Vocabulary:
    """Short labels of the graph (≤ 6 words): values, types and predicates a question may mention."""

    def __init__(self, graph: KnowledgeGraph, max_words: int = 6) -> None:
        labels: dict[str, str] = {}
        for t in graph.triples():
            for text in (t.predicate, t.object.text):
                n = _norm(text)
                if n and len(n.split()) <= max_words and n not in STOPWORDS and len(n) > 2:
                    labels.setdefault(n, text)
        self.labels = labels

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


def rule_components(question: str, vocab: Vocabulary) -> list[str]:
    years = [m.group(0) for m in _YEAR.finditer(question)]
    return unique_ci([*quoted_spans(question), *years, *vocab.find(question)])


def process_question(question: str, embedder: Embedder, *, llm: LLM | None, vocab: Vocabulary | None,
                     extract_components: bool) -> ProcessedQuestion:
    comps: list[str] = []
    if extract_components:
        if not llm_free(llm):
            r = llm.complete(prompts.COMPONENTS.format(question=question), json_schema=prompts.COMPONENTS_SCHEMA,
                             max_tokens=200)
            raw = r.data.get("components") if r.error is None and isinstance(r.data, dict) else None
            if isinstance(raw, list):  # malformed output (a string, a number, ...) falls back to the rules
                comps = [str(c).strip() for c in raw if isinstance(c, (str, int, float)) and str(c).strip()]
                comps = unique_ci(comps)[:12]
        if not comps and vocab is not None:  # LLM-free, or the LLM failed: rules
            comps = rule_components(question, vocab)
    vectors = embedder.embed([question, *comps])
    return ProcessedQuestion(question, comps, vectors)
