"""Think-on-Graph (Sun et al.; thesis §7.4.3): LLM-scored beam search over relations and entities.

Each depth: for every path tail the LLM scores the tail's (bidirectional) relations and the top ``width``
are kept; the entities behind each kept relation are **randomly** pruned to ``n_retain_entity`` when they
exceed ``retain_threshold`` (seeded RNG, so runs are reproducible), scored, and the ``width`` best
extended paths (relation score x entity score) form the next beam. The LLM then judges whether the paths
suffice; if not the search continues until ``max_depth``, where ToG answers from the paths plus its own
knowledge. The triples of every kept path are returned.

LLM-free (``technique: embedding`` or the ``none`` LLM backend): relation and entity scores are embedding
similarities to the question (ToG's sentence-BERT pruning tool) and the only stop is ``max_depth``.
If the LLM's output cannot be parsed the step falls back to embedding scores and ``reason`` says so.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from hublab.errors import InputError
from hublab.retrievers.base import Resources, RetrievalResult
from hublab.retrievers.components.graph_walk import (
    INVERSE_SUFFIX,
    Budget,
    ContextCollector,
    Edge,
    WalkPath,
    render_path,
)
from hublab.retrievers.components.llm_json import as_bool, ask_json, match_option
from hublab.retrievers.components.reasoning import ContextCapParams, ReasoningRetriever
from hublab.retrievers.components.results import join_reasons

RELATION_SCHEMA = {
    "type": "object",
    "properties": {
        "relations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"relation": {"type": "string"}, "score": {"type": "number"}},
                "required": ["relation", "score"],
            },
        }
    },
    "required": ["relations"],
}
ENTITY_SCHEMA = {
    "type": "object",
    "properties": {"scores": {"type": "array", "items": {"type": "number"}}},
    "required": ["scores"],
}
REASON_SCHEMA = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "answer": {"type": "string"}},
    "required": ["sufficient"],
}

RELATION_PROMPT = """Please retrieve up to {width} relations (separated by semicolon) that contribute to the question
and rate their contribution on a scale from 0 to 1 (the scores sum to 1). Relations marked "(inverse)" are
followed against their direction.

Example
Question: In which venue has the paper 'Microservice Ambients' been published?
Topic entity: Microservice Ambients
Relations: research field; venue; publication year; doi; authors; contribution
Answer: {{"relations": [{{"relation": "venue", "score": 0.8}}, {{"relation": "publication year", "score": 0.1}},
 {{"relation": "contribution", "score": 0.1}}]}}

Question: {question}
Topic entity: {entity}
Relations: {relations}
Answer with JSON only."""
ENTITY_PROMPT = """Please score the entities' contribution to the question on a scale from 0 to 1 (the scores sum
to 1), in the order given.
Question: {question}
Relation: {relation}
Entities: {entities}
Answer with JSON only: {{"scores": [numbers]}}"""
REASON_PROMPT = """Given a question and the associated retrieved knowledge graph triples (subject, relation, object),
are these triples sufficient to answer the question? Answer with JSON only:
{{"sufficient": true or false, "answer": "the answer if sufficient, else empty"}}
Question: {question}
Knowledge triples:
{triples}"""
ANSWER_PROMPT = """Given a question and the associated retrieved knowledge graph triples, answer the question with
these triples and your own knowledge.
Question: {question}
Knowledge triples:
{triples}
Answer:"""


@dataclass(frozen=True)
class ToGParams(ContextCapParams):
    """ToG's parameters, plus the shared reasoning ones and ``max_contexts``
    (:class:`~hublab.retrievers.components.reasoning.ContextCapParams`).

    Args:
        width: relations and paths kept per depth (thesis: ``width``).
        max_depth: search depth (thesis: ``max_depth``).
        retain_threshold: entity count above which they are randomly pruned (thesis: same name).
        n_retain_entity: entities kept by that random pruning (thesis: same name).
        technique: ``llm`` (LLM scores relations/entities) or ``embedding`` (sentence-embedding pruning;
            always, when LLM-free).
    """

    width: Annotated[int, Field(ge=1)] = 10
    max_depth: Annotated[int, Field(ge=1)] = 7
    retain_threshold: Annotated[int, Field(ge=1)] = 10
    n_retain_entity: Annotated[int, Field(ge=1)] = 10
    technique: Literal["llm", "embedding"] = "llm"


class ToGRetriever(ReasoningRetriever):
    """Think-on-Graph (thesis §7.4.3); parameters: :class:`ToGParams`."""

    uses_llm = True
    default_pipeline = "tog_local.yaml"
    params_type = ToGParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        #: the scoring in effect: ``technique``, or ``embedding`` whatever it says when LLM-free
        self.scoring = "embedding" if self.llm_free else self.config.technique
        if self.scoring == "embedding" and self.scorer is None:
            raise InputError("tog technique 'embedding' needs an embedder", field="embedder")

    # ---------------- scoring ----------------
    def _embed_scores(self, query, texts: list[str]) -> list[float] | None:
        if self.scorer is None:
            return None
        return [float(x) for x in self.scorer.scores(query, texts)]

    def _score_relations(
        self, question: str, query, entity: str, relations: list[str]
    ) -> tuple[list[float], str | None]:
        plain = [r.removesuffix(INVERSE_SUFFIX) for r in relations]
        if self.scoring == "embedding":
            return self._embed_scores(query, plain) or [0.0] * len(relations), None
        prompt = RELATION_PROMPT.format(width=self.config.width, question=question, entity=entity,
                                        relations="; ".join(relations))
        ans = ask_json(self.llm, prompt, RELATION_SCHEMA, max_tokens=400)
        scores = [0.0] * len(relations)
        if ans.ok:
            for item in ans.data.get("relations") or []:
                if isinstance(item, dict):
                    name, val = item.get("relation"), item.get("score", 0.0)
                elif isinstance(item, str):
                    name, val = item, 1.0
                else:
                    continue
                i = match_option(str(name or ""), relations)
                try:
                    v = float(val)
                except (TypeError, ValueError):
                    v = 0.0
                if i is not None:
                    scores[i] = max(scores[i], v)
            if any(scores):
                return scores, None
        emb = self._embed_scores(query, plain)
        why = ans.error or "LLM scored no known relation"
        if emb is None:
            return scores, f"relation scoring: {why}"
        return emb, f"relation scoring: {why}; used embedding similarity"

    def _score_entities(self, question: str, query, relation: str, names: list[str]) -> tuple[list[float], str | None]:
        if len(names) == 1:
            return [1.0], None
        if self.scoring == "embedding":
            return self._embed_scores(query, names) or [1.0 / len(names)] * len(names), None
        prompt = ENTITY_PROMPT.format(question=question, relation=relation, entities="; ".join(names))
        ans = ask_json(self.llm, prompt, ENTITY_SCHEMA, max_tokens=200)
        if ans.ok:
            raw = ans.data.get("scores")
            try:
                vals = [float(x) for x in raw][: len(names)] if isinstance(raw, list) else []
            except (TypeError, ValueError):
                vals = []
            if vals:
                return vals + [0.0] * (len(names) - len(vals)), None
        return [1.0 / len(names)] * len(names), f"entity scoring: {ans.error or 'no scores'}; scored uniformly"

    # ---------------- search ----------------
    def _explore(self, question, query, beam: list[WalkPath], visited: set[str], rng: random.Random,
                 budget: Budget, notes: list) -> list[WalkPath]:
        scored: list[WalkPath] = []
        for path in beam:
            if budget.exhausted:
                break
            edges = [e for e in self.view.edges(path.tail, budget) if e.other.uid not in visited]
            if not edges:
                continue
            by_rel: dict[str, list[Edge]] = {}
            for e in edges:
                by_rel.setdefault(e.relation, []).append(e)
            relations = list(by_rel)
            label = self.resources.graph.label(path.tail) or path.tail
            rel_scores, note = self._score_relations(question, query, label, relations)
            notes.append(note)
            top = sorted(range(len(relations)), key=lambda i: -rel_scores[i])[: self.config.width]
            for i in top:
                if rel_scores[i] <= 0:
                    continue
                cands = by_rel[relations[i]]
                if len(cands) > self.config.retain_threshold:  # ToG's random entity pruning
                    cands = rng.sample(cands, min(self.config.n_retain_entity, len(cands)))
                ent_scores, note = self._score_entities(question, query, relations[i], [e.other.text for e in cands])
                notes.append(note)
                for e, s in zip(cands, ent_scores, strict=False):
                    scored.append(WalkPath(path.nodes + [e.other.uid], path.triples + [e.triple],
                                        path.score * rel_scores[i] * max(s, 0.0)))
        best: dict[str, WalkPath] = {}
        for p in sorted(scored, key=lambda p: -p.score):
            best.setdefault(p.tail, p)
        return sorted(best.values(), key=lambda p: -p.score)[: self.config.width]

    def _reason(self, question: str, paths: list[WalkPath]) -> tuple[bool, str | None, str | None]:
        triples = "\n".join(t.render() for t in dict.fromkeys(t for p in paths for t in p.triples))
        ans = ask_json(self.llm, REASON_PROMPT.format(question=question, triples=triples), REASON_SCHEMA,
                       max_tokens=300)
        if not ans.ok:
            return False, None, f"reasoning check: {ans.error}"
        done = as_bool(ans.data.get("sufficient")) is True
        return done, (str(ans.data.get("answer") or "").strip() or None) if done else None, None

    def _retrieve(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        start, notes, query, rng, budget = self.begin_walk(question, topic_entity_id, topic_entity_value)
        if start is None:
            return RetrievalResult(reason=notes[0])
        visited = {start}
        beam = [WalkPath([start], score=1.0)]
        collected = ContextCollector()
        kept: list[WalkPath] = []
        answer: str | None = None
        for depth in range(1, self.config.max_depth + 1):
            nxt = self._explore(question, query, beam, visited, rng, budget, notes)
            if not nxt:
                break
            for p in nxt:
                visited.add(p.tail)
                for t in p.triples:
                    collected.add(t, p.score ** (1.0 / len(p.triples)), depth=len(p.triples))
            kept = nxt
            beam = nxt
            if budget.exhausted:
                notes.append(f"stopped at depth {depth}: {budget.why()}")
                break
            if self.llm_free:
                continue
            done, answer, note = self._reason(question, beam)
            notes.append(note)
            if done:
                break
        if not len(collected):
            return RetrievalResult(reason=join_reasons(*notes, f"no relation could be followed from {start}"))
        contexts = collected.contexts(self.config.max_contexts)
        if answer is None and self.config.generate_answer:
            evidence = "\n".join(render_path(p.triples) for p in kept)
            answer = self.answer(ANSWER_PROMPT, question, evidence, contexts, start, notes)
        return self.result(contexts, answer, notes)

