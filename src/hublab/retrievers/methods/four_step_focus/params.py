"""4StepFocus's parameters (spec/stark_4step.md §2): one dataclass, read by the retriever registry (types and ranges
for ``retriever.params`` validation and the tuner's search space) and by
:class:`~hublab.retrievers.methods.four_step_focus.retriever.FourStepFocusRetriever`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field

from hublab.retrievers.components.dense_index import DistanceMetric
from hublab.retrievers.components.unit_text import UnitTextParams


@dataclass(frozen=True)
class FourStepFocusParams(UnitTextParams):
    """4StepFocus's pipeline parameters (``retriever.params``), plus ``triple_text`` (how a supporting triple is
    written when it is ranked against the question, ORKG) and ``context`` (``paper``: the title of the paper a
    supporting triple belongs to), from :class:`~hublab.retrievers.components.unit_text.UnitTextParams`.

    Args:
        k_max: candidates ranked and reranked (paper: k_max).
        n_results: contexts returned per question.
        candidate_types: node types of answers (default: the graph's candidate set).
        link_cutoff: difflib cut-off for linking constants to labels.
        link_min_similarity: embedding similarity needed to link a constant when no label matches.
        predicate_min_similarity: similarity needed for the LLM-free predicate guess.
        use_edge_types: restrict substitution to the triplet's relation (paper default: ignore it).
        direction: ``any`` (both edge directions) or ``strict`` (as the triplet states).
        max_rounds: substitution rounds until the candidate sets stop changing.
        max_candidates: cap per variable's candidate set.
        backfill: fill up to ``k_max`` with VSS hits below the graph-supported candidates.
        backfill_on_failure: answer with VSS alone when no triplet could be built.
        rerank: pointwise LLM rerank of the top ``k_max`` (off when LLM-free).
        distance_metric: ``cosine``, ``l2`` or ``ip``.
        relation_bonus: score bonus for triples on the planned relation (ORKG triple ranking).
        max_hops: hops from a candidate to the triples that support it (ORKG).
    """

    k_max: Annotated[int, Field(ge=1)] = 20
    n_results: Annotated[int, Field(ge=1)] = 20
    candidate_types: list[str] | None = None
    link_cutoff: Annotated[float, Field(ge=0.0, le=1.0)] = 0.95
    link_min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.55
    predicate_min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.25
    use_edge_types: bool = False
    direction: Literal["any", "strict"] = "any"
    max_rounds: Annotated[int, Field(ge=1)] = 10
    max_candidates: Annotated[int, Field(ge=1)] = 5000
    backfill: bool = True
    backfill_on_failure: bool = False
    rerank: bool = True
    distance_metric: DistanceMetric = "cosine"
    relation_bonus: Annotated[float, Field(ge=0.0)] = 0.5
    max_hops: Annotated[int, Field(ge=1)] = 2
