"""HubLink's parameters (thesis Table 9.1, §7.2) with the thesis's final values (Table 9.4) as defaults: one
dataclass, read by the retriever registry (types and ranges for ``retriever.params`` validation and the tuner's
search space) and by :class:`~hublab.retrievers.methods.hublink.retriever.HubLinkRetriever`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field


@dataclass(frozen=True)
class HubLinkParams:
    """HubLink's pipeline parameters (``retriever.params``), also shown in ``HubLinkRetriever``'s docstring.

    Args:
        use_topic_if_given: graph-traversal strategy when the question has a topic entity (thesis: same name).
        extract_question_components: embed question components next to the question (thesis: same name).
        top_paths_to_keep: paths kept per hub (thesis: ``top_paths_to_keep``).
        number_of_hubs: hubs kept after pruning (thesis: ``number_of_hubs``).
        filter_output_context: filter the output triples (thesis: ``filter_output_context``).
        diversity_ranking_penalty: penalty per repeated subject in a hub's paths (thesis: same name).
        path_weight_alpha: hub score = exp-weighted mean of path scores (thesis: ``path_weight_alpha``).
        hub_types: ORKG classes whose instances are hub roots (thesis: ``hub_types``; default Paper).
        indexing_root_entity_ids: entities whose hubs are indexed (default: the graph's root entities).
        max_hub_path_length: longest hub path (-1 = unbounded; thesis: ``max_hub_path_length``).
        max_retrieval_level: traversal levels walked from the topic entity (thesis: ``MaxRetrievalLevel``).
        uniform_hop_count: FINDHUBROOTS walks one hop per level (thesis: ``UniformHopCount``; its pseudocode
            reading, and the original implementation's default); false: each level walks until hub roots.
        max_global_search_rounds: direct-strategy search rounds until enough hubs are found.
        llm_path_text: PATHTOTEXT by the LLM (thesis Alg. 6) at index time and for the path from the topic
            entity (Alg. 17); cached and part of the index fingerprint. Without an LLM: the template.
        filter_min_similarity: LLM-free output filter: similarity a triple needs to be kept.
        filter_min_keep: LLM-free output filter: triples always kept.
        max_output_triples: cap on returned triples (None = all kept).
        output_ranking: LLM-free output order: ``similarity`` (best cosine of the triple text; the earlier
            default) or ``fusion`` (RRF of dense triple, dense path and BM25 rankings plus question cues;
            ``rerank.py``). Ignored when an LLM is configured (the thesis's order and Listing A.4 filter).
        output_rank_weights: fusion weights per ranking (``triple``, ``path``, ``lexical``, ``retrieval``).
        output_rrf_k: the RRF constant of the output fusion.
        output_value_boost: fusion: factor ``1 + b`` for triples whose object is a value (literal / leaf).
        output_polarity_penalty: fusion: factor ``1 - p`` for ``False``-valued triples when the question has
            no negation cue.
        output_expand_hubs: fusion: the best N hubs offer the triples of *all* their indexed paths to the
            output ranking, not only of their ``top_paths_to_keep`` kept paths (a path the vector search ranked
            low, e.g. a long venue label, can still win on the fused ranking); 0 = kept paths only.
        max_component_share: LLM-free question analysis: a graph label found in the question becomes a query
            vector only if it occurs at most this often per hub root (None = every label, the earlier rule).
        output_label_vectors: fusion: the labels left out by ``max_component_share`` (the asked attribute, e.g.
            "evaluation method") still score output triples, as extra vectors of the dense triple ranking.
        max_workers: parallel partial-answer calls.
        auto_index: build the index on first use if missing.
    """

    use_topic_if_given: bool = True
    extract_question_components: bool = True
    top_paths_to_keep: Annotated[int, Field(ge=1)] = 10
    number_of_hubs: Annotated[int, Field(ge=1)] = 30
    filter_output_context: bool = True
    diversity_ranking_penalty: Annotated[float, Field(ge=0.0)] = 0.05
    path_weight_alpha: Annotated[float, Field(ge=0.0)] = 5.0
    hub_types: list[str] | None = None
    indexing_root_entity_ids: list[str] | None = None
    max_hub_path_length: Annotated[int, Field(ge=-1)] = -1
    max_retrieval_level: Annotated[int, Field(ge=1)] = 2
    uniform_hop_count: bool = True
    max_global_search_rounds: Annotated[int, Field(ge=1)] = 10
    llm_path_text: bool = False
    filter_min_similarity: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.3
    filter_min_keep: Annotated[int, Field(ge=0)] = 10
    max_output_triples: Annotated[int, Field(ge=1)] | None = None
    output_ranking: Literal["similarity", "fusion"] = "fusion"
    output_rank_weights: dict[str, Annotated[float, Field(ge=0.0)]] | None = None
    output_rrf_k: Annotated[int, Field(ge=1)] = 60
    output_value_boost: Annotated[float, Field(ge=0.0)] = 1.0
    output_polarity_penalty: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    max_component_share: Annotated[float, Field(gt=0.0)] | None = 0.5
    output_label_vectors: bool = True
    output_expand_hubs: Annotated[int, Field(ge=0)] = 3
    max_workers: Annotated[int, Field(ge=1)] = 8
    auto_index: bool = True
