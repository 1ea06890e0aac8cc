"""The base class of the LLM-reasoning baselines (FiDeLiS, MindMap, ToG, StructGPT): resources, graph
view, per-question budget, topic resolution, and the never-raise wrapper around ``_retrieve``."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar

from pydantic import Field

from hublab.errors import InputError
from hublab.llm.base import llm_free
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.components.graph_walk import Budget, EntityIndex, GraphView
from hublab.retrievers.components.llm_json import ask_text
from hublab.retrievers.components.question_text import query_texts
from hublab.retrievers.components.results import far_end_answer, join_reasons, sources_of
from hublab.retrievers.components.scoring import TextScorer, require_embedder

#: a question without a topic entity links the longest graph label it contains: labels this short are not linked
MIN_LINK_CHARS = 3
#: the longest label (in words) looked up in a question
MAX_LINK_WORDS = 12
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class ReasoningParams:
    """The parameters FiDeLiS, MindMap, ToG and StructGPT share; each method's ``params_type`` inherits them.

    Args:
        bidirectional: walk edges in both directions (the thesis's SQA adaptation for ORKG).
        max_neighbours: cap on the edges read around one node (0 = no cap).
        max_seconds: wall-clock budget per question.
        max_expansions: neighbour fetches per question.
        generate_answer: write an answer (LLM, or the far end of the best triple when LLM-free).
        seed: for any sampling step.
    """

    bidirectional: bool = True
    max_neighbours: Annotated[int, Field(ge=0)] = 500
    max_seconds: Annotated[float, Field(gt=0)] = 120.0
    max_expansions: Annotated[int, Field(ge=1)] = 5000
    generate_answer: bool = True
    seed: int = 0


@dataclass(frozen=True)
class ContextCapParams(ReasoningParams):
    """The shared reasoning parameters plus the output cap of the methods that collect triples along their search
    (FiDeLiS, ToG, StructGPT).

    Args:
        max_contexts: cap on returned triples (None = every triple the search kept).
    """

    max_contexts: Annotated[int, Field(ge=1)] | None = None


class ReasoningRetriever(Retriever):
    """Base for the four baselines: resources, graph view, budget, topic resolution, never-raise wrapper;
    parameters: :class:`ReasoningParams` (a method's own dataclass subclasses it)."""

    needs_embedder_when_llm_free = True
    #: Why the method needs an embedder even with an LLM (None: only its LLM-free mode does).
    embedder_use: ClassVar[str | None] = None
    params_type = ReasoningParams

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        c = self.config
        self.view = GraphView(resources.graph, bidirectional=c.bidirectional, max_neighbours=c.max_neighbours)
        self.llm = resources.llm
        self.llm_free = llm_free(resources.llm)
        self.scorer = TextScorer(resources.embedder) if resources.embedder is not None else None
        if self.llm_free and self.needs_embedder_when_llm_free and self.scorer is None:
            require_embedder(None, self.name, "its LLM-free mode scores by embedding similarity")
        if self.embedder_use is not None:
            require_embedder(resources.embedder, self.name, self.embedder_use)
        self._entity_index: EntityIndex | None = None
        self._labels_lower: dict[str, str] | None = None  # normalised label -> label, for linking a question

    def begin_walk(self, question: str, topic_entity_id: str | None,
                   topic_entity_value: str | None) -> tuple[str | None, list[str | None], Any, random.Random, Budget]:
        """A question's walk: the start node (None: the notes say why), the notes so far, the question's embedding
        (None without an embedder or a start), the seeded RNG and the budget (its clock starts here)."""
        start, topic_note = self.resolve_topic(topic_entity_id, topic_entity_value, question)
        query = self.scorer.query(query_texts(question)) if self.scorer is not None and start is not None else None
        return start, [topic_note], query, random.Random(self.config.seed), self.new_budget()

    def answer(self, template: str, question: str, evidence: str, contexts: list[Context], start: str,
               notes: list[str | None]) -> str | None:
        """The method's answer: LLM-free the far end of the best triple, else the LLM's answer to ``template``
        (``{question}``, ``{triples}``: the evidence) with any LLM error added to ``notes``."""
        if self.llm_free:
            return far_end_answer(contexts, start)
        text, err = ask_text(self.llm, template.format(question=question, triples=evidence), max_tokens=400)
        notes.append(f"answer: {err}" if err else None)
        return text.strip() or None

    def result(self, contexts: list[Context], answer: str | None, notes: list[str | None]) -> RetrievalResult:
        """The question's result: contexts, answer, the notes as its reason and the sources of the top ten."""
        return RetrievalResult(contexts=contexts, answer=answer, reason=join_reasons(*notes),
                               sources=sources_of(self.resources.graph,
                                                  [c.triple for c in contexts[:10] if c.triple is not None]))

    def new_budget(self) -> Budget:
        return Budget(max_seconds=self.config.max_seconds, max_expansions=self.config.max_expansions)

    def entity_index(self) -> EntityIndex:
        if self._entity_index is None:
            if self.scorer is None:
                raise InputError(f"{self.name} needs an embedder to link entities", field="embedder")
            self._entity_index = EntityIndex(self.resources.graph, self.scorer)
        return self._entity_index

    def resolve_topic(self, topic_entity_id: str | None, topic_entity_value: str | None,
                      question: str = "") -> tuple[str | None, str]:
        """The start node: the given id if it exists, else an exact label match, else the nearest label. A question
        that names no topic entity at all (a user's dataset often has none) starts from the longest graph label its
        text contains, so a walk-based method is not scored 0 for a column the dataset lacks."""
        graph = self.resources.graph
        if topic_entity_id and graph.entity(topic_entity_id) is not None:
            return topic_entity_id, ""
        if not topic_entity_id and not (topic_entity_value or "").strip() and question and self.scorer is not None:
            found = self._label_in(question)
            if found is None:
                return None, "no topic entity given, and no graph label occurs in the question"
            return self.entity_index().uids[found][0], f"no topic entity given; linked {found!r} from the question"
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

    def _label_in(self, question: str) -> str | None:
        """The longest entity label (at least :data:`MIN_LINK_CHARS` characters) that occurs in ``question`` as whole
        words, case-insensitively; ties go to the label that sorts first. Word n-grams of the question are looked up,
        so the cost grows with the question, not with the graph."""
        if self._labels_lower is None:
            lowered: dict[str, str] = {}
            for label in sorted(self.entity_index().uids):
                key = " ".join(_WORD.findall(label.lower()))
                if len(key) >= MIN_LINK_CHARS:
                    lowered.setdefault(key, label)
            self._labels_lower = lowered
        words = _WORD.findall(question.lower())
        best: str | None = None
        for n in range(min(len(words), MAX_LINK_WORDS), 0, -1):
            found = sorted(self._labels_lower[g] for i in range(len(words) - n + 1)
                           if (g := " ".join(words[i:i + n])) in self._labels_lower)
            if found:
                best = max(found, key=len)
                break
        return best

    def _call(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        """``_retrieve`` (the method's steps) on the stripped question; an unexpected failure becomes the
        question's ``reason`` (the run goes on), bad configuration still raises."""
        try:
            return self._retrieve(question.strip(), topic_entity_id, topic_entity_value)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - recorded per question
            return RetrievalResult(reason=f"{self.name} failed: {type(exc).__name__}: {exc}")
