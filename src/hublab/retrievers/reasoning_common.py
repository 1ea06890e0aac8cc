"""Shared machinery of the LLM-reasoning baselines (FiDeLiS, MindMap, ToG, StructGPT).

All four walk our :class:`KnowledgeGraph` *bidirectionally* (the thesis's SQA adaptation: ORKG stores
papers as subjects, so many answers are only reachable against edge direction), cache graph queries
(the thesis added a graph-query cache to FiDeLiS), score texts with the embedder (vectors cached by
text), and run under a per-question :class:`Budget` so a question never runs away on a hub node.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hublab.embedding.base import Embedder
from hublab.errors import InputError
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Knowledge, Triple
from hublab.retrievers.base import Context, Resources, RetrievalResult, Retriever
from hublab.retrievers.llm_utils import is_llm_free

INVERSE_SUFFIX = " (inverse)"

_STOPWORDS = frozenset(
    """a an the of in on at to for from by with about as and or not no is are was were be been being has have had
    do does did which what who whom whose when where why how that this these those there their its it they them
    paper papers publication publications title titled give list name show find all any some many much more most
    than into onto over under between within without per each other such same also only please me my our your
    can could would should will shall may might must used use uses using been has have""".split()
)


@dataclass
class Budget:
    """Caps one question's work: wall-clock seconds and node expansions (neighbour fetches)."""

    max_seconds: float = 120.0
    max_expansions: int = 5000
    started: float = field(default_factory=time.monotonic)
    expansions: int = 0

    def spend(self, n: int = 1) -> None:
        self.expansions += n

    @property
    def exhausted(self) -> bool:
        return self.expansions >= self.max_expansions or (time.monotonic() - self.started) >= self.max_seconds

    def why(self) -> str:
        if self.expansions >= self.max_expansions:
            return f"expansion budget ({self.max_expansions}) exhausted"
        return f"time budget ({self.max_seconds:.0f}s) exhausted"


@dataclass(frozen=True)
class Edge:
    """A triple seen from one node: ``forward`` when that node is the subject."""

    triple: Triple
    forward: bool

    @property
    def other(self) -> Knowledge:
        return self.triple.object if self.forward else self.triple.subject

    @property
    def relation(self) -> str:
        """Relation name shown to the LLM; incoming edges get an explicit inverse marker."""
        return self.triple.predicate if self.forward else self.triple.predicate + INVERSE_SUFFIX


class GraphView:
    """Cached, optionally bidirectional, capped neighbourhood access to a KnowledgeGraph."""

    def __init__(self, graph: KnowledgeGraph, *, bidirectional: bool = True, max_neighbours: int = 500) -> None:
        self.graph = graph
        self.bidirectional = bidirectional
        self.max_neighbours = max_neighbours
        self._cache: dict[str, list[Edge]] = {}

    def edges(self, uid: str, budget: Budget | None = None) -> list[Edge]:
        cached = self._cache.get(uid)
        if cached is None:
            out = [Edge(t, True) for t in self.graph.outgoing(uid)]
            if self.bidirectional:
                out += [Edge(t, False) for t in self.graph.incoming(uid) if t.subject.uid != uid]
            cached = out[: self.max_neighbours] if self.max_neighbours > 0 else out
            self._cache[uid] = cached
        if budget is not None:
            budget.spend()
        return cached

    def relations(self, uid: str, budget: Budget | None = None) -> list[str]:
        """Unique relation names around ``uid`` in first-seen order."""
        return list(dict.fromkeys(e.relation for e in self.edges(uid, budget)))


class TextScorer:
    """Cosine similarity between texts and query vectors, with a per-retriever vector cache."""

    def __init__(self, embedder: Embedder, max_cache: int = 200_000) -> None:
        self.embedder = embedder
        self.max_cache = max_cache
        self._cache: dict[str, np.ndarray] = {}

    def vectors(self, texts: list[str]) -> np.ndarray:
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            if len(self._cache) + len(missing) > self.max_cache:
                self._cache.clear()
            self._cache.update(zip(missing, vecs, strict=True))
        if not texts:
            return np.zeros((0, getattr(self.embedder, "dim", 0) or 1), dtype=np.float32)
        return np.stack([self._cache[t] for t in texts])

    def query(self, texts: list[str]) -> np.ndarray:
        """Query vectors (not cached: questions rarely repeat)."""
        return np.asarray(self.embedder.embed(list(texts)), dtype=np.float32)

    def scores(self, query_vecs: np.ndarray, texts: list[str]) -> np.ndarray:
        """Max cosine over the query vectors for each text (vectors are L2-normalised)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        sims = self.vectors(texts) @ query_vecs.T
        return sims.max(axis=1)


def require_embedder(embedder: Embedder | None, retriever: str, why: str) -> Embedder:
    if embedder is None:
        raise InputError(f"{retriever} needs an embedder ({why}); configure 'embedder' in the pipeline",
                         field="embedder")
    return embedder


def quoted_spans(question: str) -> list[str]:
    """Text inside quotes (titles are quoted in the KGQA questions)."""
    spans = re.findall(r"'([^']{3,})'|\"([^\"]{3,})\"|“([^”]{3,})”|‘([^’]{3,})’", question)
    return [next(p for p in groups if p).strip() for groups in spans]


def keyword_candidates(question: str, max_ngram: int = 3) -> list[str]:
    """LLM-free keyword/entity extraction: quoted spans, capitalised runs, then content-word n-grams.

    Deterministic stand-in for the LLM planning/extraction prompts of FiDeLiS and MindMap.
    """
    out: list[str] = list(quoted_spans(question))
    rest = re.sub(r"'[^']{3,}'|\"[^\"]{3,}\"|“[^”]{3,}”|‘[^’]{3,}’", " ", question)
    words = re.findall(r"[A-Za-z0-9][\w\-+.#/]*", rest)
    # Capitalised runs (not sentence-initial question words): named entities such as "ICSA", "Petri Net".
    run: list[str] = []
    for i, w in enumerate(words + [""]):
        is_cap = bool(w) and (w[0].isupper() or w.isupper()) and not (i == 0 and w.lower() in _STOPWORDS)
        if is_cap and w.lower() not in _STOPWORDS:
            run.append(w)
        else:
            if run:
                out.append(" ".join(run))
            run = []
    content = [w for w in words if w.lower() not in _STOPWORDS and len(w) > 1]
    for n in range(min(max_ngram, 2), 0, -1):
        for i in range(len(content) - n + 1):
            out.append(" ".join(content[i : i + n]))
    seen: set[str] = set()
    uniq: list[str] = []
    for k in out:
        key = k.lower()
        if key and key not in seen:
            seen.add(key)
            uniq.append(k)
    return uniq


class ContextCollector:
    """Triples a retriever used, each with its best score; rendered as ranked contexts."""

    def __init__(self) -> None:
        self._best: dict[str, tuple[float, int, Triple, dict[str, Any]]] = {}

    def add(self, triple: Triple, score: float, **metadata: Any) -> None:
        key = triple.render()
        old = self._best.get(key)
        order = old[1] if old else len(self._best)
        if old is None or score > old[0]:
            self._best[key] = (float(score), order, triple, metadata or (old[3] if old else {}))

    def __len__(self) -> int:
        return len(self._best)

    def __contains__(self, triple: Triple) -> bool:
        return triple.render() in self._best

    def contexts(self, limit: int | None = None) -> list[Context]:
        ranked = sorted(self._best.items(), key=lambda kv: (-kv[1][0], kv[1][1]))
        if limit is not None:
            ranked = ranked[:limit]
        return [Context(text=k, triple=v[2], score=v[0], metadata=dict(v[3])) for k, v in ranked]


def render_path(triples: list[Triple]) -> str:
    """A reasoning path as one line of triples (for prompts and LLM-free answers)."""
    return " -> ".join(t.render() for t in triples)


def join_reasons(*reasons: str | None) -> str | None:
    parts = [r for r in reasons if r]
    return "; ".join(dict.fromkeys(parts)) or None


class EntityIndex:
    """Nearest-neighbour lookup over the graph's entity labels (in-memory; unique labels embedded once)."""

    def __init__(self, graph: KnowledgeGraph, scorer: TextScorer) -> None:
        by_label: dict[str, list[str]] = {}
        for ent in graph.entities():
            if ent.text:
                by_label.setdefault(ent.text, []).append(ent.uid)
        # Resources before literals: a label shared by a resource and many literals should link to the resource.
        self.uids = {k: sorted(v, key=lambda u: (not u.startswith("R"), u)) for k, v in by_label.items()}
        self.labels = sorted(by_label)
        self.matrix = scorer.vectors(self.labels) if self.labels else np.zeros((0, 1), dtype=np.float32)
        self.scorer = scorer

    def __len__(self) -> int:
        return len(self.labels)

    def search(self, texts: list[str], k: int = 1) -> list[list[tuple[str, float]]]:
        """For each text, the ``k`` most similar labels with their cosine similarity."""
        if not texts or not self.labels:
            return [[] for _ in texts]
        sims = self.scorer.query(texts) @ self.matrix.T
        out: list[list[tuple[str, float]]] = []
        for row in sims:
            top = np.argsort(-row, kind="stable")[:k]
            out.append([(self.labels[i], float(row[i])) for i in top])
        return out


class ReasoningRetriever(Retriever):
    """Base for the four baselines: resources, graph view, budget, topic resolution, never-raise wrapper."""

    needs_embedder_when_llm_free = True

    def __init__(
        self,
        resources: Resources,
        *,
        bidirectional: bool = True,
        max_neighbours: int = 500,
        max_seconds: float = 120.0,
        max_expansions: int = 5000,
        generate_answer: bool = True,
        seed: int = 0,
        **params: Any,
    ) -> None:
        if params:
            raise InputError(f"unknown parameter(s) for {self.name}: {', '.join(sorted(params))}",
                             field="retriever.params")
        super().__init__(resources)
        self.params = {
            "bidirectional": bidirectional, "max_neighbours": max_neighbours, "max_seconds": max_seconds,
            "max_expansions": max_expansions, "generate_answer": generate_answer, "seed": seed,
        }
        self.view = GraphView(resources.graph, bidirectional=bidirectional, max_neighbours=max_neighbours)
        self.llm = resources.llm
        self.llm_free = is_llm_free(resources.llm)
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

    def retrieve(
        self,
        question: str,
        topic_entity_id: str | None = None,
        topic_entity_value: str | None = None,
    ) -> RetrievalResult:
        if not question or not question.strip():
            return RetrievalResult(reason="empty question")
        try:
            return self._retrieve(question.strip(), topic_entity_id, topic_entity_value)
        except InputError:
            raise
        except Exception as exc:  # noqa: BLE001 - the run must go on; the reason is recorded per question
            return RetrievalResult(reason=f"{self.name} failed: {type(exc).__name__}: {exc}")

    def _retrieve(
        self, question: str, topic_entity_id: str | None, topic_entity_value: str | None
    ) -> RetrievalResult:  # pragma: no cover - abstract
        raise NotImplementedError


def triple_line(t: Triple) -> str:
    """A triple for prompts and embedding: labels only, readable."""
    return f"{t.subject.text} | {t.predicate} | {t.object.text}"


def sources_of(graph: KnowledgeGraph, triples: list[Triple], limit: int = 20) -> list[dict[str, str]]:
    """Papers the triples belong to (for answer attribution), first-seen order."""
    out: dict[str, dict[str, str]] = {}
    for t in triples:
        for node in (t.subject, t.object):
            if len(out) >= limit:
                break
            paper = graph.paper_of(node.uid, max_hops=4)
            if paper is not None and paper.uid not in out:
                out[paper.uid] = {"id": paper.uid, "title": paper.text}
    return list(out.values())


def extractive_answer(contexts: list[Context], start: str | None = None) -> str | None:
    """LLM-free answer: the far end of the best-ranked triple (seen from the start node when it is in it)."""
    for c in contexts:
        t = c.triple
        if t is None:
            continue
        if start is not None and t.object.uid == start:
            return t.subject.text
        return t.object.text
    return None


def query_texts(question: str) -> list[str]:
    """Texts to embed for scoring relations/entities: the question, and the question without quoted spans
    (a quoted title names the start entity; left in, it drowns the relation words in the embedding)."""
    stripped = re.sub(r"'[^']{3,}'|\"[^\"]{3,}\"|“[^”]{3,}”|‘[^’]{3,}’", " ", question)
    stripped = re.sub(r"\s+", " ", stripped).strip()
    return list(dict.fromkeys([question] + ([stripped] if stripped and stripped != question else [])))
