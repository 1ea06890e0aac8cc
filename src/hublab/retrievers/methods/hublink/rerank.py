"""LLM-free output ranking (PREPAREOUTPUTTRIPLES without the Listing A.4 filter): every candidate triple of
the contributing hubs is ranked by how well the triple *and the path it was found on* match the question.

Rankings, fused by reciprocal rank (``components.fusion.rrf``, the fusion of the ``hybrid`` baseline):

* ``triple``  — dense: best cosine of the triple's label text to the query vectors;
* ``path``    — dense: best cosine of the texts of the kept paths holding the triple (a path text names the
  hub root, so a triple of the quoted paper outranks the same relation in another paper);
* ``lexical`` — BM25 of the question against "triple text + text of its best path" over the candidate set;
* ``retrieval`` — the retrieval order (hubs by score, their paths best first), i.e. the thesis's order.

Cues from the question and the graph's structure, applied after fusion as multiplicative factors, each a
parameter so its effect can be measured alone (``QuestionCues``; the question analysis that picks the query
vectors is ``question.split_components``):

* ``value_boost`` — a triple whose object is a leaf (a literal or a node without outgoing edges: the value
  itself, not the structural node leading to it) gets ``× (1 + value_boost)``;
* ``polarity_penalty`` — a boolean-valued triple whose value contradicts the question's polarity (``False``
  when the question has no negation cue; nothing is penalised when it has one, since "have *not* used input
  data" is stated as ``None: True`` in ORKG as often as ``used: False``) gets ``× (1 - polarity_penalty)``;

Nothing here knows a dataset, question id or template: only the question text, the graph and the candidates.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from hublab.embedding.base import Embedder
from hublab.graph.base import KnowledgeGraph
from hublab.graph.model import Triple
from hublab.retrievers.components.fusion import rrf
from hublab.retrievers.components.lexical_index import BM25Index
from hublab.retrievers.components.units import Unit
from hublab.retrievers.methods.hublink.text import triple_text
from hublab.scores import dot_scores

#: Fusion weights of the four rankings (``triple``, ``path``, ``lexical``, ``retrieval``); chosen on the
#: reduced GV1 set (docs/hublink.md, "LLM-free output ranking"): the dense path ranking did not help there (the
#: path text still counts through the lexical ranking); the retrieval order (hub rank, then path rank) did once
#: the best hubs offered all their paths and the asked attribute's label scored triples.
DEFAULT_WEIGHTS = {"triple": 0.5, "path": 0.0, "lexical": 1.0, "retrieval": 1.0}
RANKINGS = tuple(DEFAULT_WEIGHTS)

_NEGATION = re.compile(r"\b(not|no|none|never|without|neither|nor|lack|lacks|lacking|absent|missing)\b|n't\b",
                       re.IGNORECASE)
_BOOL = {"true": True, "false": False, "yes": True, "no": False}


@dataclass
class QuestionCues:
    """What the question says beyond its words' similarity: a negation cue (polarity)."""

    negated: bool

    @classmethod
    def of(cls, question: str) -> QuestionCues:
        return cls(bool(_NEGATION.search(question)))


@dataclass
class Candidate:
    triple: str  # canonical string (what is returned)
    text: str  # label text (what is embedded)
    parsed: Triple | None
    order: int  # position in the retrieval order
    path_texts: list[str] = field(default_factory=list)


class OutputRanker:
    """Ranks candidate triples by the fused rankings, then applies the question cues."""

    def __init__(self, graph: KnowledgeGraph, embedder: Embedder, *, weights: dict[str, float] | None = None,
                 rrf_k: int = 60, value_boost: float = 0.0, polarity_penalty: float = 0.0) -> None:
        self.graph = graph
        self.embedder = embedder
        self.weights = {**DEFAULT_WEIGHTS, **(weights or {})}
        unknown = set(self.weights) - set(RANKINGS)
        if unknown:
            raise ValueError(f"unknown rankings {sorted(unknown)}; expected some of {list(RANKINGS)}")
        self.rrf_k = int(rrf_k)
        self.value_boost = float(value_boost)
        self.polarity_penalty = float(polarity_penalty)
        self._leaf: dict[str, bool] = {}

    # ---------------- helpers ----------------
    def is_leaf(self, t: Triple) -> bool:
        o = t.object
        if o.is_literal:
            return True
        if o.uid not in self._leaf:
            self._leaf[o.uid] = not self.graph.outgoing(o.uid)
        return self._leaf[o.uid]

    def _sims(self, texts: list[str], qvecs: np.ndarray) -> np.ndarray:
        if not texts:
            return np.zeros(0, dtype=np.float64)
        uniq = list(dict.fromkeys(texts))
        best = dot_scores(self.embedder.embed(uniq), qvecs).max(axis=1)  # portable: rounded float64 (hublab.scores)
        by_text = dict(zip(uniq, best.tolist(), strict=True))
        return np.asarray([by_text[t] for t in texts], dtype=np.float64)

    def _cue_factor(self, c: Candidate, cues: QuestionCues) -> float:
        t = c.parsed
        if t is None:
            return 1.0
        f = 1.0
        if self.value_boost and self.is_leaf(t):
            f *= 1.0 + self.value_boost
        if self.polarity_penalty:
            val = _BOOL.get(t.object.text.strip().lower())
            if val is False and not cues.negated:
                f *= 1.0 - self.polarity_penalty
        return f

    # ---------------- ranking ----------------
    def rank(self, question: str, qvecs: np.ndarray, candidates: list[Candidate]) -> list[tuple[str, float]]:
        if not candidates:
            return []
        idx = list(range(len(candidates)))
        rankings: list[list[int]] = []
        weights: list[float] = []
        if self.weights["triple"]:
            s = self._sims([c.text for c in candidates], qvecs)
            rankings.append(sorted(idx, key=lambda i: (-float(s[i]), i)))
            weights.append(self.weights["triple"])
        if self.weights["path"]:
            flat = [(i, p) for i, c in enumerate(candidates) for p in (c.path_texts or [c.text])]
            s = self._sims([p for _, p in flat], qvecs)
            best: dict[int, float] = {}
            for (i, _), v in zip(flat, s.tolist(), strict=True):
                best[i] = max(best.get(i, -1.0), v)
            rankings.append(sorted(idx, key=lambda i: (-best[i], i)))
            weights.append(self.weights["path"])
        if self.weights["lexical"]:
            units = [Unit(str(i), " ".join([c.text, *c.path_texts[:1]])) for i, c in enumerate(candidates)]
            hits = BM25Index(units).search(question, len(units))
            ranked = [int(u.key) for u, _ in hits]
            got = set(ranked)
            rest = [i for i in idx if i not in got]
            rankings.append(ranked + rest)
            weights.append(self.weights["lexical"])
        if self.weights["retrieval"]:
            rankings.append(sorted(idx, key=lambda i: candidates[i].order))
            weights.append(self.weights["retrieval"])
        if not rankings:  # every weight 0: the retrieval order
            rankings, weights = [sorted(idx, key=lambda i: candidates[i].order)], [1.0]
        fused = rrf(rankings, key=lambda i: i, k=self.rrf_k, weights=weights)
        cues = QuestionCues.of(question)
        scored = [(i, s * self._cue_factor(candidates[i], cues)) for i, s in fused]
        scored.sort(key=lambda x: (-x[1], candidates[x[0]].order))
        return [(candidates[i].triple, float(s)) for i, s in scored]


def candidates_from_hubs(hubs, parsed: dict[str, Triple]) -> list[Candidate]:
    """The contributing hubs' triples in retrieval order (hub by hub, best path first), each once, with the
    texts of every kept path that holds it. ``hubs`` are ``HubContext`` objects."""
    out: dict[str, Candidate] = {}
    for h in hubs:
        for p in h.paths:
            for t in p.triples:
                c = out.get(t)
                if c is None:
                    pt = parsed.get(t)
                    c = out[t] = Candidate(t, triple_text(pt) if pt is not None else t, pt, len(out))
                if p.text not in c.path_texts:
                    c.path_texts.append(p.text)
    return list(out.values())
