"""The base class of the LLM-reasoning baselines (FiDeLiS, MindMap, ToG, StructGPT): resources, graph
view, per-question budget, topic resolution, and the never-raise wrapper around ``_retrieve``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from hublab.errors import InputError
from hublab.llm.base import llm_free
from hublab.retrievers.base import Resources, RetrievalResult, Retriever
from hublab.retrievers.components.graph_walk import Budget, EntityIndex, GraphView
from hublab.retrievers.components.scoring import TextScorer, require_embedder


class ReasoningRetriever(Retriever):
    """Base for the four baselines: resources, graph view, budget, topic resolution, never-raise wrapper.

    Args (shared by FiDeLiS, MindMap, ToG, StructGPT):
        bidirectional: walk edges in both directions (the thesis's SQA adaptation for ORKG).
        max_neighbours: cap on the edges read around one node (0 = no cap).
        max_seconds: wall-clock budget per question.
        max_expansions: neighbour fetches per question.
        generate_answer: write an answer (LLM, or the far end of the best triple when LLM-free).
        seed: for any sampling step.
    """

    needs_embedder_when_llm_free = True

    def __init__(
        self,
        resources: Resources,
        *,
        bidirectional: bool = True,
        max_neighbours: Annotated[int, Field(ge=0)] = 500,
        max_seconds: Annotated[float, Field(gt=0)] = 120.0,
        max_expansions: Annotated[int, Field(ge=1)] = 5000,
        generate_answer: bool = True,
        seed: int = 0,
    ) -> None:
        super().__init__(resources)
        self.params = {
            "bidirectional": bidirectional, "max_neighbours": max_neighbours, "max_seconds": max_seconds,
            "max_expansions": max_expansions, "generate_answer": generate_answer, "seed": seed,
        }
        self.view = GraphView(resources.graph, bidirectional=bidirectional, max_neighbours=max_neighbours)
        self.llm = resources.llm
        self.llm_free = llm_free(resources.llm)
        self.max_seconds = max_seconds
        self.max_expansions = max_expansions
        self.generate_answer = generate_answer
        self.seed = seed
        self.scorer = TextScorer(resources.embedder) if resources.embedder is not None else None
        if self.llm_free and self.needs_embedder_when_llm_free and self.scorer is None:
            require_embedder(None, self.name, "its LLM-free mode scores by embedding similarity")
        self._entity_index: EntityIndex | None = None

    def new_budget(self) -> Budget:
        return Budget(max_seconds=self.max_seconds, max_expansions=self.max_expansions)

    def entity_index(self) -> EntityIndex:
        if self._entity_index is None:
            if self.scorer is None:
                raise InputError(f"{self.name} needs an embedder to link entities", field="embedder")
            self._entity_index = EntityIndex(self.resources.graph, self.scorer)
        return self._entity_index

    def resolve_topic(self, topic_entity_id: str | None, topic_entity_value: str | None) -> tuple[str | None, str]:
        """The start node: the given id if it exists, else an exact label match, else the nearest label."""
        graph = self.resources.graph
        if topic_entity_id and graph.entity(topic_entity_id) is not None:
            return topic_entity_id, ""
        value = (topic_entity_value or "").strip()
        if value:
            if self.scorer is not None:
                idx = self.entity_index()
                if value in idx.uids:
                    return idx.uids[value][0], f"topic entity {topic_entity_id!r} unknown; matched its label"
                hits = idx.search([value], k=1)[0]
                if hits and hits[0][1] >= 0.8:
                    return idx.uids[hits[0][0]][0], f"topic entity {topic_entity_id!r} unknown; linked {value!r}"
        return None, f"topic entity {topic_entity_id!r} ({topic_entity_value!r}) not found in the graph"

    def _call(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        """``_retrieve`` (the method's steps) on the stripped question; an unexpected failure becomes the
        question's ``reason`` (the run goes on), bad configuration still raises."""
        try:
            return self._retrieve(question.strip(), topic_entity_id, topic_entity_value)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded per question
            return RetrievalResult(reason=f"{self.name} failed: {type(exc).__name__}: {exc}")
