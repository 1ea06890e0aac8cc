"""MindMap (Wen, Wang & Sun; thesis §7.4.6): entity linking + path and neighbour evidence subgraphs.

Index: every entity label is embedded once (unique labels; in-memory matrix, or a vector-store collection
when ``use_vector_store`` is set and the pipeline provides one). Query: the LLM extracts the entities of
the question, each is linked to its nearest graph label, the shortest paths between every pair of linked
entities are found by a bidirectional BFS over the undirected graph (the thesis's replacement for the
graph framework's built-in shortest path), and each linked entity contributes its 1-hop neighbours. The
LLM verbalises both evidence subgraphs and answers from them. The evidence triples are returned, ranked by
embedding similarity to the question.

LLM-free: candidates from quoted spans / capitalised runs / n-grams (:func:`keyword_candidates`), linking
with a similarity threshold, template verbalisation and an extractive answer.

Known limitation (thesis §10.3.3.2): evidence only connects entities *named* in the question; an answer
more than one hop away from a single named entity is out of reach.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import Field

from hublab.errors import InputError
from hublab.graph.model import Triple
from hublab.retrievers.base import Resources, RetrievalResult
from hublab.retrievers.components.graph_walk import Budget, ContextCollector, GraphView, triple_line
from hublab.retrievers.components.llm_json import as_str_list, ask_json, ask_text
from hublab.retrievers.components.question_text import keyword_candidates
from hublab.retrievers.components.reasoning import ReasoningParams, ReasoningRetriever
from hublab.retrievers.components.results import far_end_answer, join_reasons, sources_of

_Parents = dict[str, list[tuple[str, Triple]]]

EXTRACT_SCHEMA = {
    "type": "object",
    "properties": {"entities": {"type": "array", "items": {"type": "string"}}},
    "required": ["entities"],
}
EXTRACT_PROMPT = """Extract the entities mentioned in the question that could be nodes of a scholarly knowledge
graph (paper titles, venues, authors, research methods, tools, years). Copy titles exactly.

Example
Question: Which papers published at ECSA use an interview as evaluation method?
Answer: {{"entities": ["ECSA", "interview"]}}

Question: {question}
Answer with JSON only."""
VERBALISE_PROMPT = """There are some knowledge graph {kind} evidence triples (subject | relation | object):
{evidence}
Describe this evidence in natural language, one sentence per fact, keeping every entity name exactly.
Description:"""
ANSWER_PROMPT = """Question: {question}
You have some knowledge from a scholarly knowledge graph.
Path-based evidence:
{paths}
Neighbour-based evidence:
{neighbours}
Answer the question using this knowledge. If it does not contain the answer, say so.
Answer:"""


@dataclass(frozen=True)
class MindMapParams(ReasoningParams):
    """MindMap's parameters, plus the shared reasoning ones
    (:class:`~hublab.retrievers.components.reasoning.ReasoningParams`).

    Args:
        shortest_paths_to_keep: shortest paths kept between linked entities (thesis: same name).
        final_paths_to_keep: path evidence kept after ranking (thesis: same name).
        neighbors_to_keep: 1-hop neighbour triples kept per entity (thesis: same name).
        max_path_length: longest shortest path searched.
        link_threshold: similarity needed to link a question term to a graph label.
        max_terms: question terms linked at most.
        uids_per_label: graph nodes taken per linked label (labels are not unique).
        use_topic_entity: also start from the dataset's topic entity.
        use_vector_store: keep the label index in the pipeline's vector store instead of memory.
    """

    shortest_paths_to_keep: Annotated[int, Field(ge=1)] = 10
    final_paths_to_keep: Annotated[int, Field(ge=1)] = 10
    neighbors_to_keep: Annotated[int, Field(ge=1)] = 10
    max_path_length: Annotated[int, Field(ge=1)] = 6
    link_threshold: Annotated[float, Field(ge=-1.0, le=1.0)] = 0.5
    max_terms: Annotated[int, Field(ge=1)] = 8
    uids_per_label: Annotated[int, Field(ge=1)] = 3
    use_topic_entity: bool = False
    use_vector_store: bool = False


class MindMapRetriever(ReasoningRetriever):
    """MindMap (thesis §7.4.6); parameters: :class:`MindMapParams`."""

    thesis_name = "Mindmap"
    uses_llm = True
    default_pipeline = "mindmap_local.yaml"
    params_type = MindMapParams
    embedder_use = "it links question entities by embedding similarity"

    def __init__(self, resources: Resources, **params: Any) -> None:
        super().__init__(resources, **params)
        if self.config.use_vector_store and resources.vector_store is None:
            raise InputError("mindmap: use_vector_store is set but no vector store is configured",
                             field="retriever.params.use_vector_store")
        # Shortest paths ignore edge direction, whatever ``bidirectional`` says for neighbour evidence.
        self.undirected = GraphView(resources.graph, bidirectional=True, max_neighbours=self.view.max_neighbours)

    # ---------------- index ----------------
    @property
    def collection(self) -> str:
        base = self.resources.index_name or self.resources.graph.name
        return f"{base}_mindmap_entities".replace("-", "_")

    def index(self, *, progress: bool = True) -> dict[str, Any]:
        idx = self.entity_index()
        stats: dict[str, Any] = {"entity_labels": len(idx)}
        if self.config.use_vector_store:
            store = self.resources.vector_store
            assert store is not None
            if not store.has_collection(self.collection) or store.count(self.collection) == 0:
                store.ensure_collection(self.collection, int(idx.matrix.shape[1]))
                rows = [{"label": lab, "uids": ",".join(idx.uids[lab])} for lab in idx.labels]
                store.insert(self.collection, idx.matrix, rows)
                store.flush(self.collection)
            stats["collection"] = self.collection
            stats["stored"] = store.count(self.collection)
        return stats

    def _link_terms(self, terms: list[str]) -> list[tuple[str, list[str], float]]:
        """(term, node ids, similarity) of each term's nearest entity label above the threshold."""
        if not terms:
            return []
        if self.config.use_vector_store:
            store = self.resources.vector_store
            assert store is not None and self.scorer is not None
            if not store.has_collection(self.collection) or store.count(self.collection) == 0:
                self.index(progress=False)
            hits = store.search(self.collection, self.scorer.query(terms), 1, output_fields=["label", "uids"])
            return [(t, str(h[0].fields.get("uids", "")).split(","), float(h[0].score))
                    for t, h in zip(terms, hits, strict=True) if h and float(h[0].score) >= self.config.link_threshold]
        idx = self.entity_index()
        hits = idx.search(terms, k=1)
        return [(t, idx.uids[h[0][0]], h[0][1]) for t, h in zip(terms, hits, strict=True)
                if h and h[0][1] >= self.config.link_threshold]

    def _extract(self, question: str) -> tuple[list[str], str | None]:
        fallback = keyword_candidates(question)[: self.config.max_terms]
        if self.llm_free:
            return fallback, None
        ans = ask_json(self.llm, EXTRACT_PROMPT.format(question=question), EXTRACT_SCHEMA, max_tokens=300)
        if not ans.ok:
            return fallback, f"entity extraction: {ans.error}; used keyword extraction"
        terms = as_str_list(ans.data.get("entities"))[: self.config.max_terms]
        if not terms:
            return fallback, "entity extraction: LLM found no entities; used keyword extraction"
        return terms, None

    # ---------------- evidence ----------------
    def shortest_paths(self, source: str, target: str, budget: Budget) -> list[list[Triple]]:
        """Up to ``shortest_paths_to_keep`` shortest undirected paths (bidirectional BFS, length-capped)."""
        if source == target:
            return []
        dist = ({source: 0}, {target: 0})
        parents: tuple[_Parents, _Parents] = ({}, {})
        frontier = ([source], [target])
        best: int | None = None
        meets: list[str] = []
        while frontier[0] and frontier[1] and best is None:
            if dist[0][frontier[0][0]] + dist[1][frontier[1][0]] + 1 > self.config.max_path_length or budget.exhausted:
                return []
            side = 0 if len(frontier[0]) <= len(frontier[1]) else 1
            d_here, d_other = dist[side], dist[1 - side]
            nxt: list[str] = []
            for node in frontier[side]:
                for e in self.undirected.edges(node, budget):
                    other = e.other.uid
                    if other not in d_here:
                        d_here[other] = d_here[node] + 1
                        nxt.append(other)
                    if d_here[other] == d_here[node] + 1:
                        parents[side].setdefault(other, []).append((node, e.triple))
            for node in nxt:
                if node in d_other:
                    total = d_here[node] + d_other[node]
                    if best is None or total < best:
                        best, meets = total, [node]
                    elif total == best:
                        meets.append(node)
            frontier = (nxt, frontier[1]) if side == 0 else (frontier[0], nxt)
        if best is None:
            return []
        out: list[list[Triple]] = []
        for m in meets:
            for left in self._walk(m, source, parents[0]):
                for right in self._walk(m, target, parents[1]):
                    out.append(list(reversed(left)) + right)
                    if len(out) >= self.config.shortest_paths_to_keep:
                        return out
        return out

    def _walk(self, node: str, root: str, parents: _Parents) -> Iterator[list[Triple]]:
        """Triples from ``node`` back to ``root`` along BFS parent links (node side first)."""
        if node == root:
            yield []
            return
        for prev, triple in parents.get(node, []):
            for rest in self._walk(prev, root, parents):
                yield [triple] + rest

    @staticmethod
    def _evidence_text(t: Triple, linked: set[str] | dict) -> str:
        """What to compare with the question: the relation plus the end(s) that are not a linked entity.

        The linked entity's own label (often a long title) would otherwise dominate every similarity.
        """
        ends = [k.text for k in (t.subject, t.object) if k.uid not in linked] or [t.subject.text, t.object.text]
        return " ".join([t.predicate, *ends])

    def _neighbours(self, uid: str, query, linked, budget: Budget) -> list[Triple]:
        assert self.scorer is not None
        edges = self.view.edges(uid, budget)
        if not edges:
            return []
        sims = self.scorer.scores(query, [self._evidence_text(e.triple, linked) for e in edges])
        order = sorted(range(len(edges)), key=lambda i: -float(sims[i]))[: self.config.neighbors_to_keep]
        return [edges[i].triple for i in order]

    # ---------------- main ----------------
    def _retrieve(self, question: str, topic_entity_id: str | None, topic_entity_value: str | None) -> RetrievalResult:
        assert self.scorer is not None
        terms, extract_note = self._extract(question)
        notes: list[str | None] = [extract_note]
        linked: dict[str, tuple[str, float]] = {}
        for term, uids, sim in self._link_terms(terms):
            for uid in [u for u in uids if u][: self.config.uids_per_label]:
                if uid not in linked or linked[uid][1] < sim:
                    linked[uid] = (term, sim)
        graph = self.resources.graph
        if self.config.use_topic_entity and topic_entity_id and graph.entity(topic_entity_id) is not None:
            linked.setdefault(topic_entity_id, (topic_entity_value or topic_entity_id, 1.0))
        if not linked:
            return RetrievalResult(reason=join_reasons(*notes, f"no question entity could be linked (terms: {terms})"))
        budget = self.new_budget()
        query = self.scorer.query([question])
        uids = list(linked)
        paths: list[list[Triple]] = []
        for i, a in enumerate(uids):
            for b in uids[i + 1 :]:
                if budget.exhausted:
                    break
                paths.extend(self.shortest_paths(a, b, budget))
        paths = sorted(paths, key=len)[: self.config.final_paths_to_keep]
        neighbour_triples: list[Triple] = []
        for uid in uids:
            if budget.exhausted:
                notes.append(budget.why())
                break
            neighbour_triples.extend(self._neighbours(uid, query, linked, budget))
        evidence = list(dict.fromkeys([t for p in paths for t in p] + neighbour_triples))
        if not evidence:
            return RetrievalResult(reason=join_reasons(*notes, "linked entities have no path or neighbour evidence"))
        sims = self.scorer.scores(query, [self._evidence_text(t, linked) for t in evidence])
        collected = ContextCollector()
        path_set = {t.render() for p in paths for t in p}
        for t, s in zip(evidence, sims, strict=True):
            collected.add(t, float(s), evidence="path" if t.render() in path_set else "neighbour")
        contexts = collected.contexts()
        answer = None
        if self.config.generate_answer:
            answer, note = self._answer(question, paths, neighbour_triples, contexts)
            notes.append(note)
        return RetrievalResult(
            contexts=contexts,
            answer=answer,
            reason=join_reasons(*notes),
            sources=sources_of(self.resources.graph, [c.triple for c in contexts[:10] if c.triple is not None]),
        )

    def _answer(self, question, paths, neighbour_triples, contexts) -> tuple[str | None, str | None]:
        path_text = "\n".join(" -> ".join(triple_line(t) for t in p) for p in paths)
        neigh_text = "\n".join(triple_line(t) for t in neighbour_triples)
        if self.llm_free:
            return far_end_answer(contexts), None
        notes: list[str | None] = []
        described: list[str] = []
        for kind, text in (("path-based", path_text), ("neighbour-based", neigh_text)):
            if not text:
                described.append("(none)")
                continue
            out, err = ask_text(self.llm, VERBALISE_PROMPT.format(kind=kind, evidence=text), max_tokens=600)
            described.append(out.strip() or text)
            notes.append(f"verbalise {kind}: {err}; used the raw triples" if err else None)
        prompt = ANSWER_PROMPT.format(question=question, paths=described[0], neighbours=described[1])
        out, err = ask_text(self.llm, prompt, max_tokens=400)
        notes.append(f"answer: {err}" if err else None)
        return out.strip() or None, join_reasons(*notes)
