"""FiDeLiS (Sui et al.; thesis §7.4.5): LLM plan, embedding-scored path expansion, LLM-pruned beam search.

Per step every beam path is extended by its (relation, neighbour) pairs; each extension is scored by the
embedding similarity of the relation label and the neighbour label to the plan's keywords, blended with
the path's accumulated score: ``score = alpha * path_score + (1 - alpha) * (rel_sim + ent_sim) / 2``.
The best ``top_n`` extensions per path join the candidate list; the LLM (guided by the plan) picks the
next beam of at most ``top_k`` paths. An optional deductive check stops the search when the LLM says the
beam suffices (off by default, as in the thesis's configuration). The triples of every beam path are
returned, scored by the best path that used them.

LLM-free: keywords come from :func:`keyword_candidates`, pruning keeps the ``top_k`` best-scored paths,
no deductive stop, and the answer is the tail of the best path.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
from pydantic import Field

from hublab.retrievers.base import Context, RetrievalResult
from hublab.retrievers.components.graph_walk import Budget, ContextCollector, WalkPath, render_path
from hublab.retrievers.components.llm_json import as_bool, as_index_list, as_str_list, ask_json, ask_text
from hublab.retrievers.components.question_text import keyword_candidates
from hublab.retrievers.components.reasoning import ContextCapParams, ReasoningRetriever
from hublab.retrievers.components.results import far_end_answer, join_reasons, sources_of

PLAN_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string"}},
        "declarative": {"type": "string"},
        "plan": {"type": "string"},
    },
    "required": ["keywords", "declarative"],
}
SELECT_SCHEMA = {
    "type": "object",
    "properties": {"selected": {"type": "array", "items": {"type": "integer"}}},
    "required": ["selected"],
}
DEDUCE_SCHEMA = {
    "type": "object",
    "properties": {"sufficient": {"type": "boolean"}, "answer": {"type": "string"}},
    "required": ["sufficient"],
}

PLAN_PROMPT = """You plan how to answer a question over a scholarly knowledge graph (papers, venues, authors,
research contributions and their properties). Extract the keywords (entity names, titles, relation words)
that should be matched against graph labels, and rewrite the question as a declarative statement.

Example
Question: Who are the authors of the paper 'A Taxonomy of Blockchain-Based Systems for Architecture Design'?
Answer: {{"keywords": ["A Taxonomy of Blockchain-Based Systems for Architecture Design", "authors"],
 "declarative": "The paper 'A Taxonomy of Blockchain-Based Systems for Architecture Design' was written by authors X.",
 "plan": "Find the paper by its title, then follow its authors relation."}}

Question: {question}
Answer with JSON only."""

SELECT_PROMPT = """Question: {question}
Plan: {plan}
Candidate reasoning paths (triples are (subject, relation, object)):
{paths}

Select up to {k} paths that are most likely to lead to the answer when explored further, following the plan.
Answer with JSON only: {{"selected": [path numbers]}}"""

DEDUCE_PROMPT = """Question: {question}
Statement to verify: {declarative}
Reasoning paths:
{paths}

Can the answer be deduced from these paths alone? Answer with JSON only:
{{"sufficient": true or false, "answer": "the answer if sufficient, else empty"}}"""

ANSWER_PROMPT = """Answer the question using the reasoning paths from a scholarly knowledge graph. If they do not
contain the answer, say so.
Question: {question}
Reasoning paths:
{paths}
Answer:"""


@dataclass(frozen=True)
class FidelisParams(ContextCapParams):
    """FiDeLiS's parameters, plus the shared reasoning ones and ``max_contexts``
    (:class:`~hublab.retrievers.components.reasoning.ContextCapParams`).

    Args:
        top_k: beam width: paths kept per step (thesis: ``top_k``).
        top_n: best extensions per path that become candidates (thesis: ``top_n``).
        alpha: weight of the accumulated path score vs. the new step's similarity (thesis: ``alpha``).
        max_length: longest reasoning path (thesis: ``max_length``).
        use_deductive_reasoning: let the LLM stop the search when the beam suffices (thesis: off).
        llm_candidates: candidates shown to the LLM per pruning step (at least ``top_k``).
    """

    top_k: Annotated[int, Field(ge=1)] = 10
    top_n: Annotated[int, Field(ge=1)] = 10
    alpha: Annotated[float, Field(ge=0.0, le=1.0)] = 0.3
    max_length: Annotated[int, Field(ge=1)] = 7
    use_deductive_reasoning: bool = False
    llm_candidates: Annotated[int, Field(ge=1)] = 30


class FidelisRetriever(ReasoningRetriever):
    """FiDeLiS (thesis §7.4.5); parameters: :class:`FidelisParams`."""

    thesis_name = "FiDeLiS"
    uses_llm = True
    default_pipeline = "fidelis_local.yaml"
    params_type = FidelisParams
    embedder_use = "it scores relation paths by embedding similarity"

    # ---------------- steps ----------------
    def _plan(self, question: str) -> tuple[list[str], str, str, str | None]:
        """(keywords, declarative statement, plan text, reason if the LLM failed)."""
        fallback = keyword_candidates(question)
        if self.llm_free:
            return fallback, question, "", None
        ans = ask_json(self.llm, PLAN_PROMPT.format(question=question), PLAN_SCHEMA, max_tokens=400)
        if not ans.ok:
            return fallback, question, "", f"plan: {ans.error}; used keyword extraction"
        keywords = as_str_list(ans.data.get("keywords"))
        declarative = str(ans.data.get("declarative") or question)
        plan = str(ans.data.get("plan") or "")
        if not keywords:
            return fallback, declarative, plan, "plan: LLM gave no keywords; used keyword extraction"
        return keywords, declarative, plan, None

    def _expand(self, beam: list[WalkPath], query: np.ndarray, budget: Budget) -> list[WalkPath]:
        """Top-n scored one-hop extensions per beam path (no node repeated within a path)."""
        assert self.scorer is not None
        out: list[WalkPath] = []
        for path in beam:
            if budget.exhausted:
                break
            edges = [e for e in self.view.edges(path.tail, budget) if e.other.uid not in path.nodes]
            if not edges:
                continue
            rel = self.scorer.scores(query, [e.triple.predicate for e in edges])
            ent = self.scorer.scores(query, [e.other.text for e in edges])
            step = (rel + ent) / 2.0
            scores = self.config.alpha * path.score + (1.0 - self.config.alpha) * step
            order = sorted(range(len(edges)), key=lambda i: -float(scores[i]))[: self.config.top_n]
            for i in order:
                e = edges[i]
                out.append(WalkPath(path.nodes + [e.other.uid], path.triples + [e.triple], float(scores[i])))
        # One path per tail node (the best): re-reaching a node by a worse path adds nothing.
        best: dict[str, WalkPath] = {}
        for p in sorted(out, key=lambda p: -p.score):
            best.setdefault(p.tail, p)
        return list(best.values())

    def _prune(self, question: str, plan: str, candidates: list[WalkPath]) -> tuple[list[WalkPath], str | None]:
        ranked = sorted(candidates, key=lambda p: -p.score)
        k = self.config.top_k
        if self.llm_free or len(ranked) <= k:
            return ranked[:k], None
        shown = ranked[: max(self.config.llm_candidates, k)]
        paths = "\n".join(f"{i + 1}. {render_path(p.triples)}" for i, p in enumerate(shown))
        prompt = SELECT_PROMPT.format(question=question, plan=plan or "-", paths=paths, k=k)
        ans = ask_json(self.llm, prompt, SELECT_SCHEMA, max_tokens=200)
        if not ans.ok:
            return ranked[:k], f"beam pruning: {ans.error}; kept top-{k} by score"
        idx = as_index_list(ans.data.get("selected"), len(shown))[:k]
        if not idx:
            return ranked[:k], f"beam pruning: LLM selected nothing; kept top-{k} by score"
        return [shown[i] for i in idx], None

    def _deduce(self, question: str, declarative: str, beam: list[WalkPath]) -> tuple[bool, str | None, str | None]:
        paths = "\n".join(f"{i + 1}. {render_path(p.triples)}" for i, p in enumerate(beam))
        prompt = DEDUCE_PROMPT.format(question=question, declarative=declarative, paths=paths)
        ans = ask_json(self.llm, prompt, DEDUCE_SCHEMA, max_tokens=200)
        if not ans.ok:
            return False, None, f"deductive check: {ans.error}"
        done = as_bool(ans.data.get("sufficient")) is True
        answer = str(ans.data.get("answer") or "").strip() or None
        return done, answer if done else None, None

    # ---------------- main loop ----------------
    def _retrieve(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        assert self.scorer is not None
        start, topic_note = self.resolve_topic(topic_entity_id, topic_entity_value, question)
        if start is None:
            return RetrievalResult(reason=topic_note)
        keywords, declarative, plan, plan_note = self._plan(question)
        query = self.scorer.query(list(dict.fromkeys(keywords + [declarative])))
        budget = self.new_budget()
        notes: list[str | None] = [topic_note, plan_note]
        beam = [WalkPath([start])]
        collected = ContextCollector()
        best_paths: list[WalkPath] = []
        answer: str | None = None
        for depth in range(1, self.config.max_length + 1):
            candidates = self._expand(beam, query, budget)
            if not candidates:
                break
            beam, note = self._prune(question, plan, candidates)
            notes.append(note)
            for p in beam:
                for t in p.triples:
                    collected.add(t, p.score, depth=len(p.triples))
            best_paths = sorted(beam + best_paths, key=lambda p: -p.score)[: self.config.top_k]
            if budget.exhausted:
                notes.append(f"stopped at depth {depth}: {budget.why()}")
                break
            if self.config.use_deductive_reasoning and not self.llm_free:
                done, answer, note = self._deduce(question, declarative, beam)
                notes.append(note)
                if done:
                    break
        if not len(collected):
            return RetrievalResult(reason=join_reasons(*notes, f"no relation paths from {start}"))
        contexts = collected.contexts(self.config.max_contexts)
        if answer is None and self.config.generate_answer and best_paths:
            answer, note = self._answer(question, best_paths, contexts, start)
            notes.append(note)
        used = [c.triple for c in contexts[:10] if c.triple is not None]
        return RetrievalResult(contexts=contexts, answer=answer, reason=join_reasons(*notes),
                               sources=sources_of(self.resources.graph, used))

    def _answer(
        self, question: str, paths: list[WalkPath], contexts: list[Context], start: str
    ) -> tuple[str | None, str | None]:
        if self.llm_free:
            return far_end_answer(contexts, start), None
        lines = "\n".join(f"{i + 1}. {render_path(p.triples)}" for i, p in enumerate(paths))
        text, err = ask_text(self.llm, ANSWER_PROMPT.format(question=question, paths=lines), max_tokens=400)
        return (text.strip() or None), (f"answer: {err}" if err else None)
