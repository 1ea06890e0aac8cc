"""One question through the pipeline (thesis §7.1.3): pre-retrieval → retrieval → post-retrieval →
generation. Optional pipes are skipped when disabled or when their LLM is the LLM-free backend;
an LLM failure in a pipe keeps the previous stage's output and is recorded, never raised. The pipes send the
thesis's Listings A.5-A.7 (``prompts.py``) and read the formats those listings ask for."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from hublab.errors import ServiceUnavailable
from hublab.llm.base import LLM, TokenUsage, llm_free
from hublab.pipeline import prompts
from hublab.pipeline.config import PipelineConfig
from hublab.retrievers.base import Context, RetrievalResult, Retriever


@dataclass
class PipelineOutput:
    question: str
    retrieval_question: str
    contexts: list[Context]
    answer: str
    reason: str | None = None
    sources: list[dict[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    runtime_s: float = 0.0
    usage: TokenUsage = field(default_factory=TokenUsage)
    #: LLM steps that fell back to their LLM-free form (the retriever's ``RetrievalResult.fallbacks`` plus the
    #: pipeline's own pipes); the runner counts them per question (``n_llm_fallbacks``).
    fallbacks: list[str] = field(default_factory=list)
    #: set when the retriever raised (the question is answered empty, and the runner counts it as an error)
    error: str | None = None

    @property
    def context_strings(self) -> list[str]:
        return [c.text for c in self.contexts]


def augmented_question(text: str) -> str:
    """Listing A.5's answer, "the augmented question directly": the reply stripped of surrounding whitespace and
    of the quotes the listing puts around the original question ("" when nothing is left)."""
    q = (text or "").strip()
    if len(q) >= 2 and q[0] == q[-1] and q[0] in "\"'":
        q = q[1:-1].strip()
    return q


def facts_answer(contexts: list[Context], limit: int = 5) -> str:
    """LLM-free answer: the top triples, verbalised. Honest about being extractive."""
    if not contexts:
        return "No relevant information was found in the knowledge graph."
    lines = []
    for c in contexts[:limit]:
        t = c.triple
        lines.append(f"{t.subject.text} — {t.predicate}: {t.object.text}" if t else c.text)
    return "Relevant facts from the knowledge graph:\n" + "\n".join(f"- {line}" for line in lines)


class Pipeline:
    def __init__(self, cfg: PipelineConfig, retriever: Retriever, *, pipe_llms: dict[str, LLM | None]) -> None:
        self.cfg = cfg
        self.retriever = retriever
        self.llms = pipe_llms

    def _active(self, pipe: str) -> LLM | None:
        if not getattr(self.cfg, pipe, {}).get("enabled"):
            return None
        llm = self.llms.get(pipe)
        return None if llm_free(llm) else llm

    def all_llms(self) -> list[LLM]:
        seen: dict[int, LLM] = {}
        for llm in [*self.llms.values(), self.retriever.resources.llm]:
            if llm is not None:
                seen[id(llm)] = llm
        return list(seen.values())

    def run(self, question: str, topic_entity_id: str | None = None,
            topic_entity_value: str | None = None) -> PipelineOutput:
        t0 = time.perf_counter()
        notes: list[str] = []
        fallbacks: list[str] = []
        error = None
        q = question
        llm = self._active("pre_retrieval")
        if llm is not None:
            r = llm.complete(prompts.AUGMENT.format(original_question=question), max_tokens=256)
            augmented = augmented_question(r.text) if r.error is None else ""
            if augmented:
                q = augmented
            else:
                why = r.error or "empty answer"
                notes.append(f"augmentation skipped: {why}")
                fallbacks.append(f"pre_retrieval: {why}")
        try:
            res: RetrievalResult = self.retriever.retrieve(q, topic_entity_id, topic_entity_value)
        except ServiceUnavailable:
            raise  # a server gone away fails every question alike: the run stops (hublab.errors)
        except Exception as exc:  # a retriever bug on one question must not end the run
            error = f"{type(exc).__name__}: {exc}"
            res = RetrievalResult(reason=f"retriever error: {error}")
        contexts = list(res.contexts)
        fallbacks.extend(getattr(res, "fallbacks", None) or [])
        llm = self._active("post_retrieval")
        if llm is not None and contexts:
            n_notes = len(notes)
            contexts = self._rerank(llm, q, contexts, notes)
            if len(notes) > n_notes:
                fallbacks.append(f"post_retrieval: {notes[-1]}")
        answer = res.answer or ""
        llm = self._active("generation")
        if llm is not None:
            listing = "\n".join(c.text for c in contexts[:150])
            r = llm.complete(prompts.GENERATE.format(context_explanation=prompts.KG_CONTEXT_EXPLANATION,
                                                     context=listing, question=question), max_tokens=512)
            if r.error is None and r.text.strip():
                answer = r.text.strip()
            else:
                why = r.error or "empty answer"
                notes.append(f"generation failed: {why}")
                fallbacks.append(f"generation: {why}")
        if not answer:
            answer = facts_answer(contexts)
        return PipelineOutput(question, q, contexts, answer, res.reason, res.sources, notes,
                              time.perf_counter() - t0, fallbacks=fallbacks, error=error)

    def _rerank(self, llm: LLM, q: str, contexts: list[Context], notes: list[str]) -> list[Context]:
        top_k = self.cfg.post_retrieval.get("top_k") or len(contexts)
        listing = "\n".join(f"{i}: {c.text}" for i, c in enumerate(contexts[:top_k]))
        r = llm.complete(prompts.RERANK.format(question=q, contexts=listing), json_schema=prompts.RERANK_SCHEMA,
                         max_tokens=512)
        if r.error is not None or not isinstance(r.data, list):
            notes.append(f"rerank skipped: {r.error or 'no ID list in the answer'}")
            return contexts
        order: list[int] = []
        for i in r.data:
            if isinstance(i, str) and i.strip().isdigit():
                i = int(i.strip())
            if isinstance(i, int) and not isinstance(i, bool) and 0 <= i < min(top_k, len(contexts)) \
                    and i not in order:
                order.append(i)
        rest = [i for i in range(len(contexts)) if i not in order]
        return [contexts[i] for i in order + rest]


def build_pipeline(cfg: PipelineConfig, graph_name: str, settings: Any = None) -> Pipeline:
    from hublab.pipeline.resources import build_resources, pipe_llm
    from hublab.retrievers.registry import build_retriever

    resources = build_resources(cfg, graph_name, settings=settings)
    retriever = build_retriever(cfg.retriever_type, resources, cfg.retriever_params, source=cfg.source)
    llms = {p: (pipe_llm(cfg, p, settings) if getattr(cfg, p).get("enabled") else None)
            for p in ("pre_retrieval", "post_retrieval", "generation")}
    return Pipeline(cfg, retriever, pipe_llms=llms)


def build_index(cfg: PipelineConfig, graph_name: str, *, progress: bool = True,
                settings: Any = None) -> dict[str, Any]:
    """Build or incrementally update the pipeline retriever's index for a graph; returns its stats. ``progress``:
    a bar over the build on stderr, or the line saying the index is up to date; ``settings``: the project's (default)
    or a call's (its label predicates)."""
    from hublab.pipeline.resources import build_resources
    from hublab.retrievers.registry import build_retriever

    t0 = time.perf_counter()
    resources = build_resources(cfg, graph_name, settings=settings)
    retriever = build_retriever(cfg.retriever_type, resources, cfg.retriever_params, source=cfg.source)
    stats = dict(retriever.index(progress=progress) or {})
    stats["total_seconds"] = round(time.perf_counter() - t0, 3)
    return stats
