"""HubLinkRetriever: direct and graph-traversal retrieval strategies (alg. 8-16) over the hub index.

Parameters are the thesis's (Table 9.1, §7.2) with its final values (Table 9.4) as defaults; the LLM-free
mode replaces every LLM step by a deterministic one (see llm_free notes in docs/hublink.md).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from hublab import observability
from hublab.errors import HubLabError, InputError
from hublab.graph.base import PAPER_TYPE
from hublab.graph.model import Knowledge, Triple, TripleParseError, parse_triple_string
from hublab.llm.base import llm_free
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.methods.hublink.answer import (
    HubContext,
    Partial,
    PathEvidence,
    final_answer,
    llm_filter,
    paper_meta,
    partial_answers,
    similarity_filter,
    thesis_triple_order,
)
from hublab.retrievers.methods.hublink.hubs import EntityWithDirection, HubDetector, HubRootFinder
from hublab.retrievers.methods.hublink.indexing import HubIndex, IndexSettings
from hublab.retrievers.methods.hublink.linking import NoLinker, SourceLinker
from hublab.retrievers.methods.hublink.params import HubLinkParams
from hublab.retrievers.methods.hublink.question import ProcessedQuestion, Vocabulary, process_question
from hublab.retrievers.methods.hublink.rerank import RANKINGS, OutputRanker, candidates_from_hubs
from hublab.retrievers.methods.hublink.search import Hub, HubSearch, prune_hubs

_PROMPTS = "hublab.retrievers.methods.hublink.prompts"  # the templates HubLink sends (prompts.py)


def hub_documents(hubs: list[Hub]) -> list[dict[str, Any]]:
    """The paths of the kept hubs as retriever documents, hub by hub (best hub first), best path first."""
    return [{"page_content": hit.text, "id": hit.path_hash,
             "metadata": {"hub_root": h.root, "hub_score": float(h.score), "path_score": float(hit.score),
                          "level": hit.level}}
            for h in hubs for hit in h.ranked()]


@lru_cache(maxsize=65536)
def _parse_triple(t: str) -> Triple | None:
    """A canonical triple string as a (frozen) ``Triple``, None if it does not parse; cached (the same triples
    come back question after question)."""
    try:
        pt = parse_triple_string(t)
    except TripleParseError:
        return None
    return Triple(Knowledge(pt.subject_id, pt.subject_label), pt.predicate, Knowledge(pt.object_id, pt.object_label))


class HubLinkRetriever(Retriever):
    __doc__ = f"""HubLink (thesis Ch. 4, Alg. 8–16). Its parameters, with the thesis's final values (Table 9.4) as
    defaults, are the fields of :class:`~hublab.retrievers.methods.hublink.params.HubLinkParams` (documented there,
    shown here); ``source_linker`` (a Python object, not a pipeline parameter) links hubs to external sources.

    {HubLinkParams.__doc__}"""

    thesis_name = "HubLink"
    uses_llm = True
    default_pipeline = "hublink_local.yaml"
    #: thesis Listings A.3, A.1, A.2, A.4 and the project's PATHTOTEXT; an optional step's prompt is sent only
    #: when its parameter is on
    prompts = {"hublink_components": (_PROMPTS, "COMPONENTS", "extract_question_components"),
               "hublink_partial": (_PROMPTS, "PARTIAL", None), "hublink_final": (_PROMPTS, "FINAL", None),
               "hublink_filter": (_PROMPTS, "FILTER", "filter_output_context"),
               "hublink_path_to_text": (_PROMPTS, "PATH_TO_TEXT", "llm_path_text")}

    params_type = HubLinkParams

    def __init__(self, resources: Resources, source_linker: SourceLinker | None = None, **params: Any) -> None:
        if resources.embedder is None or resources.vector_store is None:
            raise InputError("HubLink needs an embedder and a vector store", field="embedder / vector_store")
        super().__init__(resources, **params)
        c = self.config
        unknown = set(c.output_rank_weights or {}) - set(RANKINGS)
        if unknown:
            raise InputError(f"unknown rankings {sorted(unknown)}; expected some of {list(RANKINGS)}",
                             field="output_rank_weights")
        self.ranker = OutputRanker(resources.graph, resources.embedder, weights=c.output_rank_weights,
                                   rrf_k=int(c.output_rrf_k), value_boost=float(c.output_value_boost),
                                   polarity_penalty=float(c.output_polarity_penalty))
        self.linker: SourceLinker = source_linker or NoLinker()
        hub_types = c.hub_types or [PAPER_TYPE]
        self.detector = HubDetector(resources.graph, hub_types)
        roots = c.indexing_root_entity_ids or resources.root_entity_ids
        settings = IndexSettings(hub_types, roots, int(c.max_hub_path_length), bool(c.llm_path_text))
        # The manifest lives in the index folder (so DVC versions it with the index), else in the cache.
        manifest_dir = Path(resources.index_dir or Path(resources.cache_dir or ".cache") / "hublink")
        self.hub_index = HubIndex(resources.graph, resources.embedder, resources.vector_store, resources.llm,
                                  settings, f"hl_{resources.index_name}", manifest_dir, workers=c.max_workers)
        self.search = HubSearch(resources.vector_store, self.hub_index.collection, int(c.top_paths_to_keep),
                                float(c.diversity_ranking_penalty))
        self._vocab: Vocabulary | None = None
        self._ready_key: tuple[int, int, int] | None = None  # the manifest's stat when last found ready

    # ---------------- index ----------------
    def index(self, *, progress: bool = True) -> dict[str, Any]:
        return self.hub_index.build(progress=progress)

    def ensure_ready(self, *, progress: bool = False) -> None:
        """Before the first question: an unbuilt or partly built index (an interrupted build) is built or resumed
        (``auto_index``), or refused, never searched: a partial index gives silently empty results. A damaged one
        (its store does not match its manifest) is refused with the command that rebuilds it. Checked again only
        when the manifest file changes (not once per question)."""
        key = self.hub_index.manifest_key()
        if key is not None and key == self._ready_key:
            return
        problem = self.hub_index.problem()
        if problem is not None and problem[1]:
            raise HubLabError(f"{problem[0]}: rebuild it: run `hublab index` for this pipeline and --graph "
                              f"{self.resources.graph.name} (it drops the damaged collection and builds it again)")
        if problem is not None:
            if not self.config.auto_index:
                raise HubLabError(f"{problem[0]}: run `hublab index` first (or set auto_index: true)")
            self.index(progress=progress)
            problem = self.hub_index.problem()
            if problem is not None:
                raise HubLabError(f"{problem[0]} after a rebuild")
        self._ready_key = self.hub_index.manifest_key()

    def _ready(self) -> str | None:
        self.ensure_ready()  # raises: an unusable index is an error for the question, not an empty answer
        return None

    @property
    def vocab(self) -> Vocabulary:
        if self._vocab is None:
            self._vocab = Vocabulary(self.resources.graph, hub_types=sorted(self.detector.hub_types))
        return self._vocab

    # ---------------- strategies ----------------
    def _direct(self, q: ProcessedQuestion) -> list[Hub]:
        """DIRECTRETRIEVALSTRATEGY (Alg. 12) up to PRUNEHUBS (traced as a RETRIEVER span: the kept hubs' paths)."""
        with observability.span("hub search (direct)", observability.RETRIEVER,
                                inputs={"question": q.question, "components": q.components}) as sp:
            hubs = self._direct_hubs(q)
            if sp.recording:
                sp.set_outputs(hub_documents(hubs))
                sp.set_attributes({"n_hubs": len(hubs)})
            return hubs

    def _direct_hubs(self, q: ProcessedQuestion) -> list[Hub]:
        candidates: dict[str, Hub] = {}
        for _ in range(self.config.max_global_search_rounds):
            if len(candidates) >= self.config.number_of_hubs:
                break
            found = self.search.global_search(q.vectors, list(candidates))
            if not found:
                break
            for root, hub in found.items():
                cand = candidates.setdefault(root, Hub(root))
                for hit in hub.paths.values():
                    cand.add(hit)
        # FILLORREMOVEPATHS (Alg. 13): more than TopPathsToKeep -> prune; fewer -> GETHUBPATHSFORHUB (replace)
        c = self.config
        return prune_hubs(self.search.fill_or_prune(q.vectors, candidates), c.path_weight_alpha, c.number_of_hubs)

    def _hubs_at_level(self, q: ProcessedQuestion, roots: list[str]) -> list[Hub]:
        """GETHUBSATCURRENTLEVEL (Alg. 15) after FINDHUBROOTS, then PRUNEHUBS (Alg. 14 line 12); traced as a
        RETRIEVER span per level (the kept hubs' paths)."""
        with observability.span("hub search (traversal level)", observability.RETRIEVER,
                                inputs={"question": q.question, "hub_roots": roots}) as sp:
            indexed = self.hub_index.manifest()
            roots = [r for r in roots if r in indexed]  # hubs without indexed paths are skipped (§4.7)
            hubs: dict[str, Hub] = {}
            self.search.paths_for_hubs(q.vectors, roots, hubs)
            kept = prune_hubs(hubs, self.config.path_weight_alpha, self.config.number_of_hubs)
            if sp.recording:
                sp.set_outputs(hub_documents(kept))
                sp.set_attributes({"n_indexed_roots": len(roots), "n_hubs": len(kept)})
            return kept

    # ---------------- retrieve ----------------
    def _retrieve(self, question, topic_entity_id, topic_entity_value) -> RetrievalResult:
        graph = self.resources.graph
        if len(graph) == 0:
            return RetrievalResult(reason="empty graph")
        problem = self._ready()
        if problem:
            return RetrievalResult(reason=problem)
        llm = self.resources.llm
        q = process_question(question, self.resources.embedder, llm=llm, vocab=self.vocab,
                             extract_components=self.config.extract_question_components,
                             max_component_share=self.config.max_component_share)
        fallbacks = list(q.fallbacks)
        if topic_entity_id and self.config.use_topic_if_given:
            if graph.entity(topic_entity_id) is None:
                return RetrievalResult(reason=f"unknown topic entity {topic_entity_id!r}", fallbacks=fallbacks)
            return self._traverse(q, topic_entity_id, fallbacks)
        hubs = self._direct(q)
        if not hubs:
            return RetrievalResult(reason="no matching hub in the index", fallbacks=fallbacks)
        return self._answer(q, hubs, {}, fallbacks)

    def _traverse(self, q: ProcessedQuestion, topic: str, fallbacks: list[str]) -> RetrievalResult:
        """GRAPHTRAVERSALRETRIEVALSTRATEGY (Alg. 14): two walkers (left, right) from the topic entity; per level
        FINDHUBROOTS, the hubs' paths, PRUNEHUBS, partial answers; the first level with a partial answer wins."""
        finder = HubRootFinder(self.resources.graph, self.detector)
        entities = [EntityWithDirection(topic, True), EntityWithDirection(topic, False)]
        last: RetrievalResult | None = None
        for _level in range(self.config.max_retrieval_level):
            if not entities:
                break
            roots, entities = finder.find(entities, uniform_hop_count=self.config.uniform_hop_count)
            if not roots:
                continue
            hubs = self._hubs_at_level(q, [r.uid for r in roots])
            if not hubs:
                continue
            paths_to_topic = {r.uid: r.path for r in roots}
            result = self._answer(q, hubs, paths_to_topic, fallbacks)
            if result.answer:  # partial answers found (Alg. 14 lines 17-18)
                return result
            last = result
        reason = "no hub with relevant paths within max_retrieval_level"
        return RetrievalResult(reason=reason if last is None else last.reason, fallbacks=fallbacks)

    def _hub_context(self, q: ProcessedQuestion, h: Hub, records: dict[str, dict[str, Any]]) -> HubContext | None:
        ranked = [p for p in h.ranked() if p.path_hash in records]
        if not ranked:
            return None
        title, doi = paper_meta(self.resources.graph, h.root)
        paths = [PathEvidence(records[p.path_hash]["path_text"], list(records[p.path_hash]["triples"]), p.score)
                 for p in ranked]
        linked = self.linker.link(q.question, h.root, title, doi)
        return HubContext(h.root, title, doi, h.score, paths, "", linked)

    def _topic_texts(self, contexts: list[HubContext], paths_to_topic: dict[str, tuple],
                     fallbacks: list[str]) -> None:
        """Alg. 17 lines 4-7: PATHTOTEXT of each hub root's PathToEntity (LLM calls in parallel, cached)."""
        todo = [c for c in contexts if paths_to_topic.get(c.root)]
        if not todo:
            return
        def text(c: HubContext):
            return self.hub_index.path_text(paths_to_topic[c.root])

        if self.hub_index.llm_path_text:
            with ThreadPoolExecutor(max_workers=self.config.max_workers) as pool:
                done = list(pool.map(text, todo))
        else:  # the template: no call to wait for, so no thread pool per question
            done = list(map(text, todo))
        for c, (text, failed) in zip(todo, done, strict=True):
            c.path_to_topic = text
            if failed:
                fallbacks.append(f"path_to_text: {failed}")
        self.hub_index.save_text_cache()

    def _answer(self, q: ProcessedQuestion, hubs: list[Hub], paths_to_topic: dict[str, tuple],
                fallbacks: list[str]) -> RetrievalResult:
        if not hubs:
            return RetrievalResult(reason="no hubs", fallbacks=fallbacks)
        records = self.hub_index.path_records([h.root for h in hubs])
        llm = self.resources.llm
        contexts: list[HubContext] = []
        for h in hubs:
            ctx = self._hub_context(q, h, records)
            if ctx is not None:
                contexts.append(ctx)
        self._topic_texts(contexts, paths_to_topic, fallbacks)
        partials, failed = partial_answers(q.question, contexts, llm, max_workers=self.config.max_workers)
        fallbacks.extend(failed)
        if not partials:
            return RetrievalResult(reason="no hub produced a partial answer", fallbacks=fallbacks)
        answer, failed = final_answer(q.question, partials, llm)
        fallbacks.extend(failed)
        scored = self._output_triples(q, answer, partials, fallbacks)
        if self.config.max_output_triples:
            scored = scored[: int(self.config.max_output_triples)]
        parsed = self._parsed([t for t, _ in scored])
        hub_of = self._hub_of_triples(partials)
        ctx = [Context(text=t, triple=parsed.get(t), score=s, metadata={"hub": hub_of.get(t, "")})
               for t, s in scored]
        sources = [{"id": p.hub.root, "title": p.hub.title, "doi": p.hub.doi or ""} for p in partials]
        reason = None if ctx else "the output-triple filter kept no triple (Listing A.4 returned an empty list)"
        return RetrievalResult(ctx, answer=answer, sources=sources, fallbacks=fallbacks, reason=reason)

    @staticmethod
    def _parsed(triples: list[str]) -> dict[str, Triple]:
        parsed: dict[str, Triple] = {}
        for t in triples:
            triple = _parse_triple(t)
            if triple is not None:
                parsed[t] = triple
        return parsed

    def _output_triples(self, q: ProcessedQuestion, answer: str, partials: list[Partial],
                        fallbacks: list[str]) -> list[tuple[str, float | None]]:
        """PREPAREOUTPUTTRIPLES (Alg. 20).

        With an LLM: the thesis's order (kept paths of the contributing hubs by score, their triples in path
        order, each once), filtered by Listing A.4 when ``filter_output_context``; a failed filter call falls
        back to the LLM-free filter. LLM-free with ``filter_output_context``: ``output_ranking: fusion`` ranks
        every triple of the contributing hubs by the fused dense/lexical rankings and cues (``rerank.py``; no
        threshold, ``max_output_triples`` bounds the list); ``similarity`` re-ranks by cosine and thresholds
        (the earlier behaviour). LLM-free without the filter: hub by hub, best path first."""
        llm = self.resources.llm

        def similarity(triples: list[str]) -> list[tuple[str, float | None]]:
            return list(similarity_filter(triples, self._parsed(triples), q.vectors, self.resources.embedder,
                                          min_similarity=self.config.filter_min_similarity,
                                          min_keep=self.config.filter_min_keep))

        if llm_free(llm) and self.config.filter_output_context and self.config.output_ranking == "fusion":
            return list(self._fused(q, partials))
        if llm_free(llm):
            ordered: list[str] = []
            seen: set[str] = set()
            for p in partials:
                for t in p.hub.triples:
                    if t not in seen:
                        seen.add(t)
                        ordered.append(t)
            return similarity(ordered) if self.config.filter_output_context else [(t, None) for t in ordered]
        thesis = thesis_triple_order(partials)
        if not self.config.filter_output_context:
            return list(thesis)
        kept, failed = llm_filter(q.question, answer, thesis, llm)
        if kept is not None:
            return list(kept)
        fallbacks.append(f"triple_filter: {failed}")
        return similarity([t for t, _ in thesis])

    def _fused(self, q: ProcessedQuestion, partials: list[Partial]) -> list[tuple[str, float]]:
        """LLM-free output ranking by fusion (``rerank.py``): every triple of the contributing hubs."""
        hubs = [p.hub for p in partials]
        if self.config.output_expand_hubs:
            expand = hubs[: self.config.output_expand_hubs]
            by_hub: dict[str, list[PathEvidence]] = {}
            for rec in self.hub_index.path_records([h.root for h in expand]).values():
                by_hub.setdefault(rec["hub_root"], []).append(PathEvidence(rec["path_text"], list(rec["triples"]), 0.0))
            for i, h in enumerate(expand):
                have = {k.text for k in h.paths}
                extra = sorted((p for p in by_hub.get(h.root, []) if p.text not in have), key=lambda p: p.text)
                hubs[i] = HubContext(h.root, h.title, h.doi, h.score, h.paths + extra)
        all_triples = [t for h in hubs for p in h.paths for t in p.triples]
        cands = candidates_from_hubs(hubs, self._parsed(list(dict.fromkeys(all_triples))))
        return self.ranker.rank(q.question, self._ranking_vectors(q), cands)

    def _ranking_vectors(self, q: ProcessedQuestion) -> np.ndarray:
        """The query vectors, plus (``output_label_vectors``) one per frequent graph label the question names."""
        if not (self.config.output_label_vectors and q.frequent_labels):
            return q.vectors
        extra = np.asarray(self.resources.embedder.embed(q.frequent_labels), dtype=np.float32)
        return np.vstack([np.asarray(q.vectors, dtype=np.float32), extra])

    @staticmethod
    def _hub_of_triples(partials) -> dict[str, str]:
        """triple → root of the first contributing hub that holds it (one pass, not one per output triple)."""
        out: dict[str, str] = {}
        for p in partials:
            for t in p.hub.triples:
                out.setdefault(t, p.hub.root)
        return out
