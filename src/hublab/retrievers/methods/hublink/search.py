"""Vector-store primitives of HubLink retrieval (alg. 10-13) and hub scoring (PRUNEHUBS).

Hits of all query vectors (question + components) at all four levels are merged per path hash, keeping
the best-scoring hit; hub-restricted searches are batched into one filtered query per call.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from hublab.vectorstore.base import VectorStore

MAX_LIMIT = 16384


@dataclass
class PathHit:
    path_hash: str
    hub_root: str
    score: float
    level: str
    text: str
    subject: str = ""


@dataclass
class Hub:
    root: str
    paths: dict[str, PathHit] = field(default_factory=dict)
    score: float = 0.0

    def add(self, hit: PathHit) -> None:
        old = self.paths.get(hit.path_hash)
        if old is None or hit.score > old.score or (hit.score == old.score and (hit.level, hit.text) < (old.level,
                                                                                                      old.text)):
            self.paths[hit.path_hash] = hit

    def ranked(self) -> list[PathHit]:
        # ties broken by a stable key, never by the store's row order (which an incremental re-index changes)
        return sorted(self.paths.values(), key=lambda h: (-h.score, h.path_hash))


def _ids(ids: list[str]) -> str:
    return "[" + ", ".join(json.dumps(i) for i in ids) + "]"


class HubSearch:
    def __init__(self, store: VectorStore, collection: str, top_paths: int, diversity_penalty: float) -> None:
        self.store = store
        self.collection = collection
        self.top_paths = top_paths
        self.penalty = diversity_penalty

    def _search(self, vectors, limit: int, filter: str) -> list[PathHit]:
        res = self.store.search(self.collection, vectors, min(max(1, limit), MAX_LIMIT), filter=filter,
                                output_fields=["hub_root", "path_hash", "level", "text", "subject"])
        out = []
        for hits in res:
            for h in hits:
                f = h.fields
                out.append(PathHit(f["path_hash"], f["hub_root"], h.score, f.get("level", ""), f.get("text", ""),
                                   f.get("subject", "") or ""))
        return out

    def global_search(self, vectors, excluded: list[str]) -> dict[str, Hub]:
        """GLOBALSIMILARITYSEARCH: over-fetch 2·TopPathsToKeep per query vector outside ``excluded`` hubs."""
        flt = f"hub_root not in {_ids(excluded)}" if excluded else ""
        hubs: dict[str, Hub] = {}
        for hit in self._search(vectors, 2 * self.top_paths, flt):
            hubs.setdefault(hit.hub_root, Hub(hit.hub_root)).add(hit)
        return hubs

    def paths_for_hub(self, vectors, root: str) -> list[PathHit]:
        """GETHUBPATHSFORHUB (Alg. 9) for one hub: query ``2·TopPathsToKeep`` hits per query vector restricted to
        the hub and outside the path hashes already taken; keep each path's hit with the highest initial score
        (§4.6.2: "only the version of each path with the highest initial similarity score remains"),
        diversity-rank those paths and take them until ``TopPathsToKeep``; repeat while short and the store still
        answers. Every hub with at least ``TopPathsToKeep`` indexed paths thus gets that many."""
        taken: dict[str, PathHit] = {}
        hub_filter = f"hub_root == {json.dumps(root)}"
        while len(taken) < self.top_paths:
            flt = hub_filter + (f" and path_hash not in {_ids(list(taken))}" if taken else "")
            hits = self._search(vectors, 2 * self.top_paths, flt)
            if not hits:
                break
            batch = Hub(root)
            for h in hits:
                if h.path_hash not in taken:
                    batch.add(h)
            if not batch.paths:  # the store ignored the exclusion: nothing new will come
                break
            for h in self.diversity_rank(batch):
                if len(taken) >= self.top_paths:
                    break
                taken[h.path_hash] = h
        return list(taken.values())

    def paths_for_hubs(self, vectors, roots: list[str], hubs: dict[str, Hub]) -> None:
        """GETHUBPATHSFORHUB for each of ``roots``: the hub's paths are *replaced* by its own top paths (Alg. 13
        line 11, Alg. 15 line 7). Hubs the store has no path for are left out of ``hubs``."""
        for root in roots:
            got = self.paths_for_hub(vectors, root)
            if got:
                hubs[root] = Hub(root, {h.path_hash: h for h in got})
            else:
                hubs.pop(root, None)

    def diversity_rank(self, hub: Hub) -> list[PathHit]:
        """APPLYSUBJECTDIVERSITYRANKER: penalise repeated subjects among triple-level hits, then re-sort."""
        ranked = hub.ranked()
        if self.penalty <= 0:
            return ranked
        counts: dict[str, int] = {}
        adjusted = []
        for h in ranked:
            score = h.score
            if h.level == "triple" and h.subject:
                score -= self.penalty * counts.get(h.subject, 0)
                counts[h.subject] = counts.get(h.subject, 0) + 1
            adjusted.append(PathHit(h.path_hash, h.hub_root, score, h.level, h.text, h.subject))
        return sorted(adjusted, key=lambda h: (-h.score, h.path_hash))

    def prune_paths(self, hub: Hub) -> Hub:
        kept = self.diversity_rank(hub)[: self.top_paths]
        out = Hub(hub.root, {h.path_hash: h for h in kept})
        return out


def hub_score(scores: list[float], alpha: float) -> float:
    """Exponentially weighted mean Σ wᵢsᵢ / Σ wᵢ with wᵢ = exp(α·sᵢ) (α = 0: plain mean)."""
    if not scores:
        return float("-inf")
    weights = [math.exp(alpha * s) for s in scores]
    return sum(w * s for w, s in zip(weights, scores, strict=True)) / sum(weights)


def prune_hubs(hubs: dict[str, Hub], alpha: float, keep: int) -> list[Hub]:
    for h in hubs.values():
        h.score = hub_score([p.score for p in h.paths.values()], alpha)
    return sorted(hubs.values(), key=lambda h: (-h.score, h.root))[:keep]
