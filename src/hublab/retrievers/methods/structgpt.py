"""StructGPT (Jiang et al.; thesis §7.4.4): iterative reading-then-reasoning over the graph.

Each iteration reads the unique (bidirectional) relations of the current entities, the LLM picks **one**
relation given the history of earlier picks, the triples behind that relation are read, and the LLM checks
whether the triples read so far (serialised up to ``max_llm_serialization_tokens``) suffice. The tails of
the read triples become the next entities, randomly sampled down to ``width`` when there are more (seeded
RNG). As in the thesis, the loop really iterates (the original's unconditional ``break`` is gone), edges
are followed in both directions, and a final LLM filter picks the relevant triples from the large set read.

LLM-free: the relation is the one most similar to the question (embedding), there is no sufficiency stop,
and the read triples are ranked by embedding similarity instead of the LLM filter.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

from pydantic import Field

from hublab.graph.model import Triple
from hublab.retrievers.base import Context, RetrievalResult
from hublab.retrievers.components.graph_walk import INVERSE_SUFFIX, ContextCollector, Edge, triple_line
from hublab.retrievers.components.llm_json import (
    as_bool,
    as_index_list,
    ask_json,
    match_option,
    truncate_lines,
)
from hublab.retrievers.components.reasoning import ContextCapParams, ReasoningRetriever
from hublab.retrievers.components.results import join_reasons

SELECT_SCHEMA = {
    "type": "object",
    "properties": {"relation": {"type": "string"}},
    "required": ["relation"],
}
CHECK_SCHEMA = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "answer": {"type": "string"}},
    "required": ["sufficient"],
}
FILTER_SCHEMA = {
    "type": "object",
    "properties": {"relevant": {"type": "array", "items": {"type": "integer"}}},
    "required": ["relevant"],
}

SELECT_PROMPT = """The candidate relations of the current entities {entities} are: {relations}.
Relations marked "(inverse)" are followed against their direction.
Relations chosen so far: {history}.
Which ONE relation is the most relevant for answering the question "{question}"?
Answer with JSON only: {{"relation": "one of the candidate relations"}}"""
CHECK_PROMPT = """The triples (subject, relation, object) read from the knowledge graph so far are:
{triples}
Based on these triples, can the question "{question}" be answered? Answer with JSON only:
{{"sufficient": true or false, "answer": "the answer if sufficient, else empty"}}"""
FILTER_PROMPT = """Question: {question}
Triples read from a scholarly knowledge graph:
{triples}
Which triples are relevant for answering the question? Answer with JSON only: {{"relevant": [triple numbers]}}"""
ANSWER_PROMPT = """Answer the question based on the triples (subject, relation, object).
Triples:
{triples}
Question: {question}
Answer:"""


@dataclass(frozen=True)
class StructGPTParams(ContextCapParams):
    """StructGPT's parameters, plus the shared reasoning ones and ``max_contexts``
    (:class:`~hublab.retrievers.components.reasoning.ContextCapParams`).

    Args:
        max_depth: reading-then-reasoning iterations (thesis: ``max_depth``).
        width: entities carried to the next iteration (random sample when more; thesis: ``width``).
        max_llm_serialization_tokens: budget for the triples shown to the LLM (thesis: same name).
        final_filter: let the LLM pick the relevant triples from all read ones at the end.
    """

    max_depth: Annotated[int, Field(ge=1)] = 7
    width: Annotated[int, Field(ge=1)] = 10
    max_llm_serialization_tokens: Annotated[int, Field(ge=1)] = 4096
    final_filter: bool = True


class StructGPTRetriever(ReasoningRetriever):
    """StructGPT (thesis §7.4.4); parameters: :class:`StructGPTParams`."""

    uses_llm = True
    default_pipeline = "structgpt_local.yaml"
    params_type = StructGPTParams

    def _select(self, question: str, query, entities: list[str], relations: list[str],
                history: list[str]) -> tuple[int | None, str | None]:
        if not self.llm_free:
            prompt = SELECT_PROMPT.format(entities="; ".join(entities[:10]), relations="; ".join(relations),
                                          history="; ".join(history) or "none", question=question)
            ans = ask_json(self.llm, prompt, SELECT_SCHEMA, max_tokens=100)
            if ans.ok:
                i = match_option(str(ans.data.get("relation") or ""), relations)
                if i is not None:
                    return i, None
            why = ans.error or "LLM chose an unknown relation"
            if self.scorer is None:
                return None, f"relation selection: {why}"
            note = f"relation selection: {why}; used embedding similarity"
        else:
            note = None
        assert self.scorer is not None
        sims = self.scorer.scores(query, [r.removesuffix(INVERSE_SUFFIX) for r in relations])
        return int(max(range(len(relations)), key=lambda i: float(sims[i]))), note

    def _serialise(self, triples: list[Triple]) -> list[str]:
        return truncate_lines([f"{i + 1}. {t.render()}" for i, t in enumerate(triples)],
                              self.config.max_llm_serialization_tokens)

    def _check(self, question: str, triples: list[Triple]) -> tuple[bool, str | None, str | None]:
        prompt = CHECK_PROMPT.format(triples="\n".join(self._serialise(triples)), question=question)
        ans = ask_json(self.llm, prompt, CHECK_SCHEMA, max_tokens=300)
        if not ans.ok:
            return False, None, f"sufficiency check: {ans.error}"
        done = as_bool(ans.data.get("sufficient")) is True
        return done, (str(ans.data.get("answer") or "").strip() or None) if done else None, None

    def _rank(self, question: str, query, read: list[Triple]) -> tuple[list[Context], str | None]:
        """Final selection: LLM filter, or embedding ranking when LLM-free (or when the filter fails)."""
        note = None
        if not self.llm_free and self.config.final_filter:
            lines = self._serialise(read)
            ans = ask_json(self.llm, FILTER_PROMPT.format(question=question, triples="\n".join(lines)),
                           FILTER_SCHEMA, max_tokens=300)
            idx = as_index_list(ans.data.get("relevant"), len(lines)) if ans.ok else []
            if idx:
                return [Context(text=read[i].render(), triple=read[i], score=1.0 / (r + 1),
                                metadata={"llm_filter": True}) for r, i in enumerate(idx)], None
            note = f"final filter: {ans.error or 'LLM selected no triple'}; returned all read triples"
        collected = ContextCollector()
        if self.scorer is not None and query is not None:
            sims = self.scorer.scores(query, [triple_line(t) for t in read])
            for t, s in zip(read, sims, strict=True):
                collected.add(t, float(s))
        else:
            for i, t in enumerate(read):
                collected.add(t, 1.0 / (i + 1))
        return collected.contexts(self.config.max_contexts), note

    def _retrieve(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        start, notes, query, rng, budget = self.begin_walk(question, topic_entity_id, topic_entity_value)
        if start is None:
            return RetrievalResult(reason=notes[0])
        # Frontier stack: when the newest entity set offers nothing unread (e.g. a literal), the next
        # iteration returns to the previous set, whose remaining relations the history makes choosable.
        stack: list[list[str]] = [[start]]
        visited = {start}
        history: list[str] = []
        read: list[Triple] = []
        seen: set[str] = set()
        answer: str | None = None
        for it in range(1, self.config.max_depth + 1):
            by_rel: dict[str, list[Edge]] = {}
            while stack and not by_rel:
                current = stack[-1]
                for uid in current:
                    for e in self.view.edges(uid, budget):
                        # A relation is worth reading only if it leads somewhere new (handles cycles).
                        if e.other.uid not in visited:
                            by_rel.setdefault(e.relation, []).append(e)
                if not by_rel:
                    stack.pop()
            if not by_rel:
                break
            relations = list(by_rel)
            names = [self.resources.graph.label(u) or u for u in current]
            choice, note = self._select(question, query, names, relations, history)
            notes.append(note)
            if choice is None:
                break
            rel = relations[choice]
            history.append(rel)
            nxt: list[str] = []
            for e in by_rel[rel]:
                key = e.triple.render()
                if key not in seen:
                    seen.add(key)
                    read.append(e.triple)
                if e.other.uid not in visited:
                    visited.add(e.other.uid)
                    nxt.append(e.other.uid)
            if len(nxt) > self.config.width:  # StructGPT/ToG-style random pruning of the entity set
                nxt = rng.sample(nxt, self.config.width)
            if nxt:
                stack.append(nxt)
            if budget.exhausted:
                notes.append(f"stopped at iteration {it}: {budget.why()}")
                break
            if not self.llm_free:
                done, answer, note = self._check(question, read)
                notes.append(note)
                if done:
                    break
        if not read:
            return RetrievalResult(reason=join_reasons(*notes, f"no relation could be read from {start}"))
        contexts, note = self._rank(question, query, read)
        notes.append(note)
        if answer is None and self.config.generate_answer:
            evidence = "\n".join(c.text for c in contexts[:50])
            answer = self.answer(ANSWER_PROMPT, question, evidence, contexts, start, notes)
        return self.result(contexts, answer, notes)
